package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/protocol"
)

// This file tests the scheduler through Prepare and Run, as the handler
// drives them: branch and merge, skips, failures, concurrency, cancellation
// and tracing. The helpers here are shared by expr_test.go,
// validate_test.go, fuzz_test.go and bench_test.go.

// recSink is a Sink that records events in order. It counts what would break
// the protocol (a second terminal event, an event after the terminal one)
// instead of refusing it, so that tests can assert on it.
type recSink struct {
	mu        sync.Mutex
	events    []protocol.Event
	terminals int
	late      int
}

const testExecutionID = "exec-test"

func (s *recSink) ExecutionID() string { return testExecutionID }

func (s *recSink) Emit(e protocol.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.terminals > 0 {
		s.late++
	}
	s.events = append(s.events, e)
	return nil
}

func (s *recSink) Finish(t protocol.Terminal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.terminals > 0 {
		s.late++
	}
	s.terminals++
	s.events = append(s.events, t)
	return nil
}

// all returns a copy of the events so far.
func (s *recSink) all() []protocol.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]protocol.Event(nil), s.events...)
}

// terminal checks that the stream holds exactly one terminal event, last,
// and returns it.
func (s *recSink) terminal(t *testing.T) protocol.Terminal {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.terminals != 1 || s.late != 0 {
		t.Fatalf("%d terminal events and %d events after one; want exactly one, last", s.terminals, s.late)
	}
	return s.events[len(s.events)-1].(protocol.Terminal)
}

// result returns the terminal event, failing the test unless it is a
// result.
func (s *recSink) result(t *testing.T) *protocol.Result {
	t.Helper()
	term := s.terminal(t)
	res, ok := term.(*protocol.Result)
	if !ok {
		t.Fatalf("terminal event is %s, want a result", describe(term))
	}
	return res
}

// failure returns the terminal event, failing the test unless it is an
// error.
func (s *recSink) failure(t *testing.T) *protocol.Error {
	t.Helper()
	term := s.terminal(t)
	e, ok := term.(*protocol.Error)
	if !ok {
		t.Fatalf("terminal event is %s, want an error", describe(term))
	}
	if e.Error.Code != protocol.CodeExecutionFailed {
		t.Errorf("terminal error code = %q, want %s", e.Error.Code, protocol.CodeExecutionFailed)
	}
	return e
}

// index returns the position of the first event of type typ for nodeID, or
// -1.
func (s *recSink) index(typ, nodeID string) int {
	for i, e := range s.all() {
		if eventType(e) == typ && eventNode(e) == nodeID {
			return i
		}
	}
	return -1
}

// count returns how many events of type typ name nodeID.
func (s *recSink) count(typ, nodeID string) int {
	n := 0
	for _, e := range s.all() {
		if eventType(e) == typ && eventNode(e) == nodeID {
			n++
		}
	}
	return n
}

// nodeFailed returns the first node.failed event of nodeID, or nil.
func (s *recSink) nodeFailed(nodeID string) *protocol.NodeFailed {
	for _, e := range s.all() {
		if f, ok := e.(*protocol.NodeFailed); ok && f.NodeID == nodeID {
			return f
		}
	}
	return nil
}

func eventType(e protocol.Event) string {
	switch e.(type) {
	case *protocol.Accepted:
		return protocol.TypeAccepted
	case *protocol.NodeStarted:
		return protocol.TypeNodeStarted
	case *protocol.NodeCompleted:
		return protocol.TypeNodeCompleted
	case *protocol.NodeFailed:
		return protocol.TypeNodeFailed
	case *protocol.NodeSuspended:
		return protocol.TypeNodeSuspended
	case *protocol.PermissionDecision:
		return protocol.TypePermissionDecision
	case *protocol.Result:
		return protocol.TypeResult
	case *protocol.Error:
		return protocol.TypeError
	}
	return fmt.Sprintf("%T", e)
}

func eventNode(e protocol.Event) string {
	switch e := e.(type) {
	case *protocol.NodeStarted:
		return e.NodeID
	case *protocol.NodeCompleted:
		return e.NodeID
	case *protocol.NodeFailed:
		return e.NodeID
	case *protocol.NodeSuspended:
		return e.NodeID
	case *protocol.PermissionDecision:
		return e.NodeID
	}
	return ""
}

// describe renders an event for failure messages.
func describe(e protocol.Event) string {
	b, _ := json.Marshal(e)
	return eventType(e) + " " + string(b)
}

// reqBody returns an execution request body for a workflow document and an
// input ("" for none).
func reqBody(workflow, input string) string {
	if input == "" {
		return fmt.Sprintf(`{"version":1,"workflow":%s}`, workflow)
	}
	return fmt.Sprintf(`{"version":1,"workflow":%s,"input":%s}`, workflow, input)
}

// decodeReq decodes a body as the handler does.
func decodeReq(t testing.TB, body string) *protocol.ExecutionRequest {
	t.Helper()
	req, err := protocol.DecodeRequest([]byte(body))
	if err != nil {
		t.Fatalf("DecodeRequest: %v", err)
	}
	return req
}

// prepareReq prepares body, failing the test if it is refused.
func prepareReq(t testing.TB, e *Engine, body string) *Execution {
	t.Helper()
	x, err := e.Prepare(decodeReq(t, body))
	if err != nil {
		t.Fatalf("Prepare refused a valid request: %v", err)
	}
	return x
}

// prepareInvalid prepares body, failing the test unless it is refused with a
// *protocol.Invalid.
func prepareInvalid(t *testing.T, e *Engine, body string) *protocol.Invalid {
	t.Helper()
	x, err := e.Prepare(decodeReq(t, body))
	if err == nil {
		t.Fatalf("Prepare accepted an invalid request (execution %v)", x != nil)
	}
	var inv *protocol.Invalid
	if !errors.As(err, &inv) {
		t.Fatalf("Prepare error is %T (%v), want *protocol.Invalid", err, err)
	}
	if len(inv.Details) == 0 {
		t.Fatal("*protocol.Invalid without details")
	}
	return inv
}

// runBody prepares and runs body to its end.
func runBody(t *testing.T, e *Engine, body string) (*recSink, protocol.Summary) {
	t.Helper()
	x := prepareReq(t, e, body)
	s := &recSink{}
	sum := x.Run(context.Background(), s)
	return s, sum
}

// outputOf decodes a result's output.
func outputOf(t *testing.T, res *protocol.Result) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(res.Output, &v); err != nil {
		t.Fatalf("result output %q: %v", res.Output, err)
	}
	return v
}

// jsonValue decodes a JSON literal of the test.
func jsonValue(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("test JSON %q: %v", s, err)
	}
	return v
}

func wantOutput(t *testing.T, res *protocol.Result, want string) {
	t.Helper()
	if got := outputOf(t, res); !reflect.DeepEqual(got, jsonValue(t, want)) {
		t.Errorf("output = %s, want %s", res.Output, want)
	}
}

// stepKind is a node type run by a function of the test. Its with is
// compiled and evaluated like any node's.
type stepKind func(ctx context.Context, call *Call) (any, error)

func (k stepKind) Prepare(c *Compiler) Step {
	c.With()
	return StepFunc(k)
}

// newTestEngine returns an engine with the default limits and the given
// extra kinds.
func newTestEngine(kinds map[string]Kind) *Engine {
	e := New(DefaultLimits())
	for name, k := range kinds {
		e.Register(name, k)
	}
	return e
}

func TestDiamondBranchAndMerge(t *testing.T) {
	const wf = `{"nodes":[
		{"id":"d","type":"set","needs":["b","c"],"with":{"value":"${{ nodes.b.output + nodes.c.output }}"}},
		{"id":"b","type":"set","needs":["a"],"with":{"value":"${{ nodes.a.output * 10 }}"}},
		{"id":"c","type":"set","needs":["a"],"with":{"value":"${{ nodes.a.output + 1 }}"}},
		{"id":"a","type":"set","with":{"value":"${{ input.n }}"}}]}`
	s, sum := runBody(t, newTestEngine(nil), reqBody(wf, `{"n":2}`))
	res := s.result(t)
	if res.Status != protocol.StatusCompleted || sum.Status != protocol.StatusCompleted {
		t.Fatalf("status = %q (summary %q), want completed", res.Status, sum.Status)
	}
	// Without an output template the output is the sinks' outputs: d only.
	wantOutput(t, res, `{"d":23}`)
	for _, id := range []string{"a", "b", "c", "d"} {
		if n := s.count(protocol.TypeNodeStarted, id); n != 1 {
			t.Errorf("node %s started %d times, want once", id, n)
		}
	}
	// Every edge orders the events: a need completes before its dependent
	// starts.
	edges := [][2]string{{"a", "b"}, {"a", "c"}, {"b", "d"}, {"c", "d"}}
	for _, e := range edges {
		done, start := s.index(protocol.TypeNodeCompleted, e[0]), s.index(protocol.TypeNodeStarted, e[1])
		if done < 0 || start < 0 || done > start {
			t.Errorf("%s completed at event %d, %s started at event %d: want the need first", e[0], done, e[1], start)
		}
	}
	if sum.Nodes != 4 {
		t.Errorf("summary counts %d nodes, want 4", sum.Nodes)
	}
}

func TestSkipPropagation(t *testing.T) {
	const wf = `{"nodes":[
		{"id":"a","type":"set","with":{"value":1}},
		{"id":"off","type":"set","needs":["a"],"when":"input.flag","with":{"value":"off ran"}},
		{"id":"after","type":"set","needs":["off"],"with":{"value":"after ran"}},
		{"id":"mixed","type":"set","needs":["a","off"],"with":{"value":"${{ nodes.off.status }}"}},
		{"id":"decides","type":"set","needs":["off"],"when":"nodes.off.status == 'skipped'","with":{"value":"decided"}}]}`
	tests := []struct {
		name       string
		flag       bool
		want       string
		notStarted []string
	}{
		{
			// off is skipped by its when; after has only skipped needs and
			// is skipped too; mixed has one completed need and runs;
			// decides has a when, which decides instead of the needs.
			name:       "when false",
			flag:       false,
			want:       `{"mixed":"skipped","decides":"decided"}`,
			notStarted: []string{"off", "after"},
		},
		{
			name:       "when true",
			flag:       true,
			want:       `{"mixed":"completed","after":"after ran"}`,
			notStarted: []string{"decides"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := runBody(t, newTestEngine(nil), reqBody(wf, fmt.Sprintf(`{"flag":%t}`, tt.flag)))
			wantOutput(t, s.result(t), tt.want)
			for _, id := range tt.notStarted {
				if i := s.index(protocol.TypeNodeStarted, id); i >= 0 {
					t.Errorf("skipped node %s started (event %d)", id, i)
				}
			}
		})
	}
}

func TestFailureStopsDependents(t *testing.T) {
	slowRuns, sawCancel := make(chan struct{}), make(chan struct{})
	e := newTestEngine(map[string]Kind{
		// slow runs beside boom and must be cancelled by boom's failure.
		"slow": stepKind(func(ctx context.Context, _ *Call) (any, error) {
			close(slowRuns)
			select {
			case <-ctx.Done():
				close(sawCancel)
				return nil, ctx.Err()
			case <-time.After(30 * time.Second):
				return "not cancelled", nil
			}
		}),
		// ready holds boom back until slow is surely running.
		"ready": stepKind(func(context.Context, *Call) (any, error) {
			select {
			case <-slowRuns:
				return nil, nil
			case <-time.After(30 * time.Second):
				return nil, errors.New("slow never ran")
			}
		}),
	})
	const wf = `{"nodes":[
		{"id":"slow","type":"slow"},
		{"id":"ready","type":"ready"},
		{"id":"boom","type":"fail","needs":["ready"],"with":{"message":"kaput","code":"BROKEN"}},
		{"id":"after","type":"set","needs":["boom"],"with":{"value":1}},
		{"id":"later","type":"set","needs":["after"],"with":{"value":2}}]}`
	s, sum := runBody(t, e, reqBody(wf, ""))
	term := s.failure(t)
	if term.Error.NodeID != "boom" {
		t.Errorf("terminal error names node %q, want boom", term.Error.NodeID)
	}
	for _, frag := range []string{"boom", "BROKEN", "kaput"} {
		if !strings.Contains(term.Error.Message, frag) {
			t.Errorf("terminal message %q does not contain %q", term.Error.Message, frag)
		}
	}
	f := s.nodeFailed("boom")
	if f == nil || f.Error.Code != "BROKEN" || f.Retrying {
		t.Errorf("node.failed of boom = %+v, want code BROKEN, not retrying", f)
	}
	for _, id := range []string{"after", "later"} {
		if i := s.index(protocol.TypeNodeStarted, id); i >= 0 {
			t.Errorf("dependent %s of a failed node started (event %d)", id, i)
		}
	}
	select {
	case <-sawCancel:
	default:
		t.Error("the running node slow was not cancelled when boom failed")
	}
	if sum.Status != "failed" {
		t.Errorf("summary status = %q, want failed", sum.Status)
	}
}

func TestOnErrorContinue(t *testing.T) {
	const wf = `{"nodes":[
		{"id":"boom","type":"fail","onError":"continue","with":{"message":"kaput","code":"BROKEN"}},
		{"id":"check","type":"set","needs":["boom"],"when":"nodes.boom.status == 'failed'",
		 "with":{"value":"${{ nodes.boom.status }}:${{ nodes.boom.error.code }}:${{ nodes.boom.error.message }}:${{ nodes.boom.output }}"}},
		{"id":"plain","type":"set","needs":["boom"],"with":{"value":"ran"}}]}`
	s, sum := runBody(t, newTestEngine(nil), reqBody(wf, ""))
	res := s.result(t)
	// plain has no when and no completed need: it is skipped.
	wantOutput(t, res, `{"check":"failed:BROKEN:kaput:"}`)
	if s.nodeFailed("boom") == nil {
		t.Error("no node.failed for boom")
	}
	if i := s.index(protocol.TypeNodeStarted, "plain"); i >= 0 {
		t.Errorf("plain started (event %d), want skipped", i)
	}
	if sum.Status != protocol.StatusCompleted {
		t.Errorf("summary status = %q, want completed", sum.Status)
	}
}

// rendezvous is a node type whose instances each wait until `want` of them
// have started. Run sequentially they cannot meet, and the first gives up
// after patience: the test fails rather than deadlocks.
func rendezvous(want int, patience time.Duration) Kind {
	var arrived atomic.Int32
	all := make(chan struct{})
	return stepKind(func(ctx context.Context, call *Call) (any, error) {
		if arrived.Add(1) == int32(want) {
			close(all)
		}
		select {
		case <-all:
			return call.ID, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(patience):
			return nil, Errorf("NO_OVERLAP", "%s waited %s for %d nodes to run at once", call.ID, patience, want)
		}
	})
}

func TestIndependentNodesOverlap(t *testing.T) {
	const wf = `{"nodes":[{"id":"left","type":"meet"},{"id":"right","type":"meet"}]}`
	tests := []struct {
		name        string
		concurrency int
		patience    time.Duration
		overlap     bool
	}{
		{"concurrent", 16, 30 * time.Second, true},
		// One slot: the nodes run one after the other and cannot meet,
		// which shows the test fails when nodes do not overlap.
		{"one slot", 1, 100 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestEngine(map[string]Kind{"meet": rendezvous(2, tt.patience)})
			e.Limits.MaxConcurrency = tt.concurrency
			s, _ := runBody(t, e, reqBody(wf, ""))
			term := s.terminal(t)
			if _, ok := term.(*protocol.Result); ok != tt.overlap {
				t.Fatalf("terminal = %s; want overlap %t", describe(term), tt.overlap)
			}
			if tt.overlap {
				wantOutput(t, term.(*protocol.Result), `{"left":"left","right":"right"}`)
			}
		})
	}
}

func TestRunContextEndsRunningWork(t *testing.T) {
	tests := []struct {
		name     string
		ctx      func() (context.Context, context.CancelFunc)
		cancel   bool // cancel once the node runs
		wantCode protocol.Code
		wantMsg  string
	}{
		{
			name:     "cancel",
			ctx:      func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			cancel:   true,
			wantCode: protocol.CodeCancelled,
			wantMsg:  "cancelled",
		},
		{
			// The invocation deadline less the reserve ends the execution
			// in-band, before the caller's own deadline.
			name: "deadline",
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), time.Second)
			},
			wantCode: protocol.CodeDeadlineExceeded,
			wantMsg:  "deadline exceeded",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			started := make(chan struct{})
			ended := make(chan error, 1)
			e := newTestEngine(map[string]Kind{
				"block": stepKind(func(ctx context.Context, _ *Call) (any, error) {
					close(started)
					<-ctx.Done()
					ended <- ctx.Err()
					return nil, ctx.Err()
				}),
			})
			// Half the caller's second: time enough for the node to start
			// on a loaded machine.
			e.Limits.Reserve = 500 * time.Millisecond
			x := prepareReq(t, e, reqBody(`{"nodes":[{"id":"block","type":"block"},{"id":"next","type":"set","needs":["block"]}]}`, ""))
			ctx, cancel := tt.ctx()
			defer cancel()
			s := &recSink{}
			done := make(chan protocol.Summary)
			go func() { done <- x.Run(ctx, s) }()
			select {
			case <-started:
			case <-time.After(30 * time.Second):
				t.Fatal("the node never started")
			}
			if tt.cancel {
				cancel()
			}
			var sum protocol.Summary
			select {
			case sum = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Run did not return after its context ended")
			}
			if err := <-ended; err == nil {
				t.Error("the node's context did not end")
			}
			term := s.failure(t)
			if term.Error.NodeID != "block" || !strings.Contains(term.Error.Message, tt.wantMsg) {
				t.Errorf("terminal error = %+v, want node block and %q", term.Error, tt.wantMsg)
			}
			if f := s.nodeFailed("block"); f == nil || f.Error.Code != tt.wantCode {
				t.Errorf("node.failed of block = %+v, want code %s", f, tt.wantCode)
			}
			if i := s.index(protocol.TypeNodeStarted, "next"); i >= 0 {
				t.Errorf("next started after the execution ended (event %d)", i)
			}
			if sum.Status != "failed" {
				t.Errorf("summary status = %q, want failed", sum.Status)
			}
		})
	}
}

func TestTrace(t *testing.T) {
	const wf = `{"nodes":[
		{"id":"greet","type":"set","with":{"value":"Hello, ${{ input.name }}!"}},
		{"id":"shout","type":"set","needs":["greet"],"with":{"value":"${{ upper(nodes.greet.output) }}"}},
		{"id":"fixed","type":"set","with":{"value":{"k":[1,"$${{ x }}"]}}}]}`
	for _, trace := range []bool{false, true} {
		t.Run(fmt.Sprintf("trace=%t", trace), func(t *testing.T) {
			body := fmt.Sprintf(`{"version":1,"workflow":%s,"input":{"name":"Ada"},"trace":%t}`, wf, trace)
			s, _ := runBody(t, newTestEngine(nil), body)
			wantOutput(t, s.result(t), `{"shout":"HELLO, ADA!","fixed":{"k":[1,"${{ x }}"]}}`)
			wantIO := map[string][2]string{
				"greet": {`{"value":"Hello, Ada!"}`, `"Hello, Ada!"`},
				"shout": {`{"value":"HELLO, ADA!"}`, `"HELLO, ADA!"`},
				"fixed": {`{"value":{"k":[1,"${{ x }}"]}}`, `{"k":[1,"${{ x }}"]}`},
			}
			seen := 0
			for _, ev := range s.all() {
				var got json.RawMessage
				var want string
				switch ev := ev.(type) {
				case *protocol.NodeStarted:
					got, want = ev.Input, wantIO[ev.NodeID][0]
				case *protocol.NodeCompleted:
					got, want = ev.Output, wantIO[ev.NodeID][1]
				default:
					continue
				}
				seen++
				if !trace {
					if got != nil {
						t.Errorf("%s carries %s without trace", describe(ev), got)
					}
					continue
				}
				if got == nil || !reflect.DeepEqual(jsonValue(t, string(got)), jsonValue(t, want)) {
					t.Errorf("%s: traced value %s, want %s", describe(ev), got, want)
				}
			}
			if seen != 6 {
				t.Errorf("%d node.started/node.completed events, want 6", seen)
			}
		})
	}
}

func TestPanickingKindFailsInBand(t *testing.T) {
	e := newTestEngine(map[string]Kind{
		"explode": stepKind(func(context.Context, *Call) (any, error) { panic("kaboom") }),
	})
	tests := []struct {
		name, wf, node string
	}{
		{"top level", `{"nodes":[{"id":"bang","type":"explode"}]}`, "bang"},
		{"in a map", `{"nodes":[{"id":"each","type":"map","with":{"items":[1],"nodes":[{"id":"bang","type":"explode"}]}}]}`, "each[0].bang"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := runBody(t, e, reqBody(tt.wf, ""))
			term := s.failure(t)
			if term.Error.NodeID != tt.node {
				t.Errorf("terminal error names %q, want %q", term.Error.NodeID, tt.node)
			}
			f := s.nodeFailed(tt.node)
			if f == nil {
				t.Fatalf("no node.failed for %s: a started node must end in-band", tt.node)
			}
			if f.Error.Code != protocol.CodeFailed || !strings.Contains(f.Error.Message, "kaboom") {
				t.Errorf("node.failed error = %+v, want FAILED with the panic value", f.Error)
			}
		})
	}
}
