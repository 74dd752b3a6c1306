package cli_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/cmd/runnerctl/internal/cli"
	"github.com/runnerd/lambda-runner/functions"
)

// escapes is text a hostile runner (or a workflow key the runner quotes)
// would have drive the terminal: a title, a screen clear, a hyperlink.
const escapes = `\u001b]0;owned\u0007\u001b[2J\u001b]8;;http://evil.example/\u0007`

// hostileRunner answers every request with status and body.
func hostileRunner(t *testing.T, status int, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func noControls(t *testing.T, what, s string) {
	t.Helper()
	for _, bad := range []string{"\x1b", "\x07"} {
		if strings.Contains(s, bad) {
			t.Errorf("%s got %q from the runner:\n%q", what, bad, s)
		}
	}
}

// The runner's refusals, capabilities and the problems validate finds
// reach the terminal without their control characters, as the progress
// board's text already did.
func TestHostileCLIRefusalsAndCapabilitiesAreCleaned(t *testing.T) {
	tests := []struct {
		name, body string
		status     int
		args       []string
		want       string
	}{
		{"500 error", `{"version":1,"error":{"code":"X` + escapes + `","message":"m` + escapes + `"}}`, 500,
			[]string{"run", "-"}, "runner answered 500 X]0;owned[2J]8;;http://evil.example/: m"},
		{"400 details", `{"version":1,"error":{"code":"INVALID_EXECUTION","message":"m","details":[{"path":"p` + escapes + `","message":"d` + escapes + `"}]}}`, 400,
			[]string{"run", "-"}, "  p]0;owned[2J]8;;http://evil.example/: d]0;owned"},
		{"413 without details", `{"version":1,"error":{"code":"C` + escapes + `","message":"m` + escapes + `"}}`, 413,
			[]string{"run", "-"}, "invalid execution (413 C]0;owned"},
		{"capabilities", `{"version":1,"protocolVersions":[1],"runner":{"name":"n` + escapes + `","version":"v` + escapes + `"},"nodeTypes":["set","t` + escapes + `"],"runtime":{"consent":"c` + escapes + `"},"streaming":{"contentType":"s` + escapes + `"}}`, 200,
			[]string{"caps"}, "n]0;owned[2J]8;;http://evil.example/ v]0;owned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := hostileRunner(t, tt.status, tt.body)
			res := runPipe(t, env(srv.URL, testToken), `{"nodes":[]}`, tt.args...)
			noControls(t, "stdout", res.out)
			noControls(t, "stderr", res.err)
			if !strings.Contains(res.out+res.err, tt.want) {
				t.Errorf("output lacks %q:\n%s%s", tt.want, res.out, res.err)
			}
		})
	}
}

// A workflow's own keys are in the paths of its problems: an honest
// runner's 400 and validate both quote them.
func TestHostileCLIWorkflowKeysInPathsAreCleaned(t *testing.T) {
	doc := `{"nodes":[{"id":"a","type":"set","with":{"value":{"k` + escapes + `":"${{ nodes.zz.output }}"}}}]}`
	res := runPipe(t, env("", ""), "", "validate", writeFile(t, "k.json", doc))
	noControls(t, "validate", res.out+res.err)
	if res.code != 1 || !strings.Contains(res.out, "nodes[0].with.value.k]0;owned") {
		t.Errorf("exit %d, output %q", res.code, res.out)
	}
	srv := newRunner(t)
	res = runPipe(t, env(srv.URL, testToken), doc, "run", "-")
	noControls(t, "run", res.out+res.err)
	if res.code != 2 || !strings.Contains(res.err, "workflow.nodes[0].with.value.k]0;owned") {
		t.Errorf("exit %d, stderr %q", res.code, res.err)
	}
}

// A capabilities document is read to a bound and within a time: a runner
// that never ends it, or drips it, does not hold runnerctl.
func TestHostileCLICapabilitiesBounded(t *testing.T) {
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"runner":{"name":"`)
		chunk := strings.Repeat("a", 64<<10)
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(endless.Close)
	start := time.Now()
	res := runPipe(t, env(endless.URL, testToken), "", "caps")
	if res.code != 4 || !strings.Contains(res.err, "capabilities longer than") {
		t.Errorf("endless: exit %d, stderr %q", res.code, res.err)
	}
	drip := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"runner":{"name":"`)
		for r.Context().Err() == nil {
			io.WriteString(w, "a")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}))
	t.Cleanup(drip.Close)
	res = runPipe(t, env(drip.URL, testToken), "", "caps", "--timeout", "1s")
	if res.code != 4 || !strings.Contains(res.err, "deadline exceeded") {
		t.Errorf("drip: exit %d, stderr %q", res.code, res.err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
}

// The board keeps up with a large map: it drew itself for every event, all
// its lines each time, and a 5,000-item map took 30 s to follow (0.1 s
// with --json) while the runner's stream waited.
func TestRunBoardKeepsUpWithALargeMap(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"version":1,"type":"accepted","executionId":"x","at":"t"}` + "\n")
	const items = 5000
	for i := range items {
		fmt.Fprintf(&b, `{"version":1,"type":"node.started","executionId":"x","at":"t","nodeId":"each[%d].a","nodeType":"set","attempt":1}`+"\n", i)
		fmt.Fprintf(&b, `{"version":1,"type":"node.completed","executionId":"x","at":"t","nodeId":"each[%d].a","nodeType":"set","attempt":1,"durationMs":1}`+"\n", i)
	}
	b.WriteString(`{"version":1,"type":"result","executionId":"x","at":"t","status":"completed","durationMs":1,"output":"done"}` + "\n")
	srv := cannedRunner(t, b.String())
	start := time.Now()
	res := runPTY(t, env(srv.URL, testToken), "run", writeFile(t, "w.json", `{"nodes":[]}`))
	took := time.Since(start)
	if res.code != 0 || !strings.Contains(res.out, "[4999]") || !strings.Contains(res.out, `"done"`) {
		t.Errorf("exit %d, the last item or the output missing:\n%.2000q", res.code, res.out)
	}
	if took > 8*time.Second {
		t.Errorf("following %d items took %v", items, took)
	}
}

// validate reads no more than a runner would: a document past the default
// request limit is refused unread (a 10 MB one nested deep took 4 to 13 s
// and up to 6.6 GB), from a file as from standard input.
func TestValidateRefusesWhatARunnerWouldNotRead(t *testing.T) {
	if cli.MaxValidateBytes != functions.DefaultMaxRequestBytes {
		t.Errorf("MaxValidateBytes %d, the runner's default request limit %d", cli.MaxValidateBytes, functions.DefaultMaxRequestBytes)
	}
	deep := `{"nodes":` + strings.Repeat("[", 10<<20)
	start := time.Now()
	res := runPipe(t, env("", ""), "", "validate", writeFile(t, "deep.json", deep))
	if res.code != 1 || !strings.Contains(res.out, "larger than 6291456 bytes") {
		t.Errorf("file: exit %d, %q", res.code, res.out)
	}
	res = runPipe(t, env("", ""), deep, "validate", "-")
	if res.code != 1 || !strings.Contains(res.out, "-: larger than 6291456 bytes") {
		t.Errorf("stdin: exit %d, %q", res.code, res.out)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v", d)
	}
}

// A consent for a tool named "*" is a pattern as a grant: the outcome says
// so under it.
func TestRunWarnsOfAPatternAwaitingConsent(t *testing.T) {
	srv := cannedRunner(t, `{"version":1,"type":"accepted","executionId":"x","at":"t"}`+"\n"+
		`{"version":1,"type":"result","executionId":"x","at":"t","status":"suspended","output":null,"durationMs":0,"suspended":[{"nodeId":"look","action":"tool.call","resource":"demo/*"},{"nodeId":"ok","action":"tool.call","resource":"demo/echo"}]}`+"\n")
	res := runPTY(t, env(srv.URL, testToken), "run", writeFile(t, "w.json", `{"nodes":[]}`))
	look, warn, ok := strings.Index(res.out, "look: tool.call demo/*"), strings.Index(res.out, "warning: this resource is a pattern"), strings.Index(res.out, "ok: tool.call demo/echo")
	if res.code != 3 || strings.Count(res.out, "warning: this resource is a pattern") != 1 || look < 0 || !(look < warn && warn < ok) {
		t.Errorf("exit %d:\n%s", res.code, res.out)
	}
}

// A completed run's output reaches the terminal without C1 controls, which
// JSON does not escape (U+009B is a CSI to terminals that read C1).
func TestRunOutputIsCleaned(t *testing.T) {
	srv := cannedRunner(t, `{"version":1,"type":"accepted","executionId":"x","at":"t"}`+"\n"+
		`{"version":1,"type":"result","executionId":"x","at":"t","status":"completed","output":{"a":"x`+"\u009b"+`2Jy`+"\u009d"+`0;t"},"durationMs":0}`+"\n")
	res := runPTY(t, env(srv.URL, testToken), "run", writeFile(t, "w.json", `{"nodes":[]}`))
	if res.code != 0 || strings.ContainsAny(res.out, "\u009b\u009d") || !strings.Contains(res.out, `"a": "x2Jy0;t"`) {
		t.Errorf("exit %d:\n%q", res.code, res.out)
	}
}
