package functions_test

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine"
	"github.com/runnerd/lambda-runner/functions"
	"github.com/runnerd/lambda-runner/protocol"
)

// Admission control: at most MaxExecutions run at once; the next is a 503
// with Retry-After after its token is checked and before its body is read;
// the readiness route answers without a token and says nothing but ready
// or draining; Drain lets the running executions end, cancels them at its
// bound, and each ends with exactly one terminal event. Helpers are
// prefixed admission.

// admissionHold is a node type that runs until release is closed or its
// context ends; started receives once per node started.
func admissionHold(started chan<- struct{}, release <-chan struct{}) engine.Kind {
	return kindFunc(func(ctx context.Context, _ *engine.Call) (any, error) {
		started <- struct{}{}
		select {
		case <-release:
			return "released", nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-time.After(patience):
			return nil, errors.New("never released")
		}
	})
}

const admissionBody = `{"version":1,"workflow":{"nodes":[{"id":"h","type":"hold"}]}}`

// admissionStream is a live stream whose accepted event was read.
type admissionStream struct {
	accepted string
	br       *bufio.Reader
}

// end reads the stream to its end and returns its terminal event, the
// whole stream checked.
func (s admissionStream) end(t *testing.T) event {
	t.Helper()
	return checkStream(t, parseStream(t, append([]byte(s.accepted+"\n"), readRest(t, s.br)...)))
}

// admissionStart starts one held execution and returns its stream once
// accepted is read and the node runs.
func admissionStart(t *testing.T, srv string, started <-chan struct{}) admissionStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv+protocol.PathExecutions, strings.NewReader(admissionBody))
	req.Header.Set("Authorization", "Bearer "+goodToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	br := bufio.NewReader(resp.Body)
	ev := readLine(t, br)
	if ev.Type != protocol.TypeAccepted {
		t.Fatalf("first event %s", ev.line)
	}
	select {
	case <-started:
	case <-time.After(patience):
		t.Fatal("the node never started")
	}
	return admissionStream{ev.line, br}
}

func TestAdmissionRefusesPastMaxExecutions(t *testing.T) {
	started, release := make(chan struct{}, 4), make(chan struct{})
	h := newHandler(t, map[string]engine.Kind{"hold": admissionHold(started, release)})
	h.MaxExecutions = 2
	srv := startServer(t, h)
	var streams []admissionStream
	for range 2 {
		streams = append(streams, admissionStart(t, srv.URL, started))
	}
	if n := h.Running(); n != 2 {
		t.Errorf("Running() = %d, want 2", n)
	}

	tests := []struct {
		name   string
		method string
		path   string
		auth   string
		status int
		code   protocol.Code
	}{
		// The token is checked first: a stranger learns nothing of the load.
		{"no token", http.MethodPost, protocol.PathExecutions, "", 401, protocol.CodeUnauthorized},
		{"bad token", http.MethodPost, protocol.PathExecutions, "Bearer nope", 401, protocol.CodeUnauthorized},
		{"third execution", http.MethodPost, protocol.PathExecutions, "Bearer " + goodToken, 503, protocol.CodeUnavailable},
		// Only executions are counted.
		{"capabilities", http.MethodGet, protocol.PathCapabilities, "Bearer " + goodToken, 200, ""},
		{"wrong method", http.MethodGet, protocol.PathExecutions, "Bearer " + goodToken, 405, protocol.CodeMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := newCountingBody(minimalBody)
			rec := serve(h, tt.method, tt.path, tt.auth, body)
			if tt.code == "" {
				if rec.Code != tt.status {
					t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
				}
				return
			}
			resp := errorBody(t, rec, tt.status, tt.code)
			if n := body.reads.Load(); n != 0 {
				t.Errorf("the body was read %d times before the refusal", n)
			}
			if tt.status != 503 {
				return
			}
			if ra := rec.Header().Get("Retry-After"); ra != "1" {
				t.Errorf("Retry-After %q, want 1", ra)
			}
			if !strings.Contains(resp.Error.Message, "maxExecutions") || !strings.Contains(resp.Error.Message, "2") {
				t.Errorf("message %q does not name maxExecutions and its value", resp.Error.Message)
			}
		})
	}

	// A slot freed is a slot taken again.
	release <- struct{}{}
	if last := streams[0].end(t); last.Type != protocol.TypeResult {
		t.Fatalf("terminal event %s", last.line)
	}
	close(release)
	resp := post(t, srv, admissionBody)
	if last := checkStream(t, parseStream(t, readRest(t, resp.Body))); last.Status != protocol.StatusCompleted {
		t.Errorf("execution after a slot freed: %s", last.line)
	}
	streams[1].end(t)
}

func TestAdmissionHealth(t *testing.T) {
	h := newHandler(t, nil)
	tests := []struct {
		name, method string
		status       int
		body         string
	}{
		{"get", http.MethodGet, 200, "ok\n"},
		{"head", http.MethodHead, 200, ""},
		{"post", http.MethodPost, 405, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(h, tt.method, functions.PathHealth, "", nil)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if tt.body != "" && rec.Body.String() != tt.body {
				t.Errorf("body %q, want %q: it says nothing else", rec.Body, tt.body)
			}
		})
	}
	// Draining: the route says so, and executions are refused.
	if err := h.Drain(context.Background(), context.Background()); err != nil {
		t.Fatalf("Drain with nothing running: %v", err)
	}
	if rec := serve(h, http.MethodGet, functions.PathHealth, "", nil); rec.Code != 503 || rec.Body.String() != "draining\n" {
		t.Errorf("draining: %d %q, want 503 draining", rec.Code, rec.Body)
	}
	rec := serve(h, http.MethodPost, protocol.PathExecutions, "Bearer "+goodToken, strings.NewReader(minimalBody))
	errorBody(t, rec, 503, protocol.CodeUnavailable)
	if ra := rec.Header().Get("Retry-After"); ra == "" {
		t.Error("no Retry-After while draining")
	}
}

func TestAdmissionDrain(t *testing.T) {
	tests := []struct {
		name    string
		release bool // the execution ends by itself during the drain
	}{
		{"ends by itself", true},
		{"cancelled at the bound", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			started, release := make(chan struct{}, 1), make(chan struct{})
			h := newHandler(t, map[string]engine.Kind{"hold": admissionHold(started, release)})
			srv := startServer(t, h)
			st := admissionStart(t, srv.URL, started)
			drained := make(chan error, 1)
			bound, cancel := context.WithCancel(context.Background())
			defer cancel()
			stop, cancelStop := context.WithTimeout(context.Background(), patience)
			defer cancelStop()
			go func() { drained <- h.Drain(bound, stop) }()
			// New executions are refused once the drain has begun.
			for end := time.Now().Add(patience); ; time.Sleep(time.Millisecond) {
				if serve(h, http.MethodGet, functions.PathHealth, "", nil).Code == 503 {
					break
				}
				if time.Now().After(end) {
					t.Fatal("the readiness route never said draining")
				}
			}
			if tt.release {
				close(release)
			} else {
				cancel()
			}
			last := st.end(t)
			err := <-drained
			if tt.release {
				if err != nil || last.Status != protocol.StatusCompleted {
					t.Errorf("Drain = %v, terminal %s; want nil and a completed result", err, last.line)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "1 executions") {
				t.Errorf("Drain = %v, want an error counting 1 cancelled execution", err)
			}
			// The engine names the code, not the cause (the log does).
			if last.Type != protocol.TypeError || !strings.Contains(last.Error.Message, "CANCELLED") {
				t.Errorf("terminal event %s, want a CANCELLED error", last.line)
			}
		})
	}
}

func TestDefaultMaxExecutions(t *testing.T) {
	tests := []struct {
		name string
		l    engine.Limits
		want int
	}{
		{"defaults (512 MB, budget a quarter)", engine.Limits{}, 2},
		{"1 GB, default budget", engine.Limits{MemoryMB: 1024}, 2},
		{"512 MB, 16 MB budget", engine.Limits{MemoryBudget: 16 << 20}, 16},
		{"128 MB, 1 MB budget", engine.Limits{MemoryMB: 128, MemoryBudget: 1 << 20}, 66},
		{"budget over the memory", engine.Limits{MemoryMB: 128, MemoryBudget: 1 << 30}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := functions.DefaultMaxExecutions(tt.l); got != tt.want {
				t.Errorf("DefaultMaxExecutions(%+v) = %d, want %d", tt.l, got, tt.want)
			}
		})
	}
}
