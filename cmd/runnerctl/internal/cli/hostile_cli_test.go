package cli_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A runner's text (node ids, messages) cannot drive the terminal: escape
// sequences in it are dropped from the progress lines and the outcome.
func TestHostileCLIEscapesAreDropped(t *testing.T) {
	stream := `{"version":1,"type":"accepted","executionId":"x\u001b]0;owned\u0007","at":"t"}` + "\n" +
		`{"version":1,"type":"node.started","executionId":"x","at":"t","nodeId":"a\u001b[2J","nodeType":"set","attempt":1}` + "\n" +
		`{"version":1,"type":"node.failed","executionId":"x","at":"t","nodeId":"a\u001b[2J","nodeType":"set","attempt":1,"durationMs":1,"error":{"code":"X","message":"m\u001b[31mred"},"retrying":false}` + "\n" +
		`{"version":1,"type":"error","executionId":"x","at":"t","error":{"code":"EXECUTION_FAILED","message":"boom\u001b]8;;http://evil\u0007","nodeId":"a\u001b[2J"}}` + "\n"
	srv := cannedRunner(t, stream)
	res := runPTY(t, env(srv.URL, testToken), "run", writeFile(t, "w.json", `{"nodes":[]}`))
	if res.code != 1 {
		t.Errorf("exit %d, want 1", res.code)
	}
	for _, bad := range []string{"\x1b]", "\x1b[2J", "\x1b[31m", "\x07"} {
		if strings.Contains(res.out, bad) {
			t.Errorf("the terminal got %q from the runner:\n%q", bad, res.out)
		}
	}
	if !strings.Contains(res.out, "failed at node a[2J: EXECUTION_FAILED: boom]8;;http://evil") {
		t.Errorf("outcome not shown:\n%q", res.out)
	}
}

// A line without end is cut off at client.MaxLineBytes: runnerctl stops
// with an error instead of growing without bound.
func TestHostileCLIEndlessLine(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, `{"version":1,"type":"accepted","executionId":"x","at":"t"}`+"\n")
		chunk := strings.Repeat("y", 64<<10)
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	start := time.Now()
	for _, mode := range []string{"pipe", "pty"} {
		var res result
		if mode == "pipe" {
			res = runPipe(t, env(srv.URL, testToken), `{"nodes":[]}`, "run", "-")
		} else {
			res = runPTY(t, env(srv.URL, testToken), "run", writeFile(t, "w.json", `{"nodes":[]}`))
		}
		if res.code != 1 || !strings.Contains(res.err, "event line longer than") {
			t.Errorf("%s: exit %d, stderr %q", mode, res.code, res.err)
		}
	}
	if d := time.Since(start); d > 60*time.Second {
		t.Errorf("took %v", d)
	}
}
