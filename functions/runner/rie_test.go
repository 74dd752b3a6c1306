//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"go/build"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/infra/secrets/smtest"
)

// These tests run the built bootstrap under the Lambda runtime interface
// emulator (aws-lambda-rie), the one `sam local` runs, and invoke it the
// way Lambda does: POST /2015-03-31/functions/function/invocations with
// the event. The emulator collects the whole response before answering,
// so a streamed function URL response arrives as its wire form: the
// prelude JSON {statusCode, headers, cookies}, eight NUL bytes, the body.
// That events leave as they happen is shown against a runtime API that
// timestamps what arrives (runtimeapi_test.go).

// codeBody is an execution of one code node, whose output is
// {"c":[10,20,30]}.
const codeBody = `{"version":1,"input":{"xs":[3,1,2]},"workflow":{"nodes":[{"id":"c","type":"code",` +
	`"with":{"input":"${{ input.xs }}","code":"return input.toSorted().map(x => x * 10)"}}]}}`

// rieBinary finds aws-lambda-rie on PATH or in GOPATH/bin (`make tools`
// installs it there). Without it the tests skip, except under CI, where a
// missing emulator is a failure rather than a silent gap.
func rieBinary(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		return p
	}
	if p := filepath.Join(build.Default.GOPATH, "bin", "aws-lambda-rie"); isExecutable(p) {
		return p
	}
	msg := "aws-lambda-rie not found on PATH or in GOPATH/bin; install it with `make tools`"
	if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
		t.Fatal(msg + " (CI is set: the emulator tests must run)")
	}
	t.Skip(msg)
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// rie is one emulator running the bootstrap.
type rie struct {
	url  string // the invoke endpoint
	out  *syncBuffer
	stop func()
}

// startRIE starts the emulator on free 127.0.0.1 ports (its invoke API and
// the runtime API it gives the bootstrap) with env, and waits until it
// accepts connections. It starts the bootstrap itself, on the first
// invocation, as Lambda does on a cold start.
func startRIE(t testing.TB, env map[string]string) *rie {
	t.Helper()
	return startRIEWith(t, env, bootstrapPath(t))
}

// startRIEWith is startRIE with the bootstrap binary boot.
func startRIEWith(t testing.TB, env map[string]string, boot string) *rie {
	t.Helper()
	bin := rieBinary(t)
	addr, api := freeAddr(t), freeAddr(t)
	out, stop := startProcess(t, env, bin,
		"--runtime-interface-emulator-address", addr, "--runtime-api-address", api, boot)
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(end) {
			t.Fatalf("aws-lambda-rie does not listen on %s: %v\n%s", addr, err, out.String())
		}
	}
	return &rie{url: "http://" + addr + "/2015-03-31/functions/function/invocations", out: out, stop: stop}
}

var rieClient = &http.Client{Timeout: 30 * time.Second}

// invoke sends one event with requestID as the Lambda request id and
// returns the emulator's answer: the function's whole response payload.
func (r *rie) invoke(t testing.TB, event any, requestID string) []byte {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.url, bytes.NewReader(mustJSON(t, event)))
	if err != nil {
		t.Fatal(err)
	}
	if requestID != "" {
		req.Header.Set("X-Amzn-RequestId", requestID)
	}
	resp, err := rieClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("emulator answered %d, %v: %s", resp.StatusCode, err, body)
	}
	return body
}

// streamed invokes a function URL event and splits the streamed response.
func (r *rie) streamed(t testing.TB, event any, requestID string) (prelude, []byte) {
	t.Helper()
	return parseStreamed(t, r.invoke(t, event, requestID))
}

// buffered invokes an API Gateway event; the answer is the proxy response
// JSON, never the streaming form.
func (r *rie) buffered(t testing.TB, event any) (status int, headers map[string]string, body string) {
	t.Helper()
	raw := r.invoke(t, event, "")
	if bytes.Contains(raw, make([]byte, 8)) {
		t.Fatalf("buffered event answered in the streaming form: %q", raw)
	}
	var resp struct {
		StatusCode      int               `json:"statusCode"`
		Headers         map[string]string `json:"headers"`
		Body            string            `json:"body"`
		IsBase64Encoded bool              `json:"isBase64Encoded"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil || resp.IsBase64Encoded {
		t.Fatalf("proxy response %q: %v (base64 %v)", raw, err, resp.IsBase64Encoded)
	}
	return resp.StatusCode, resp.Headers, resp.Body
}

func readEvent(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../../events", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func helloBody(t testing.TB) string { return string(readEvent(t, "hello-execution.json")) }

// errorCode decodes a protocol error body.
func errorCode(t testing.TB, body []byte) string {
	t.Helper()
	var e struct {
		Version int `json:"version"`
		Error   struct{ Code, Message string }
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Version != 1 || e.Error.Message == "" {
		t.Errorf("error body %q: %v", body, err)
	}
	return e.Error.Code
}

func TestRIE(t *testing.T) {
	r := startRIE(t, lambdaEnv(t, nil))

	t.Run("capabilities reflect the function's configuration", func(t *testing.T) {
		p, body := r.streamed(t, functionURLEvent("GET", "/v1/capabilities", testToken, ""), "")
		if p.StatusCode != 200 || p.Headers["Content-Type"] != "application/json" {
			t.Fatalf("prelude %+v", p)
		}
		var c struct {
			Version     int
			Constraints struct {
				MaxDurationMs int64 `json:"maxDurationMs"`
				MemoryMb      int   `json:"memoryMb"`
			}
		}
		if err := json.Unmarshal(body, &c); err != nil {
			t.Fatal(err)
		}
		// 60 s of RUNNER_TIMEOUT_SECONDS less the default 500 ms reserve.
		if c.Version != 1 || c.Constraints.MemoryMb != 256 || c.Constraints.MaxDurationMs != 59_500 {
			t.Errorf("version %d, memoryMb %d, maxDurationMs %d; want 1, 256, 59500",
				c.Version, c.Constraints.MemoryMb, c.Constraints.MaxDurationMs)
		}
	})

	t.Run("the shipped sam local events", func(t *testing.T) {
		// events/*.json carry "dev-token"; this emulator knows only
		// testToken, so the valid ones are re-signed.
		for _, tt := range []struct {
			file   string
			token  string
			status int
		}{
			{"capabilities.json", testToken, 200},
			{"execution.json", testToken, 200},
			{"execution-bad-token.json", "", 401},
		} {
			var ev map[string]any
			if err := json.Unmarshal(readEvent(t, tt.file), &ev); err != nil {
				t.Fatal(err)
			}
			if tt.token != "" {
				ev["headers"].(map[string]any)["authorization"] = "Bearer " + tt.token
			}
			p, body := r.streamed(t, ev, "")
			if p.StatusCode != tt.status {
				t.Errorf("%s: status %d, want %d: %s", tt.file, p.StatusCode, tt.status, body)
			}
		}
	})

	t.Run("a base URL with its trailing slash", func(t *testing.T) {
		p, body := r.streamed(t, functionURLEvent("GET", "//v1/capabilities", testToken, ""), "")
		if p.StatusCode != 200 {
			t.Errorf("GET //v1/capabilities: %d %s", p.StatusCode, body)
		}
	})

	var executionID string
	t.Run("an execution streams NDJSON", func(t *testing.T) {
		p, body := r.streamed(t, functionURLEvent("POST", "/v1/executions", testToken, helloBody(t)), "rie-exec-1")
		if p.StatusCode != 200 || p.Headers["Content-Type"] != "application/x-ndjson" {
			t.Fatalf("prelude %+v", p)
		}
		evs := checkStream(t, body)
		last := evs[len(evs)-1]
		out, _ := json.Marshal(last["output"])
		if last["type"] != "result" || last["status"] != "completed" || string(out) != `{"greet":"Hello, Ada!"}` {
			t.Errorf("terminal event %v", last)
		}
		executionID, _ = evs[0]["executionId"].(string)
	})

	t.Run("a code node runs in the codeworker", func(t *testing.T) {
		// Under the emulator as under Lambda: the worker is the codeworker
		// executable (here RUNNER_CODE_WORKER; TestOpsVersionWithoutGit
		// runs the package's layout, codeworker beside bootstrap), started
		// on the first code node.
		_, stream := r.streamed(t, functionURLEvent("POST", "/v1/executions", testToken, codeBody), "rie-code-1")
		evs := checkStream(t, stream)
		last := evs[len(evs)-1]
		out, _ := json.Marshal(last["output"])
		if last["type"] != "result" || string(out) != `{"c":[10,20,30]}` {
			t.Errorf("terminal event %v", last)
		}
	})

	t.Run("logs and metrics name the request and the execution", func(t *testing.T) {
		if executionID == "" {
			t.Skip("no execution ran")
		}
		sameRun := func(l map[string]any) bool {
			return l["executionId"] == executionID && l["requestId"] == "rie-exec-1"
		}
		r.out.waitFor(t, "log line of the execution", func(l map[string]any) bool {
			return l["msg"] == "execution finished" && l["level"] == "INFO" && sameRun(l)
		})
		m := r.out.waitFor(t, "metric line of the execution", func(l map[string]any) bool { return l["_aws"] != nil && sameRun(l) })
		var meta struct {
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
			}
		}
		raw, _ := json.Marshal(m["_aws"])
		json.Unmarshal(raw, &meta)
		if len(meta.CloudWatchMetrics) != 1 || meta.CloudWatchMetrics[0].Namespace != "WorkflowRunner" ||
			m["Status"] != "completed" || m["Nodes"] != float64(1) {
			t.Errorf("metric line %v", m)
		}
		if strings.Contains(r.out.String(), testToken) {
			t.Error("a token reached the function's output")
		}
	})

	t.Run("authentication failures", func(t *testing.T) {
		for _, tt := range []struct {
			name, method, path, auth string
		}{
			{"bad token, capabilities", "GET", "/v1/capabilities", "Bearer not-the-token"},
			{"bad token, executions", "POST", "/v1/executions", "Bearer not-the-token"},
			{"missing token, capabilities", "GET", "/v1/capabilities", ""},
			{"missing token, executions", "POST", "/v1/executions", ""},
			{"not bearer", "GET", "/v1/capabilities", "Basic " + testToken},
		} {
			t.Run(tt.name, func(t *testing.T) {
				ev := functionURLEvent(tt.method, tt.path, "", helloBody(t))
				if tt.auth != "" {
					ev["headers"].(map[string]any)["authorization"] = tt.auth
				}
				p, body := r.streamed(t, ev, "")
				if p.StatusCode != 401 || !strings.HasPrefix(p.Headers["Www-Authenticate"], "Bearer") ||
					p.Headers["Content-Type"] != "application/json" {
					t.Errorf("prelude %+v, want 401 with WWW-Authenticate: Bearer", p)
				}
				if code := errorCode(t, body); code != "UNAUTHORIZED" {
					t.Errorf("code %q, want UNAUTHORIZED", code)
				}
			})
		}
	})

	t.Run("an invalid execution is refused before acceptance", func(t *testing.T) {
		p, body := r.streamed(t, functionURLEvent("POST", "/v1/executions", testToken, `{"version":2,"workflow":{}}`), "")
		if p.StatusCode != 400 || p.Headers["Content-Type"] != "application/json" {
			t.Errorf("prelude %+v", p)
		}
		if code := errorCode(t, body); code != "INVALID_EXECUTION" {
			t.Errorf("code %q, want INVALID_EXECUTION", code)
		}
	})

	t.Run("API Gateway events are answered buffered", func(t *testing.T) {
		for _, tt := range []struct {
			name  string
			event map[string]any
		}{
			{"HTTP API v2", httpAPIEvent("POST", "/v1/executions", testToken, helloBody(t), "1234567890.execute-api.eu-west-1.amazonaws.com")},
			{"sam local start-api", httpAPIEvent("POST", "/v1/executions", testToken, helloBody(t), "")},
			{"REST API v1", restEvent("POST", "/v1/executions", testToken, helloBody(t))},
		} {
			t.Run(tt.name, func(t *testing.T) {
				status, headers, body := r.buffered(t, tt.event)
				if status != 200 || headers["Content-Type"] != "application/x-ndjson" {
					t.Fatalf("status %d, headers %v", status, headers)
				}
				evs := checkStream(t, []byte(body))
				if last := evs[len(evs)-1]; last["status"] != "completed" {
					t.Errorf("terminal event %v", last)
				}
			})
		}
		status, headers, body := r.buffered(t, httpAPIEvent("GET", "/v1/capabilities", "wrong", "", ""))
		if status != 401 || !strings.HasPrefix(headers["Www-Authenticate"], "Bearer") || errorCode(t, []byte(body)) != "UNAUTHORIZED" {
			t.Errorf("bad token over HTTP API: %d %v %s", status, headers, body)
		}
	})
}

// Tokens from Secrets Manager, as deployed: the bootstrap finds the secret
// through RUNNER_TOKEN_SECRET_ID and the endpoint through
// AWS_ENDPOINT_URL_SECRETS_MANAGER, and accepts both the current and the
// previous version's tokens.
func TestRIESecretsManager(t *testing.T) {
	// Two puts: the second is AWSCURRENT, the first AWSPREVIOUS.
	sm := smtest.New(t)
	sm.Put("runner-tokens", "sm-previous-token")
	sm.Put("runner-tokens", `{"tokens":["sm-current-token"]}`)
	r := startRIE(t, lambdaEnv(t, map[string]string{
		"RUNNER_TOKENS":                    "",
		"RUNNER_TOKEN_SECRET_ID":           "runner-tokens",
		"AWS_ENDPOINT_URL_SECRETS_MANAGER": sm.URL,
		"AWS_ACCESS_KEY_ID":                "AKIDRUNNERTEST",
		"AWS_SECRET_ACCESS_KEY":            "runner-test-secret-key",
	}))
	for _, tt := range []struct {
		name, token string
		status      int
	}{
		{"current version", "sm-current-token", 200},
		{"previous version", "sm-previous-token", 200},
		{"unknown token", "not-a-token", 401},
		{"static token is not accepted", testToken, 401},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, body := r.streamed(t, functionURLEvent("GET", "/v1/capabilities", tt.token, ""), "")
			if p.StatusCode != tt.status {
				t.Errorf("status %d, want %d: %s", p.StatusCode, tt.status, body)
			}
		})
	}
	if sm.Requests("GetSecretValue") == 0 {
		t.Error("Secrets Manager was never asked")
	}
	for _, secret := range []string{"sm-current-token", "sm-previous-token", "runner-test-secret-key"} {
		if strings.Contains(r.out.String(), secret) {
			t.Errorf("%s reached the function's output", secret)
		}
	}
}
