package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/runnerd/lambda-runner/engine/batch"
	"github.com/runnerd/lambda-runner/protocol"
)

// pipeFanOut runs each batch in ServeBatch of a second engine, the child,
// through a pipe: the parent reads what the child writes as it writes it,
// as it reads a Lambda response stream.
type pipeFanOut struct {
	child *Engine
	calls atomic.Int64
	// fail, when set, answers invocation n (from 1) with an error instead.
	fail func(n int64) error
	// batches records the events sent, for tests on batching.
	mu      sync.Mutex
	batches []batch.Doc
}

func (p *pipeFanOut) Invoke(ctx context.Context, payload []byte) (io.ReadCloser, error) {
	n := p.calls.Add(1)
	var ev batch.Event
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	if len(payload) > batch.MaxPayloadBytes {
		return nil, fmt.Errorf("payload of %d bytes over the limit", len(payload))
	}
	p.mu.Lock()
	p.batches = append(p.batches, *ev.Batch)
	p.mu.Unlock()
	if p.fail != nil {
		if err := p.fail(n); err != nil {
			return nil, err
		}
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(p.child.ServeBatch(ctx, payload, pw)) }()
	return pr, nil
}

// fanEngines returns a parent engine distributing through a child engine
// with the same limits and kinds.
func fanEngines(mod func(*Limits)) (*Engine, *pipeFanOut) {
	l := func(l *Limits) {
		l.MaxFanOutInvocations = 8
		if mod != nil {
			mod(l)
		}
	}
	parent, _ := wtEngine(l)
	child, _ := wtEngine(l)
	fo := &pipeFanOut{child: child}
	parent.Services.FanOut = fo
	return parent, fo
}

// fanRun prepares body as the handler does and runs it.
func fanRun(t *testing.T, ctx context.Context, e *Engine, body string) (*recSink, protocol.Summary) {
	t.Helper()
	x, err := e.PrepareBody([]byte(body))
	if err != nil {
		t.Fatalf("PrepareBody: %v", err)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	s := &recSink{}
	return s, x.Run(ctx, s)
}

// eventKeys lists what identifies each event, sorted: concurrency orders
// events differently from run to run, in process or not.
func eventKeys(s *recSink) []string {
	var out []string
	for _, e := range s.all() {
		k := eventType(e) + " " + eventNode(e)
		switch e := e.(type) {
		case *protocol.NodeStarted:
			k += fmt.Sprintf(" #%d %s", e.Attempt, e.Input)
		case *protocol.NodeCompleted:
			k += fmt.Sprintf(" #%d %s", e.Attempt, e.Output)
		case *protocol.NodeFailed:
			k += fmt.Sprintf(" #%d %s %s %v", e.Attempt, e.Error.Code, e.Error.Message, e.Retrying)
		case *protocol.PermissionDecision:
			k += " " + e.Action + " " + e.Resource + " " + e.Decision + " " + e.Source
		case *protocol.Result:
			k += fmt.Sprintf(" %s %s %+v", e.Status, e.Output, e.Usage)
		case *protocol.Error:
			k += " " + e.Error.Message + " " + e.Error.NodeID
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestDistributedMapEqualsInProcess runs the same workflows with and
// without distribute: the events (ids, attempts, traced values, decisions),
// the output in item order and the usage must be the same.
func TestDistributedMapEqualsInProcess(t *testing.T) {
	defer goleak.VerifyNone(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Date"] = nil // the two runs compared may straddle a second
		fmt.Fprintf(w, `{"path":%q,"auth":%q}`, r.URL.Path, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	const secret = "s3cr3t-token-value"
	runtime := fmt.Sprintf(`,"runtime":{"http":{"policy":{"allowPrivateNetwork":true},"secrets":{"tok":%q}}},"permissions":["http:127.0.0.1"],"trace":true`, secret)
	tests := []struct {
		name, wf, input, extra string
	}{{
		name: "items, outer scope, index and output",
		wf: `{"nodes":[{"id":"pre","type":"set","with":{"value":100}},
			{"id":"each","type":"map","needs":["pre"],"with":{"items":"${{ input }}","concurrency":2,DIST,"nodes":[
				{"id":"inner","type":"set","with":{"value":"${{ nodes.pre.output + item + index * 1000 }}"}},
				{"id":"id","type":"set","needs":["inner"],"with":{"value":"${{ execution.id }}"}}],
				"output":{"v":"${{ nodes.inner.output }}","x":"${{ nodes.id.output }}"}}}],"output":"${{ nodes.each.output }}"}`,
		input: `[1,2,3,4,5,6,7,8,9,10,11]`,
	}, {
		name: "http with a secret, usage and permission decisions",
		wf: `{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..9 }}",DIST,"nodes":[
				{"id":"get","type":"http","with":{"url":"` + srv.URL + `/i/${{ item }}","headers":{"Authorization":"Bearer ${{ secrets.tok }}"}}}],
				"output":"${{ nodes.get.output.body }}"}}],"output":"${{ nodes.each.output }}"}`,
		extra: runtime,
	}, {
		name: "onError continue and retries inside the iterations",
		wf: `{"nodes":[{"id":"each","type":"map","with":{"items":[1,2,3,4,5],DIST,"nodes":[
				{"id":"boom","type":"fail","onError":"continue","retry":{"maxAttempts":2,"backoffMs":1},"when":"item % 2 == 0","with":{"code":"NOPE"}},
				{"id":"after","type":"set","needs":["boom"],"when":"true","with":{"value":"${{ nodes.boom.status }}"}}],
				"output":"${{ nodes.after.output }}"}}],"output":"${{ nodes.each.output }}"}`,
	}, {
		name: "an inner failure fails the map naming the inner node",
		wf: `{"nodes":[{"id":"each","type":"map","with":{"items":[1,2,3,4,5,6],"concurrency":1,DIST,"nodes":[
				{"id":"boom","type":"fail","when":"index == 4","with":{"message":"item ${{ item }} is bad"}}]}}]}`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := func(dist string) string {
				wf := strings.Replace(tt.wf, "DIST,", dist, 1)
				b := `{"version":1,"workflow":` + wf
				if tt.input != "" {
					b += `,"input":` + tt.input
				}
				return b + tt.extra + "}"
			}
			parent, fo := fanEngines(nil)
			local, _ := wtEngine(nil)
			in, _ := fanRun(t, nil, local, body(""))
			dist, _ := fanRun(t, nil, parent, body(`"distribute":{"batchSize":2,"invocations":3},`))
			if fo.calls.Load() == 0 && !strings.Contains(tt.name, "fails") {
				t.Fatal("no child invocation")
			}
			a, b := eventKeys(in), eventKeys(dist)
			if !slices.Equal(a, b) {
				t.Errorf("events differ\nin process:\n  %s\ndistributed:\n  %s", strings.Join(a, "\n  "), strings.Join(b, "\n  "))
			}
			if dist.terminals != 1 || dist.late != 0 {
				t.Errorf("%d terminal events, %d late", dist.terminals, dist.late)
			}
			for _, k := range b {
				if strings.Contains(k, secret) {
					t.Errorf("the secret leaked: %s", k)
				}
			}
		})
	}
}

// TestDistributeBatching checks how items are cut: by count, evenly when
// batchSize is absent, by bytes under Lambda's payload limit, and at most
// invocations (and the operator's ceiling) at once.
func TestDistributeBatching(t *testing.T) {
	defer goleak.VerifyNone(t)
	tests := []struct {
		name   string
		dist   string
		items  string
		limit  int
		starts []int
	}{
		{"batchSize", `{"batchSize":4,"invocations":2}`, `"${{ 1..10 }}"`, 8, []int{0, 4, 8}},
		{"chosen: spread over invocations", `{"invocations":3}`, `"${{ 1..10 }}"`, 8, []int{0, 4, 8}},
		{"chosen under the ceiling", `{"invocations":50}`, `"${{ 1..10 }}"`, 5, []int{0, 2, 4, 6, 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent, fo := fanEngines(func(l *Limits) {
				l.MaxFanOutInvocations = tt.limit
				l.MemoryBudget = 256 << 20
				l.MaxExprMemory = 64 << 20
				l.MaxOutputBytes = 64 << 20
			})
			wf := `{"nodes":[{"id":"each","type":"map","with":{"items":` + tt.items + `,"distribute":` + tt.dist + `,"nodes":[
				{"id":"inner","type":"set","with":{"value":"${{ len(string(item)) }}"}}],"output":"${{ nodes.inner.output }}"}}],"output":"${{ nodes.each.output }}"}`
			s, _ := fanRun(t, nil, parent, `{"version":1,"workflow":`+wf+`}`)
			s.result(t)
			var starts []int
			for _, b := range fo.batches {
				starts = append(starts, b.Start)
			}
			slices.Sort(starts)
			if !slices.Equal(starts, tt.starts) {
				t.Errorf("batches start at %v, want %v", starts, tt.starts)
			}
		})
	}
}

// TestDistributeFailures covers invocation failures, the deadline, the
// parent's cancellation and the node budget.
func TestDistributeFailures(t *testing.T) {
	defer goleak.VerifyNone(t)
	wf := func(items, inner string) string {
		return `{"version":1,"workflow":{"nodes":[{"id":"each","type":"map","with":{"items":` + items + `,"concurrency":1,"distribute":{"batchSize":2,"invocations":2},"nodes":[` + inner + `]}}]}}`
	}
	t.Run("an invocation failure fails the map with INVOCATION_FAILED", func(t *testing.T) {
		parent, fo := fanEngines(nil)
		fo.fail = func(n int64) error {
			if n == 2 {
				return errors.New("function error: Runtime.ExitError")
			}
			return nil
		}
		s, sum := fanRun(t, nil, parent, wf(`"${{ 1..6 }}"`, `{"id":"a","type":"set"}`))
		f := s.failure(t)
		if sum.Code != protocol.CodeInvocationFailed || !strings.Contains(f.Error.Message, "INVOCATION_FAILED") || !strings.Contains(f.Error.Message, "Runtime.ExitError") || f.Error.NodeID != "each" {
			t.Errorf("code %s, terminal %+v", sum.Code, f.Error)
		}
	})
	t.Run("a child past the parent's deadline ends the execution in-band", func(t *testing.T) {
		parent, _ := fanEngines(func(l *Limits) { l.Reserve = 50 * time.Millisecond })
		ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
		defer cancel()
		s, sum := fanRun(t, ctx, parent, wf(`"${{ 1..4 }}"`, `{"id":"slow","type":"probe","with":{"sleepMs":5000}}`))
		f := s.failure(t)
		if sum.Code != protocol.CodeDeadlineExceeded || f.Error.Message != "DEADLINE_EXCEEDED: deadline exceeded" {
			t.Errorf("code %s, terminal %+v", sum.Code, f.Error)
		}
	})
	t.Run("cancelling the parent stops dispatch and ends the children", func(t *testing.T) {
		parent, fo := fanEngines(nil)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(150*time.Millisecond, cancel)
		began := time.Now()
		s, sum := fanRun(t, ctx, parent, wf(`"${{ 1..20 }}"`, `{"id":"slow","type":"probe","with":{"sleepMs":5000}}`))
		s.failure(t)
		if sum.Code != protocol.CodeCancelled || time.Since(began) > 3*time.Second {
			t.Errorf("code %s after %s", sum.Code, time.Since(began))
		}
		if n := fo.calls.Load(); n != 2 {
			t.Errorf("%d invocations, want 2 (no new batch after the cancellation)", n)
		}
	})
	t.Run("maxNodes counts the children's iterations", func(t *testing.T) {
		parent, _ := fanEngines(func(l *Limits) { l.MaxNodes = 5 })
		s, sum := fanRun(t, nil, parent, wf(`"${{ 1..10 }}"`, `{"id":"a","type":"set"}`))
		f := s.failure(t)
		if sum.Code != protocol.CodeLimitExceeded || !strings.Contains(f.Error.Message, "maxNodes (5)") {
			t.Errorf("code %s, terminal %+v", sum.Code, f.Error)
		}
		if n := len(wtStartedIn(s)); n > 5 {
			t.Errorf("%d nodes started, over maxNodes", n)
		}
	})
}

func wtStartedIn(s *recSink) []string {
	var out []string
	for _, e := range s.all() {
		if st, ok := e.(*protocol.NodeStarted); ok && st.Attempt == 1 {
			out = append(out, st.NodeID)
		}
	}
	return out
}

// TestDistributeSuspends: a consent met in a child stops new batches and
// the execution ends suspended listing it; one named statically is decided
// before any child runs.
func TestDistributeSuspends(t *testing.T) {
	defer goleak.VerifyNone(t)
	t.Run("dynamic consent in a child", func(t *testing.T) {
		parent, fo := fanEngines(nil)
		body := `{"version":1,"consentAvailable":true,"toolPolicies":[{"match":"t/*","decision":"consent"}],
			"runtime":{"toolsets":[{"name":"t","url":"http://127.0.0.1:1/mcp","transport":"streamable-http"}]},
			"workflow":{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..8 }}","concurrency":1,"distribute":{"batchSize":2,"invocations":1},"nodes":[
				{"id":"call","type":"tool","when":"index == 2","with":{"toolset":"t","tool":"${{ 'x' + string(index) }}"}}]}}]}}`
		s, _ := fanRun(t, nil, parent, body)
		res := s.result(t)
		if res.Status != protocol.StatusSuspended || len(res.Suspended) != 1 || res.Suspended[0].NodeID != "each[2].call" || res.Suspended[0].Resource != "t/x2" {
			t.Fatalf("result %+v", res)
		}
		if n := fo.calls.Load(); n != 2 {
			t.Errorf("%d invocations, want 2: none after the suspended batch", n)
		}
		if s.count(protocol.TypeNodeSuspended, "each[2].call") != 1 || s.count(protocol.TypePermissionDecision, "each[2].call") != 1 {
			t.Errorf("events: %v", eventKeys(s))
		}
	})
	t.Run("static consent before any child", func(t *testing.T) {
		parent, fo := fanEngines(nil)
		body := `{"version":1,"consentAvailable":true,"toolPolicies":[{"match":"t/*","decision":"consent"}],
			"runtime":{"toolsets":[{"name":"t","url":"http://127.0.0.1:1/mcp","transport":"streamable-http"}]},
			"workflow":{"nodes":[{"id":"each","type":"map","with":{"items":"${{ 1..6 }}","distribute":{"invocations":2},"nodes":[
				{"id":"call","type":"tool","with":{"toolset":"t","tool":"x"}}]}}]}}`
		s, _ := fanRun(t, nil, parent, body)
		res := s.result(t)
		if res.Status != protocol.StatusSuspended || len(res.Suspended) != 1 {
			t.Fatalf("result %+v", res)
		}
		if n := fo.calls.Load(); n != 0 {
			t.Errorf("%d child invocations before the consent", n)
		}
	})
}

// TestDistributePrepare covers what is refused before acceptance.
func TestDistributePrepare(t *testing.T) {
	tests := []struct {
		name    string
		limit   int
		wf      string
		path    string
		message string
	}{
		{"off by default", 0, `{"nodes":[{"id":"each","type":"map","with":{"items":[1],"distribute":{"invocations":2},"nodes":[{"id":"a","type":"set"}]}}]}`,
			"workflow.nodes[0].with.distribute", "RUNNER_MAX_FANOUT_INVOCATIONS"},
		{"invocations required", 4, `{"nodes":[{"id":"each","type":"map","with":{"items":[1],"distribute":{"batchSize":2},"nodes":[{"id":"a","type":"set"}]}}]}`,
			"workflow.nodes[0].with.distribute", "invocations"},
		{"batchSize zero", 4, `{"nodes":[{"id":"each","type":"map","with":{"items":[1],"distribute":{"batchSize":0,"invocations":2},"nodes":[{"id":"a","type":"set"}]}}]}`,
			"workflow.nodes[0].with.distribute.batchSize", ""},
		{"templated", 4, `{"nodes":[{"id":"each","type":"map","with":{"items":[1],"distribute":{"invocations":"${{ 2 }}"},"nodes":[{"id":"a","type":"set"}]}}]}`,
			"workflow.nodes[0].with.distribute.invocations", ""},
		{"nested map", 4, `{"nodes":[{"id":"o","type":"map","with":{"items":[1],"nodes":[{"id":"each","type":"map","with":{"items":[1],"distribute":{"invocations":2},"nodes":[{"id":"a","type":"set"}]}}]}}]}`,
			"workflow.nodes[0].with.nodes[0].with.distribute", "top-level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := wtEngine(func(l *Limits) { l.MaxFanOutInvocations = tt.limit })
			_, err := e.PrepareBody([]byte(`{"version":1,"workflow":` + tt.wf + `}`))
			var inv *protocol.Invalid
			if !errors.As(err, &inv) {
				t.Fatalf("err = %v, want a 400", err)
			}
			found := false
			for _, d := range inv.Details {
				if d.Path == tt.path && strings.Contains(d.Message, tt.message) {
					found = true
				}
			}
			if !found {
				t.Errorf("details %+v, want one at %s with %q", inv.Details, tt.path, tt.message)
			}
		})
	}
}

// TestServeBatchRefuses: an event that is not a batch writes nothing.
func TestServeBatchRefuses(t *testing.T) {
	e, _ := wtEngine(nil)
	for _, ev := range []string{`{}`, `{"runnerFanOutBatch":{"v":2}}`, `{"runnerFanOutBatch":{"v":1,"request":{"version":1,"workflow":{"nodes":[{"id":"a","type":"set"}]}},"node":"a"}}`, `[`} {
		var sb strings.Builder
		if err := e.ServeBatch(context.Background(), []byte(ev), &sb); err == nil || sb.Len() > 0 {
			t.Errorf("%s: err %v, wrote %q", ev, err, sb.String())
		}
	}
}

// TestServeBatchEndsWhenItsStreamBreaks: a parent that closes the stream
// ends the child's batch at its next write, long before its deadline.
func TestServeBatchEndsWhenItsStreamBreaks(t *testing.T) {
	defer goleak.VerifyNone(t)
	e, _ := wtEngine(nil)
	ev := fmt.Sprintf(`{"runnerFanOutBatch":{"v":1,"executionId":"x","node":"each","start":0,"items":[1,2,3,4,5,6,7,8],"concurrency":1,"maxNodes":100,"deadlineMs":%d,
		"request":{"version":1,"workflow":{"nodes":[{"id":"each","type":"map","with":{"items":[],"distribute":{"invocations":1},"nodes":[
		{"id":"slow","type":"probe","with":{"sleepMs":300}}]}}]}}}}`, time.Now().Add(time.Minute).UnixMilli())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	began := time.Now()
	go func() { done <- e.ServeBatch(context.Background(), []byte(ev), pw) }()
	buf := make([]byte, 512)
	if _, err := pr.Read(buf); err != nil { // the first line is out
		t.Fatal(err)
	}
	pr.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the batch ran on after its stream broke")
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("the batch ended %s after it began (8 items of 0.3 s one at a time)", took)
	}
}
