package awsconfig

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/runnerd/lambda-runner/infra/secrets/smtest"
)

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) { v, ok := env[name]; return v, ok }
}

var keys = map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIDTEST", "AWS_SECRET_ACCESS_KEY": "test-secret"}

func with(extra map[string]string) map[string]string {
	env := map[string]string{}
	for k, v := range keys {
		env[k] = v
	}
	for k, v := range extra {
		if v == "" {
			delete(env, k)
		} else {
			env[k] = v
		}
	}
	return env
}

// TestFromEnvironmentCallsSecretsManager points the real Secrets Manager
// client, configured from the environment alone, at a local server that
// speaks its wire format: region, keys, the service's endpoint variable
// and the request's signature all come through.
func TestFromEnvironmentCallsSecretsManager(t *testing.T) {
	sm := smtest.New(t)
	sm.Put("tokens", "the-secret")
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"service endpoint", with(map[string]string{"AWS_ENDPOINT_URL_SECRETS_MANAGER": sm.URL, "AWS_ENDPOINT_URL": "http://127.0.0.1:1"})},
		{"global endpoint", with(map[string]string{"AWS_ENDPOINT_URL": sm.URL})},
		{"region from AWS_DEFAULT_REGION, session token", with(map[string]string{"AWS_REGION": "", "AWS_DEFAULT_REGION": "us-east-2", "AWS_SESSION_TOKEN": "tok", "AWS_ENDPOINT_URL_SECRETS_MANAGER": sm.URL})},
		{"retries", with(map[string]string{"AWS_MAX_ATTEMPTS": "2", "AWS_RETRY_MODE": "adaptive", "AWS_ENDPOINT_URL_SECRETS_MANAGER": sm.URL})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := FromEnvironment(lookupIn(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			out, err := secretsmanager.NewFromConfig(cfg).GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: aws.String("tokens")})
			if err != nil {
				t.Fatalf("GetSecretValue: %v", err)
			}
			if aws.ToString(out.SecretString) != "the-secret" {
				t.Errorf("secret %q", aws.ToString(out.SecretString))
			}
		})
	}
	if n := sm.Requests("GetSecretValue"); n != 4 {
		t.Errorf("%d requests reached the server, want 4", n)
	}
}

// TestFromEnvironmentIgnoresEndpoints: AWS_IGNORE_CONFIGURED_ENDPOINT_URLS
// turns the endpoint variables off, as in the default chain.
func TestFromEnvironmentIgnoresEndpoints(t *testing.T) {
	env := with(map[string]string{"AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_ENDPOINT_URL_SECRETS_MANAGER": "http://127.0.0.1:1", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "TRUE"})
	cfg, err := FromEnvironment(lookupIn(env))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BaseEndpoint != nil {
		t.Errorf("BaseEndpoint %q, want none", *cfg.BaseEndpoint)
	}
	src := cfg.ConfigSources[0].(envSource)
	if v, found, _ := src.GetServiceBaseEndpoint(context.Background(), "Secrets Manager"); found {
		t.Errorf("service endpoint %q, want none", v)
	}
}

func TestFromEnvironmentEndpointFlags(t *testing.T) {
	cfg, err := FromEnvironment(lookupIn(with(map[string]string{"AWS_USE_FIPS_ENDPOINT": "true", "AWS_USE_DUALSTACK_ENDPOINT": "False"})))
	if err != nil {
		t.Fatal(err)
	}
	src := cfg.ConfigSources[0].(envSource)
	if v, found, err := src.GetUseFIPSEndpoint(context.Background()); !found || err != nil || v != aws.FIPSEndpointStateEnabled {
		t.Errorf("FIPS %v %v %v", v, found, err)
	}
	if v, found, err := src.GetUseDualStackEndpoint(context.Background()); !found || err != nil || v != aws.DualStackEndpointStateDisabled {
		t.Errorf("dual stack %v %v %v", v, found, err)
	}
	if v, _, _ := src.GetServiceBaseEndpoint(context.Background(), "Bedrock Runtime"); v != "" {
		t.Errorf("endpoint %q with none set", v)
	}
	env := with(map[string]string{"AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "http://bedrock.test"})
	cfg, _ = FromEnvironment(lookupIn(env))
	if v, found, _ := cfg.ConfigSources[0].(envSource).GetServiceBaseEndpoint(context.Background(), "Bedrock Runtime"); !found || v != "http://bedrock.test" {
		t.Errorf("Bedrock Runtime endpoint %q %v", v, found)
	}
}

// TestFromEnvironmentErrors: each bad or unusable setting is an error
// naming its variable, and no error repeats a secret value.
func TestFromEnvironmentErrors(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{with(map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}), "no AWS credentials"},
		{with(map[string]string{"AWS_SECRET_ACCESS_KEY": ""}), "AWS_ACCESS_KEY_ID is set without AWS_SECRET_ACCESS_KEY"},
		{with(map[string]string{"AWS_ACCESS_KEY_ID": ""}), "AWS_SECRET_ACCESS_KEY is set without AWS_ACCESS_KEY_ID"},
		{with(map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_PROFILE": "dev"}), "AWS_PROFILE is set"},
		{with(map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "/t"}), "AWS_WEB_IDENTITY_TOKEN_FILE is set"},
		{with(map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://creds.example.com/c"}), "AWS_CONTAINER_CREDENTIALS_FULL_URI: a plain-HTTP endpoint"},
		{with(map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://10.0.0.1/c"}), "AWS_CONTAINER_CREDENTIALS_FULL_URI: a plain-HTTP endpoint"},
		{with(map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "file:///etc/passwd"}), "AWS_CONTAINER_CREDENTIALS_FULL_URI: want an http or https URL"},
		{with(map[string]string{"AWS_MAX_ATTEMPTS": "0"}), "AWS_MAX_ATTEMPTS"},
		{with(map[string]string{"AWS_MAX_ATTEMPTS": "many"}), "AWS_MAX_ATTEMPTS"},
		{with(map[string]string{"AWS_RETRY_MODE": "sometimes"}), "AWS_RETRY_MODE"},
		{with(map[string]string{"AWS_USE_FIPS_ENDPOINT": "yes"}), "AWS_USE_FIPS_ENDPOINT"},
		{with(map[string]string{"AWS_USE_DUALSTACK_ENDPOINT": "1"}), "AWS_USE_DUALSTACK_ENDPOINT"},
		{with(map[string]string{"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "maybe"}), "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"},
		{with(map[string]string{"AWS_CA_BUNDLE": filepath.Join(t.TempDir(), "missing.pem")}), "AWS_CA_BUNDLE"},
		{with(map[string]string{"AWS_CA_BUNDLE": writeFile(t, "not a certificate")}), "AWS_CA_BUNDLE"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := FromEnvironment(lookupIn(tc.env))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "test-secret") || strings.Contains(err.Error(), "AKIDTEST") {
				t.Errorf("error repeats a credential: %v", err)
			}
		})
	}
}

// TestFromEnvironmentCABundle: with AWS_CA_BUNDLE the client trusts the
// bundle's certificates (a TLS server of its own), and not the others.
func TestFromEnvironmentCABundle(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	srv.StartTLS()
	defer srv.Close()
	bundle := writeFile(t, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})))
	cfg, err := FromEnvironment(lookupIn(with(map[string]string{"AWS_CA_BUNDLE": bundle})))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := cfg.HTTPClient.Do(req)
	if err != nil {
		t.Fatalf("bundle's server: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Errorf("status %d", resp.StatusCode)
	}
	// Without the bundle the SDK's client does not trust the server.
	plain, err := FromEnvironment(lookupIn(keys))
	if err != nil {
		t.Fatal(err)
	}
	if plain.HTTPClient != nil {
		t.Fatal("an HTTP client without AWS_CA_BUNDLE")
	}
	req, _ = http.NewRequest(http.MethodGet, srv.URL, nil)
	if resp, err := awshttp.NewBuildableClient().Do(req); err == nil {
		resp.Body.Close()
		t.Error("the test server was trusted without the bundle")
	}
}

func writeFile(t *testing.T, content string) string {
	path := filepath.Join(t.TempDir(), "f.pem")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFromEnvironmentContainerCredentials: without access keys, the
// container credentials endpoint is asked, with its authorization token
// (given or read from a file on each request), and its answer is cached.
func TestFromEnvironmentContainerCredentials(t *testing.T) {
	var (
		mu     sync.Mutex
		tokens []string
	)
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tokens = append(tokens, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"AccessKeyId":"AKIDCONTAINER","SecretAccessKey":"container-secret","Token":"container-session","Expiration":"`+
			time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`"}`)
	}))
	defer agent.Close()
	tokenFile := writeFile(t, "token-from-file")
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"full URI, token", map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": agent.URL + "/creds", "AWS_CONTAINER_AUTHORIZATION_TOKEN": "tok"}, "/creds tok"},
		{"token file wins", map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": agent.URL + "/creds", "AWS_CONTAINER_AUTHORIZATION_TOKEN": "tok", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": tokenFile}, "/creds token-from-file"},
		{"localhost", map[string]string{"AWS_CONTAINER_CREDENTIALS_FULL_URI": strings.Replace(agent.URL, "127.0.0.1", "localhost", 1) + "/v2"}, "/v2 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			tokens = nil
			mu.Unlock()
			tc.env["AWS_ACCESS_KEY_ID"], tc.env["AWS_SECRET_ACCESS_KEY"] = "", ""
			cfg, err := FromEnvironment(lookupIn(with(tc.env)))
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				creds, err := cfg.Credentials.Retrieve(context.Background())
				if err != nil || creds.AccessKeyID != "AKIDCONTAINER" || creds.SessionToken != "container-session" {
					t.Fatalf("credentials %q, %v", creds.AccessKeyID, err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(tokens) != 1 || tokens[0] != tc.want {
				t.Errorf("agent asked %q, want once with %q", tokens, tc.want)
			}
		})
	}
}
