package cli_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/rotate"
	"github.com/runnerd/lambda-runner/infra/secrets/smtest"
)

// token rotate and show through the command line, with the SDK's default
// configuration pointed at a local Secrets Manager by the environment.
func TestTokenCommands(t *testing.T) {
	sm := smtest.New(t)
	sm.Put("runner-tokens", `{"tokens":["tok-old"]}`)
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_SECRETS_MANAGER": sm.URL,
		"AWS_ACCESS_KEY_ID":                "AKIDCLITEST",
		"AWS_SECRET_ACCESS_KEY":            "cli-test-secret-key",
		"AWS_REGION":                       "eu-west-1",
		"AWS_CONFIG_FILE":                  filepath.Join(dir, "none"),
		"AWS_SHARED_CREDENTIALS_FILE":      filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_DISABLED":        "true",
	} {
		t.Setenv(k, v)
	}
	getenv := func(k string) string {
		if k == "RUNNER_TOKEN_SECRET_ID" {
			return "runner-tokens"
		}
		return ""
	}
	res := runPipe(t, getenv, "", "token", "rotate")
	tok := strings.TrimSpace(res.out)
	if res.code != 0 || !strings.HasPrefix(tok, "rt_") || strings.Count(res.out, "\n") != 1 {
		t.Fatalf("rotate: exit %d, out %q, err %s", res.code, res.out, res.err)
	}
	if strings.Contains(res.err, tok) {
		t.Error("the token was printed twice")
	}
	res = runPipe(t, getenv, "", "token", "show")
	if res.code != 0 || !strings.Contains(res.out, "AWSCURRENT") || !strings.Contains(res.out, rotate.Fingerprint(tok)) ||
		!strings.Contains(res.out, rotate.Fingerprint("tok-old")) || strings.Contains(res.out, tok) || strings.Contains(res.out, "tok-old") {
		t.Errorf("show: exit %d\n%s%s", res.code, res.out, res.err)
	}
	res = runPipe(t, func(string) string { return "" }, "", "token", "rotate")
	if res.code != 2 || !strings.Contains(res.err, "RUNNER_TOKEN_SECRET_ID") {
		t.Errorf("no secret id: exit %d %s", res.code, res.err)
	}
}

// Without a region or credentials, token says so plainly and exits 4; the
// SDK's own warnings (instance metadata) never show.
func TestTokenWithoutAWS(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		env  map[string]string
	}{
		{"no region", map[string]string{"AWS_ACCESS_KEY_ID": "AKIDCLITEST", "AWS_SECRET_ACCESS_KEY": "cli-test-secret-key"}},
		{"no credentials", map[string]string{"AWS_REGION": "eu-west-1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
				"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
				t.Setenv(k, tt.env[k])
			}
			t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
			t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
			res := runPipe(t, func(k string) string {
				if k == "RUNNER_TOKEN_SECRET_ID" {
					return "runner-tokens"
				}
				return ""
			}, "", "token", "rotate", "--name", "server-a")
			if res.code != 4 || !strings.Contains(res.err, "no AWS credentials or region found: set AWS_REGION") ||
				strings.Contains(res.err, "IMDS") || strings.Contains(res.err, "operation error") || res.out != "" {
				t.Errorf("exit %d, out %q, err %q", res.code, res.out, res.err)
			}
		})
	}
}

// token rotate --name through the command line keeps the other server's
// token; without --name a named secret is refused with exit 2.
func TestTokenRotateNamed(t *testing.T) {
	sm := smtest.New(t)
	sm.Put("runner-tokens", `{"tokens":{"server-b":"tok-b"}}`)
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_SECRETS_MANAGER": sm.URL, "AWS_ACCESS_KEY_ID": "AKIDCLITEST", "AWS_SECRET_ACCESS_KEY": "cli-test-secret-key",
		"AWS_REGION": "eu-west-1", "AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
	none := func(string) string { return "" }
	res := runPipe(t, none, "", "token", "rotate", "--secret-id", "runner-tokens")
	if res.code != 2 || !strings.Contains(res.err, "server-b") || !strings.Contains(res.err, "--name") {
		t.Errorf("rotate without --name: exit %d, err %q", res.code, res.err)
	}
	res = runPipe(t, none, "", "token", "rotate", "--secret-id", "runner-tokens", "--name", "server-a")
	tok := strings.TrimSpace(res.out)
	if res.code != 0 || !strings.HasPrefix(tok, "rt_") || strings.Contains(res.err, tok) {
		t.Fatalf("rotate --name: exit %d, out %q, err %q", res.code, res.out, res.err)
	}
	res = runPipe(t, none, "", "token", "show", "--secret-id", "runner-tokens")
	if res.code != 0 || !strings.Contains(res.out, "server-a "+rotate.Fingerprint(tok)) || !strings.Contains(res.out, "server-b "+rotate.Fingerprint("tok-b")) {
		t.Errorf("show: exit %d\n%s%s", res.code, res.out, res.err)
	}
}
