package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/protocol"
	"go.uber.org/goleak"
)

// This file holds the child-workflow tests and the harness the other tests
// of the "workflow engine complete" suite share (map, retry, limits,
// deadline, schema, benchmarks). Harness names start with wt so they cannot
// clash with other test files of the package.

// wtSink records an execution's events. Emit is called from node goroutines,
// so it locks; Finish records when the terminal event was written, for the
// deadline tests.
type wtSink struct {
	mu       sync.Mutex
	events   []protocol.Event
	terminal protocol.Terminal
	finishAt time.Time
	finishes int
}

func (s *wtSink) ExecutionID() string { return "exec-test" }

func (s *wtSink) Emit(e protocol.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finishes > 0 {
		return errors.New("event after the terminal event")
	}
	s.events = append(s.events, e)
	return nil
}

func (s *wtSink) Finish(t protocol.Terminal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finishes++
	s.terminal = t
	s.finishAt = time.Now()
	return nil
}

// ofType returns the recorded events of type T whose node id passes keep.
func wtEvents[T protocol.Event](s *wtSink, keep func(id string) bool) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []T
	for _, e := range s.events {
		if v, ok := e.(T); ok && keep(eventNode(e)) {
			out = append(out, v)
		}
	}
	return out
}

func wtIs(id string) func(string) bool { return func(s string) bool { return s == id } }
func wtAny(string) bool                { return true }

func (s *wtSink) started(id string) []*protocol.NodeStarted {
	return wtEvents[*protocol.NodeStarted](s, wtIs(id))
}

func (s *wtSink) completed(id string) []*protocol.NodeCompleted {
	return wtEvents[*protocol.NodeCompleted](s, wtIs(id))
}

func (s *wtSink) failed(id string) []*protocol.NodeFailed {
	return wtEvents[*protocol.NodeFailed](s, wtIs(id))
}

// startedIDs lists the node ids of every node.started, in event order.
func (s *wtSink) startedIDs() []string {
	var ids []string
	for _, e := range wtEvents[*protocol.NodeStarted](s, wtAny) {
		ids = append(ids, e.NodeID)
	}
	return ids
}

// result returns the terminal result, failing the test on anything else.
func (s *wtSink) result(t *testing.T) *protocol.Result {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finishes != 1 {
		t.Fatalf("%d terminal events, want exactly 1", s.finishes)
	}
	r, ok := s.terminal.(*protocol.Result)
	if !ok {
		t.Fatalf("terminal event is %#v, want a result", s.terminal)
	}
	return r
}

// execError returns the terminal error, failing the test on anything else.
// checkOutcome checks what a table case expects of an execution: its output
// when output is set, else the node and message of its terminal error; the
// code of the last node.failed of each "id=CODE" in failed; and a
// node.started for each id in started.
func (s *wtSink) checkOutcome(t *testing.T, output, nodeID, message string, failed, started []string) {
	t.Helper()
	if output != "" {
		wtSameJSON(t, "output", s.result(t).Output, output)
	} else {
		ee := s.execError(t)
		if ee.NodeID != nodeID || !strings.Contains(ee.Message, message) {
			t.Errorf("terminal error %s, want nodeId %q and a message with %q", wtJSON(ee), nodeID, message)
		}
	}
	for _, f := range failed {
		id, code, _ := strings.Cut(f, "=")
		evs := s.failed(id)
		if len(evs) == 0 || evs[len(evs)-1].Error.Code != protocol.Code(code) {
			t.Errorf("node.failed for %s: %s, want code %s", id, wtJSON(evs), code)
		}
	}
	for _, id := range started {
		if len(s.started(id)) == 0 {
			t.Errorf("no node.started for %q; started: %v", id, s.startedIDs())
		}
	}
}

func (s *wtSink) execError(t *testing.T) protocol.ExecutionError {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finishes != 1 {
		t.Fatalf("%d terminal events, want exactly 1", s.finishes)
	}
	e, ok := s.terminal.(*protocol.Error)
	if !ok {
		t.Fatalf("terminal event is %s, want an error", wtJSON(s.terminal))
	}
	if e.Error.Code != protocol.CodeExecutionFailed {
		t.Fatalf("terminal error code %q, want %s", e.Error.Code, protocol.CodeExecutionFailed)
	}
	return e.Error
}

func wtJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

// wtSameJSON compares two JSON texts by value.
func wtSameJSON(t *testing.T, what string, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v in %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want %s: %v", what, want, err)
	}
	if wtJSON(g) != wtJSON(w) {
		t.Errorf("%s = %s, want %s", what, wtJSON(g), wtJSON(w))
	}
}

// wtProbe is a node type whose runs the tests observe: how many run at once,
// when each attempt starts and ends, and whether it saw its context end.
//
// with: value (the output), sleepMs (cancellable sleep), block (wait for the
// context), failFirst (attempts up to it fail), code (their error code).
type wtProbe struct {
	mu        sync.Mutex
	cur, peak int
	starts    map[string][]time.Time
	ends      map[string][]time.Time
	cancelled map[string]bool
}

func (p *wtProbe) Prepare(c *Compiler) Step {
	c.With()
	return StepFunc(p.run)
}

func (p *wtProbe) run(ctx context.Context, call *Call) (any, error) {
	w := call.WithMap()
	p.mu.Lock()
	p.cur++
	p.peak = max(p.peak, p.cur)
	if p.starts == nil {
		p.starts, p.ends, p.cancelled = map[string][]time.Time{}, map[string][]time.Time{}, map[string]bool{}
	}
	p.starts[call.ID] = append(p.starts[call.ID], time.Now())
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.cur--
		p.ends[call.ID] = append(p.ends[call.ID], time.Now())
		p.mu.Unlock()
	}()
	sawDone := func() error {
		p.mu.Lock()
		p.cancelled[call.ID] = true
		p.mu.Unlock()
		return ctx.Err()
	}
	if n, ok := lang.AsInt(w["failFirst"]); ok && call.Attempt <= n {
		c, _ := w["code"].(string)
		code := protocol.Code(c)
		if code == "" {
			code = protocol.CodeFailed
		}
		return nil, Errorf(code, "probe attempt %d fails", call.Attempt)
	}
	if b, _ := w["block"].(bool); b {
		<-ctx.Done()
		return nil, sawDone()
	}
	if ms, ok := lang.AsInt(w["sleepMs"]); ok && ms > 0 {
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, sawDone()
		}
	}
	return w["value"], nil
}

func (p *wtProbe) peakRunning() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak
}

func (p *wtProbe) startTimes(id string) []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.starts[id])
}

func (p *wtProbe) endTimes(id string) []time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.ends[id])
}

func (p *wtProbe) sawCancel(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cancelled[id]
}

// wtEngine returns an engine with the default limits changed by mod and a
// fresh probe registered as node type "probe".
func wtEngine(mod func(*Limits)) (*Engine, *wtProbe) {
	l := DefaultLimits()
	l.Reserve = 50 * time.Millisecond
	if mod != nil {
		mod(&l)
	}
	e := New(l)
	p := &wtProbe{}
	e.Register("probe", p)
	return e, p
}

// wtReq builds an execution request from a workflow document, an input
// ("" for none) and child workflow documents.
func wtReq(t testing.TB, wf, input string, children ...string) *protocol.ExecutionRequest {
	t.Helper()
	body := `{"version":1,"workflow":` + wf
	if input != "" {
		body += `,"input":` + input
	}
	if len(children) > 0 {
		body += `,"runtime":{"workflows":[` + strings.Join(children, ",") + `]}`
	}
	body += "}"
	req, err := protocol.DecodeRequest([]byte(body))
	if err != nil {
		t.Fatalf("request envelope: %v\n%s", err, body)
	}
	return req
}

// wtRun prepares and runs a request under ctx (a 20 s timeout when nil) and
// returns what it emitted.
func wtRun(t testing.TB, ctx context.Context, e *Engine, req *protocol.ExecutionRequest) *wtSink {
	t.Helper()
	x, err := e.Prepare(req)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if ctx == nil {
		c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		ctx = c
	}
	s := &wtSink{}
	x.Run(ctx, s)
	return s
}

// wtInvalid prepares a request that must be refused before acceptance and
// returns the problems reported.
func wtInvalid(t *testing.T, e *Engine, req *protocol.ExecutionRequest) []protocol.Detail {
	t.Helper()
	x, err := e.Prepare(req)
	if err == nil {
		t.Fatalf("Prepare accepted the request (%v), want INVALID_EXECUTION", x != nil)
	}
	var inv *protocol.Invalid
	if !errors.As(err, &inv) {
		t.Fatalf("Prepare error %T %v, want *protocol.Invalid", err, err)
	}
	return inv.Details
}

// wtHasDetail reports whether a detail sits at path with a message holding
// every fragment.
func wtHasDetail(details []protocol.Detail, path string, fragments ...string) bool {
	for _, d := range details {
		if d.Path != path {
			continue
		}
		ok := true
		for _, f := range fragments {
			ok = ok && strings.Contains(d.Message, f)
		}
		if ok {
			return true
		}
	}
	return false
}

// Child workflow documents shared by the tests below.
const (
	wtChildGreet = `{"id":"greet","input":{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}},
		"nodes":[{"id":"inner","type":"set","with":{"value":"hello ${{ input.name }}"}}],
		"output":{"text":"${{ nodes.inner.output }}"}}`
	wtChildSinks = `{"id":"sinks","nodes":[
		{"id":"a","type":"set","with":{"value":1}},
		{"id":"b","type":"set","needs":["a"],"with":{"value":"${{ nodes.a.output + 1 }}"}}]}`
	wtChildBoom = `{"id":"boom","nodes":[{"id":"explode","type":"fail","with":{"message":"kaboom","code":"CHILD_BROKE"}}]}`
	// wtChildRec calls itself while input.n > 0: n levels below the first.
	wtChildRec = `{"id":"rec","input":{"type":"object","required":["n"]},"nodes":[
		{"id":"again","type":"workflow","when":"input.n > 0","with":{"workflow":"rec","input":{"n":"${{ input.n - 1 }}"}}}],
		"output":{"n":"${{ input.n }}"}}`
)

func TestChildWorkflowRuns(t *testing.T) {
	defer goleak.VerifyNone(t)
	tests := []struct {
		name      string
		wf, input string
		children  []string
		depth     int
		output    string   // the result's output; "" when the execution fails
		nodeID    string   // the node the terminal error names
		message   string   // a fragment of the terminal error's message
		failed    []string // "id=CODE" node.failed events that must be there
		started   []string // node.started ids that must be there
	}{{
		name:     "child by id with its input, events nested under the calling node",
		wf:       `{"nodes":[{"id":"call","type":"workflow","with":{"workflow":"greet","input":{"name":"${{ input.who }}"}}}],"output":"${{ nodes.call.output }}"}`,
		input:    `{"who":"ada"}`,
		children: []string{wtChildBoom, wtChildGreet},
		output:   `{"text":"hello ada"}`,
		started:  []string{"call", "call.inner"},
	}, {
		name:     "child without output template yields its sink nodes",
		wf:       `{"nodes":[{"id":"call","type":"workflow","with":{"workflow":"sinks"}}]}`,
		children: []string{wtChildSinks},
		output:   `{"call":{"b":2}}`,
		started:  []string{"call", "call.a", "call.b"},
	}, {
		name:     "child input checked against the child's input schema",
		wf:       `{"nodes":[{"id":"call","type":"workflow","with":{"workflow":"greet","input":{"name":42}}}]}`,
		children: []string{wtChildGreet},
		nodeID:   "call",
		message:  "input of child workflow",
		failed:   []string{"call=FAILED"},
	}, {
		name:     "a child input member misspelt is named",
		wf:       `{"nodes":[{"id":"call","type":"workflow","with":{"workflow":"greet","input":{"nmae":"x"}}}]}`,
		children: []string{wtChildGreet},
		nodeID:   "call",
		message:  `input of child workflow "greet": input: missing property 'name' (did you mean "name" for "nmae"?)`,
		failed:   []string{"call=FAILED"},
	}, {
		name:     "child input missing entirely",
		wf:       `{"nodes":[{"id":"call","type":"workflow","with":{"workflow":"greet"}}]}`,
		children: []string{wtChildGreet},
		nodeID:   "call",
		message:  "input of child workflow",
	}, {
		name:     "a failing child node fails the call and is named",
		wf:       `{"nodes":[{"id":"call","type":"workflow","with":{"workflow":"boom"}}]}`,
		children: []string{wtChildBoom},
		nodeID:   "call.explode",
		message:  "CHILD_BROKE: kaboom",
		failed:   []string{"call.explode=CHILD_BROKE", "call=CHILD_BROKE"},
	}, {
		name:     "child id from an expression",
		wf:       `{"nodes":[{"id":"call","type":"workflow","with":{"workflow":"${{ input.which }}"}}]}`,
		input:    `{"which":"sinks"}`,
		children: []string{wtChildSinks},
		output:   `{"call":{"b":2}}`,
	}, {
		name:     "unknown child id from an expression fails in-band",
		wf:       `{"nodes":[{"id":"call","type":"workflow","with":{"workflow":"${{ input.which }}"}}]}`,
		input:    `{"which":"nope"}`,
		children: []string{wtChildSinks},
		nodeID:   "call",
		message:  `unknown child workflow "nope"`,
	}, {
		name:     "recursion up to maxChildDepth runs",
		wf:       `{"nodes":[{"id":"call","type":"workflow","with":{"workflow":"rec","input":{"n":2}}}],"output":"${{ nodes.call.output }}"}`,
		children: []string{wtChildRec},
		depth:    3,
		output:   `{"n":2}`,
		started:  []string{"call", "call.again", "call.again.again"},
	}, {
		name:     "recursion past maxChildDepth is LIMIT_EXCEEDED",
		wf:       `{"nodes":[{"id":"call","type":"workflow","with":{"workflow":"rec","input":{"n":3}}}]}`,
		children: []string{wtChildRec},
		depth:    3,
		nodeID:   "call.again.again.again",
		message:  "maxChildDepth (3)",
		failed:   []string{"call.again.again.again=LIMIT_EXCEEDED", "call=LIMIT_EXCEEDED"},
	}, {
		name:     "unbounded recursion stops at maxChildDepth",
		wf:       `{"nodes":[{"id":"call","type":"workflow","with":{"workflow":"rec","input":{"n":1000}}}]}`,
		children: []string{wtChildRec},
		depth:    8,
		nodeID:   "call" + strings.Repeat(".again", 8),
		message:  "LIMIT_EXCEEDED",
	}, {
		name:     "map inside a child keeps the nesting in ids",
		wf:       `{"nodes":[{"id":"call","type":"workflow","with":{"workflow":"mapper","input":[1,2]}}],"output":"${{ nodes.call.output }}"}`,
		children: []string{`{"id":"mapper","nodes":[{"id":"each","type":"map","with":{"items":"${{ input }}","nodes":[{"id":"sq","type":"set","with":{"value":"${{ item * item }}"}}],"output":"${{ nodes.sq.output }}"}}],"output":"${{ nodes.each.output }}"}`},
		output:   `[1,4]`,
		started:  []string{"call.each[0].sq", "call.each[1].sq"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := wtEngine(func(l *Limits) {
				if tt.depth > 0 {
					l.MaxChildDepth = tt.depth
				}
			})
			s := wtRun(t, nil, e, wtReq(t, tt.wf, tt.input, tt.children...))
			s.checkOutcome(t, tt.output, tt.nodeID, tt.message, tt.failed, tt.started)
		})
	}
}

func TestChildWorkflowPrepare(t *testing.T) {
	const callGreet = `{"nodes":[{"id":"call","type":"workflow","with":{"workflow":"greet","input":{"name":"x"}}}]}`
	tests := []struct {
		name      string
		wf        string
		children  []string
		maxNodes  int
		path      string
		fragments []string
	}{{
		name:      "child failing the document schema",
		wf:        callGreet,
		children:  []string{wtChildGreet, `{"id":"bad","nodes":[{"id":"1x","type":"set"}]}`},
		path:      "runtime.workflows[1].nodes[0].id",
		fragments: []string{"does not match pattern"},
	}, {
		name:      "child with an unknown need",
		wf:        callGreet,
		children:  []string{wtChildGreet, `{"id":"c","nodes":[{"id":"a","type":"set"},{"id":"b","type":"set","needs":["zz"]}]}`},
		path:      "runtime.workflows[1].nodes[1].needs[0]",
		fragments: []string{`unknown node id "zz"`},
	}, {
		name:      "child with a cycle",
		wf:        callGreet,
		children:  []string{`{"id":"c","nodes":[{"id":"a","type":"set","needs":["b"]},{"id":"b","type":"set","needs":["a"]}]}`, wtChildGreet},
		path:      "runtime.workflows[0].nodes[0].needs",
		fragments: []string{"cycle"},
	}, {
		name:      "child with a bad expression",
		wf:        callGreet,
		children:  []string{wtChildGreet, `{"id":"c","nodes":[{"id":"a","type":"set","with":{"value":"${{ nope.x }}"}}]}`},
		path:      "runtime.workflows[1].nodes[0].with.value",
		fragments: []string{`unknown name "nope"`},
	}, {
		name:      "child with an unknown node type",
		wf:        callGreet,
		children:  []string{wtChildGreet, `{"id":"c","nodes":[{"id":"a","type":"teleport"}]}`},
		path:      "runtime.workflows[1].nodes[0].type",
		fragments: []string{`unknown node type "teleport"`},
	}, {
		name:      "child with an invalid input schema",
		wf:        callGreet,
		children:  []string{wtChildGreet, `{"id":"c","input":{"type":"wat"},"nodes":[{"id":"a","type":"set"}]}`},
		path:      "runtime.workflows[1].input.type",
		fragments: []string{"invalid JSON Schema"},
	}, {
		name:      "unused children are validated too",
		wf:        `{"nodes":[{"id":"a","type":"set"}]}`,
		children:  []string{`{"id":"c","nodes":[{"id":"a","type":"wait"}]}`},
		path:      "runtime.workflows[0].nodes[0].type",
		fragments: []string{"checkpoint"},
	}, {
		name:      "child without id",
		wf:        callGreet,
		children:  []string{wtChildGreet, `{"nodes":[{"id":"a","type":"set"}]}`},
		path:      "runtime.workflows[1].id",
		fragments: []string{"required"},
	}, {
		name:      "duplicate child ids",
		wf:        callGreet,
		children:  []string{wtChildGreet, wtChildGreet},
		path:      "runtime.workflows[1].id",
		fragments: []string{`duplicate child workflow id "greet"`},
	}, {
		name:      "literal id missing from runtime.workflows",
		wf:        `{"nodes":[{"id":"call","type":"workflow","with":{"workflow":"nothere"}}]}`,
		children:  []string{wtChildGreet},
		path:      "workflow.nodes[0].with.workflow",
		fragments: []string{`unknown child workflow "nothere"`, `"greet"`},
	}, {
		name:      "literal id with no runtime.workflows at all",
		wf:        `{"nodes":[{"id":"call","type":"workflow","with":{"workflow":"greet"}}]}`,
		path:      "workflow.nodes[0].with.workflow",
		fragments: []string{"it is empty"},
	}, {
		name:      "literal id missing in a child's own workflow node",
		wf:        callGreet,
		children:  []string{wtChildGreet, `{"id":"c","nodes":[{"id":"a","type":"workflow","with":{"workflow":"ghost"}}]}`},
		path:      "runtime.workflows[1].nodes[0].with.workflow",
		fragments: []string{`unknown child workflow "ghost"`},
	}, {
		name:      "workflow node without with.workflow",
		wf:        `{"nodes":[{"id":"call","type":"workflow","with":{"input":{}}}]}`,
		children:  []string{wtChildGreet},
		path:      "workflow.nodes[0].with",
		fragments: []string{"workflow"},
	}, {
		name:      "child nodes count towards maxNodes",
		wf:        callGreet,
		children:  []string{wtChildGreet, wtChildSinks},
		maxNodes:  3,
		path:      "runtime.workflows[1].nodes",
		fragments: []string{"maxNodes (3)"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := wtEngine(func(l *Limits) {
				if tt.maxNodes > 0 {
					l.MaxNodes = tt.maxNodes
				}
			})
			details := wtInvalid(t, e, wtReq(t, tt.wf, "", tt.children...))
			if !wtHasDetail(details, tt.path, tt.fragments...) {
				t.Errorf("details %s\nwant one at %s with %q", wtJSON(details), tt.path, tt.fragments)
			}
		})
	}
}
