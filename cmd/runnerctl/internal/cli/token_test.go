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
