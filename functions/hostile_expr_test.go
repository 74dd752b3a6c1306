package functions_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// exprInput is an input array of n ones.
func exprInput(n int) string {
	return `{"a":[` + strings.TrimSuffix(strings.Repeat("1,", n), ",") + `]}`
}

// exprStream posts body and reads the event stream: the node.failed codes
// and the terminal events.
func exprStream(t *testing.T, ctx context.Context, url, body string) (failed []string, terminals []map[string]any, err error) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+protocol.PathExecutions, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+goodToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		var ev map[string]any
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch ev["type"] {
		case protocol.TypeNodeFailed:
			e, _ := ev["error"].(map[string]any)
			failed = append(failed, fmt.Sprint(e["code"]))
		case protocol.TypeResult, protocol.TypeError:
			terminals = append(terminals, ev)
		}
	}
	return failed, terminals, sc.Err()
}

// Hostile expressions through the real handler: exactly one terminal event
// within a stated time, the code naming why, and the runner serving the
// next request at once.
func TestHostileExprHandler(t *testing.T) {
	doubling := "let s0 = 'xxxxxxxxxxxxxxxx'; "
	for i := 1; i <= 30; i++ {
		doubling += fmt.Sprintf("let s%d = s%d + s%d; ", i, i-1, i-1)
	}
	tests := []struct {
		name, workflow, input string
		code                  protocol.Code
		within                time.Duration
	}{
		{"string doubling let chain", `{"nodes":[{"id":"boom","type":"set","with":{"value":"${{ ` + doubling + `len(s30) }}"}}]}`, "",
			protocol.CodeLimitExceeded, 3 * time.Second},
		{"repeat of repeat", `{"nodes":[{"id":"boom","type":"set","with":{"value":"${{ repeat(repeat('x', 1000000), 1000) }}"}}]}`, "",
			protocol.CodeLimitExceeded, 3 * time.Second},
		{"nested sum over 100k items, timeoutMs 1000", `{"nodes":[{"id":"boom","type":"set","timeoutMs":1000,"with":{"value":"${{ sum(input.a, {sum(input.a, {# + 1})}) }}"}}]}`,
			exprInput(100_000), protocol.CodeTimeout, 4 * time.Second},
		{"nested sum in when, timeoutMs 1000", `{"nodes":[{"id":"boom","type":"set","timeoutMs":1000,"when":"sum(input.a, {sum(input.a, {# + 1})}) > 0"}]}`,
			exprInput(100_000), protocol.CodeTimeout, 4 * time.Second},
	}
	srv := startServer(t, newHandler(t, nil))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"version":1,"workflow":` + tt.workflow
			if tt.input != "" {
				body += `,"input":` + tt.input
			}
			body += `}`
			ctx, cancel := context.WithTimeout(context.Background(), tt.within+5*time.Second)
			defer cancel()
			start := time.Now()
			failed, terms, err := exprStream(t, ctx, srv.URL, body)
			took := time.Since(start)
			if err != nil {
				t.Fatalf("stream: %v after %v", err, took)
			}
			if took > tt.within {
				t.Errorf("took %v, want at most %v", took, tt.within)
			}
			if len(terms) != 1 {
				t.Fatalf("%d terminal events, want 1", len(terms))
			}
			// The nested sums' 10^10 steps meet the step bound (10,000,000
			// steps, about a second) and the node's timeoutMs (a second) at
			// about the same time: whichever ends them first is as bounded.
			ok := len(failed) == 1 && (failed[0] == string(tt.code) ||
				tt.code == protocol.CodeTimeout && failed[0] == string(protocol.CodeLimitExceeded))
			if !ok {
				t.Errorf("node.failed codes %v, want [%s]", failed, tt.code)
			}
			exprServesNext(t, srv.URL)
		})
	}
}

// A client that goes away stops the evaluation: the process's CPU falls
// idle within a fraction of a second, and the next request is served.
func TestHostileExprHandlerDisconnect(t *testing.T) {
	srv := startServer(t, newHandler(t, nil))
	body := `{"version":1,"workflow":{"nodes":[{"id":"boom","type":"set","with":{"value":"${{ sum(input.a, {sum(input.a, {# + 1})}) }}"}}]},"input":` + exprInput(100_000) + `}`
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	_, _, _ = exprStream(t, ctx, srv.URL, body)
	time.Sleep(200 * time.Millisecond) // the server sees the disconnect
	before := exprCPU()
	time.Sleep(500 * time.Millisecond)
	if used := exprCPU() - before; used > 250*time.Millisecond {
		t.Errorf("the process used %v of CPU in the 500ms after the client left: the evaluation still runs", used)
	}
	exprServesNext(t, srv.URL)
}

// exprCPU is the CPU time this process has used.
func exprCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func exprServesNext(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+protocol.PathExecutions,
		strings.NewReader(`{"version":1,"workflow":{"nodes":[{"id":"a","type":"set","with":{"value":"${{ 1 + 1 }}"}}]}}`))
	req.Header.Set("Authorization", "Bearer "+goodToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("next request: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"status":"completed"`) {
		t.Fatalf("next request: %.300s", b)
	}
}
