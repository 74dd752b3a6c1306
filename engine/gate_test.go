package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/protocol/redact"

	"github.com/runnerd/lambda-runner/engine/permission"
	"github.com/runnerd/lambda-runner/protocol"
)

// This file tests the permission gate through Prepare and Run with node
// kinds of the test that are shaped like the real tool, http and model
// nodes: each names its resource in with, declares it with StaticAction when
// it is literal, and calls Authorize before every side effect, which it records in the same ordered log as the events. The audit
// scan (gateAudit) then checks the stream as an auditor would.

// gateEffect is one side effect of a test kind: what a server would see.
type gateEffect struct{ node, action, resource string }

// gateEntry is an event or a side effect, in the order they happened.
type gateEntry struct {
	ev protocol.Event
	fx *gateEffect
}

// gateHarness is the Sink of one run and the world of its test kinds: it
// records events and side effects in one order, writes the events through a
// real protocol.Writer (so the wire form can be checked), and holds the
// channels that hold a node back until the test lets it go.
type gateHarness struct {
	mu      sync.Mutex
	entries []gateEntry
	term    protocol.Terminal
	buf     bytes.Buffer
	w       *protocol.Writer
	effects atomic.Int64
	// onEmit, when set, sees every event after it is recorded.
	onEmit func(protocol.Event)
	gates  map[string]chan struct{}
}

func newGateHarness() *gateHarness {
	h := &gateHarness{gates: map[string]chan struct{}{}}
	h.w = protocol.NewWriter(&h.buf, "exec-gate", nil)
	return h
}

func (h *gateHarness) ExecutionID() string { return "exec-gate" }

func (h *gateHarness) Emit(e protocol.Event) error {
	h.mu.Lock()
	h.entries = append(h.entries, gateEntry{ev: e})
	err := h.w.Emit(e)
	hook := h.onEmit
	h.mu.Unlock()
	if hook != nil {
		hook(e)
	}
	return err
}

func (h *gateHarness) Finish(t protocol.Terminal) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.term = t
	h.entries = append(h.entries, gateEntry{ev: t})
	return h.w.Finish(t)
}

// effect records a side effect; it is what a server receiving a request
// would count.
func (h *gateHarness) effect(node, action, resource string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entries = append(h.entries, gateEntry{fx: &gateEffect{node, action, resource}})
	h.effects.Add(1)
}

func (h *gateHarness) log() []gateEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.entries)
}

// gateKind is a test node type with one kind of side effect.
//
//	t_tool   tool.call     with.toolset + "/" + with.tool
//	t_http   http.request  the host of with.url (secrets allowed, like http)
//	t_model  model.invoke  with.role
//
// with.requests side effects per attempt (1 by default), each authorized;
// with.failAttempts fails that many first attempts after their effects;
// with.wait names a harness channel to wait on before the first Authorize.
type gateKind struct {
	action string
	h      *gateHarness
}

type gateStep struct {
	k   gateKind
	url lang.Template
}

func (k gateKind) Prepare(c *Compiler) Step {
	s := &gateStep{k: k}
	switch k.action {
	case protocol.ActionToolCall:
		c.With()
		ts, ok1 := c.Literal("toolset")
		tool, ok2 := c.Literal("tool")
		if ok1 && ok2 {
			c.StaticAction(k.action, ts+"/"+tool)
		}
	case protocol.ActionHTTPRequest:
		c.With("url")
		s.url = c.SecretTemplate("url")
		if raw, ok := c.Literal("url"); ok {
			u, err := url.Parse(raw)
			if err != nil || u.Host == "" {
				c.Errorf("url", "not an absolute URL")
				return nil
			}
			c.StaticAction(k.action, u.Host)
		}
	case protocol.ActionModelInvoke:
		c.With()
		if role, ok := c.Literal("role"); ok {
			c.StaticAction(k.action, role)
		}
	}
	return s
}

func (s *gateStep) Run(ctx context.Context, call *Call) (any, error) {
	w := call.WithMap()
	var resource string
	switch s.k.action {
	case protocol.ActionToolCall:
		resource = fmt.Sprint(w["toolset"]) + "/" + fmt.Sprint(w["tool"])
	case protocol.ActionHTTPRequest:
		v, err := call.Eval(s.url)
		if err != nil {
			return nil, err
		}
		u, err := url.Parse(fmt.Sprint(v))
		if err != nil {
			return nil, err
		}
		resource = u.Host // with its port: Authorize normalizes
	case protocol.ActionModelInvoke:
		resource = fmt.Sprint(w["role"])
	}
	if name, ok := w["wait"].(string); ok {
		select {
		case <-s.k.h.gates[name]:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	requests := 1
	if n, ok := w["requests"].(float64); ok {
		requests = int(n)
	}
	for range requests {
		if err := call.Authorize(ctx, s.k.action, resource); err != nil {
			return nil, err
		}
		if s.k.action == protocol.ActionHTTPRequest {
			resource = permission.NormalizeHost(resource)
		}
		s.k.h.effect(call.ID, s.k.action, resource)
	}
	if n, ok := w["failAttempts"].(float64); ok && call.Attempt <= int(n) {
		return nil, Errorf(protocol.CodeToolError, "transient failure after the side effect")
	}
	return requests, nil
}

// gateStaticKind declares every [action, resource] pair of with.static as
// a static action and authorizes each, in order, when it runs: a node
// naming several resources, like an agent with literal tools.
type gateStaticKind struct{ h *gateHarness }

func (k gateStaticKind) Prepare(c *Compiler) Step {
	c.With()
	raw, _ := c.Raw("static")
	list, _ := raw.([]any)
	for _, v := range list {
		pair, _ := v.([]any)
		if len(pair) != 2 {
			c.Errorf("static", "want [action, resource] pairs")
			return nil
		}
		c.StaticAction(fmt.Sprint(pair[0]), fmt.Sprint(pair[1]))
	}
	return StepFunc(func(ctx context.Context, call *Call) (any, error) {
		for _, v := range list {
			pair := v.([]any)
			action, resource := fmt.Sprint(pair[0]), fmt.Sprint(pair[1])
			if err := call.Authorize(ctx, action, resource); err != nil {
				return nil, err
			}
			k.h.effect(call.ID, action, resource)
		}
		return nil, nil
	})
}

// gateEngine returns an engine with the test kinds bound to h.
func gateEngine(h *gateHarness, limits Limits) *Engine {
	e := New(limits)
	e.Register("t_tool", gateKind{protocol.ActionToolCall, h})
	e.Register("t_http", gateKind{protocol.ActionHTTPRequest, h})
	e.Register("t_model", gateKind{protocol.ActionModelInvoke, h})
	e.Register("t_static", gateStaticKind{h})
	return e
}

// gateBody builds a request: the top-level nodes, extra request fields
// ("" or `"permissions":[...]`, …) and child workflow documents.
func gateBody(nodes, extra string, children ...string) string {
	b := fmt.Sprintf(`{"version":1,"workflow":{"id":"w","nodes":%s}`, nodes)
	if len(children) > 0 {
		b += `,"runtime":{"workflows":[` + strings.Join(children, ",") + `]}`
	}
	if extra != "" {
		b += "," + extra
	}
	return b + "}"
}

// gateRun prepares and runs body to its end.
func gateRun(t *testing.T, e *Engine, h *gateHarness, body string) {
	t.Helper()
	req, err := protocol.DecodeRequest([]byte(body))
	if err != nil {
		t.Fatalf("DecodeRequest: %v", err)
	}
	x, err := e.Prepare(req)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	x.Run(ctx, h)
	e.WaitClosed() // the toolsets close after Run returns
}

// gateStatus is the run's outcome: completed, suspended or failed.
func gateStatus(h *gateHarness) string {
	switch term := h.term.(type) {
	case *protocol.Result:
		return string(term.Status)
	case *protocol.Error:
		return "failed"
	}
	return "no terminal event"
}

func fmtDecision(d *protocol.PermissionDecision) string {
	return strings.Join([]string{d.NodeID, d.Action, d.Resource, d.Decision, d.Source}, " ")
}

// gateAudit checks the stream as an audit log:
//   - every side effect is preceded by an allow decision for its node,
//     action and resource that no other side effect used (exactly one each);
//   - no side effect follows a deny or a consent for the same;
//   - every node.suspended follows the consent decision it asks about;
//   - every PERMISSION_DENIED node failure follows a deny for the node;
//   - permission.decision has exactly its protocol fields on the wire.
//
// It returns how many allow decisions no side effect used: preflight
// decisions of nodes that never ran, or a sign of a duplicate decision.
func gateAudit(t *testing.T, h *gateHarness) (unused int) {
	t.Helper()
	type key struct{ node, action, resource string }
	allows := map[key]int{}
	refused := map[key]string{}
	consents := map[key]bool{}
	denied := map[string]bool{}
	for i, en := range h.log() {
		if fx := en.fx; fx != nil {
			k := key{fx.node, fx.action, fx.resource}
			if d, ok := refused[k]; ok {
				t.Errorf("entry %d: side effect %v after a %s decision for it", i, *fx, d)
			}
			if allows[k] == 0 {
				t.Errorf("entry %d: side effect %v without an unused allow decision before it", i, *fx)
				continue
			}
			allows[k]--
			continue
		}
		switch ev := en.ev.(type) {
		case *protocol.PermissionDecision:
			k := key{ev.NodeID, ev.Action, ev.Resource}
			switch ev.Decision {
			case "allow":
				allows[k]++
			case "consent":
				consents[k] = true
				refused[k] = ev.Decision
			case "deny":
				denied[ev.NodeID] = true
				refused[k] = ev.Decision
			default:
				t.Errorf("entry %d: decision %q", i, ev.Decision)
			}
		case *protocol.NodeSuspended:
			if !consents[key{ev.NodeID, ev.Request.Action, ev.Request.Resource}] {
				t.Errorf("entry %d: node.suspended %s %v without a consent decision before it", i, ev.NodeID, ev.Request)
			}
			if ev.Reason != "consent" {
				t.Errorf("entry %d: node.suspended reason %q, want consent", i, ev.Reason)
			}
		case *protocol.NodeFailed:
			if ev.Error.Code == protocol.CodePermissionDenied && !denied[ev.NodeID] {
				t.Errorf("entry %d: %s failed PERMISSION_DENIED without a deny decision", i, ev.NodeID)
			}
		}
	}
	want := []string{"action", "at", "decision", "executionId", "nodeId", "reason", "resource", "source", "type", "version"}
	sc := bufio.NewScanner(bytes.NewReader(h.buf.Bytes()))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("wire line %q: %v", sc.Text(), err)
		}
		if line["type"] != protocol.TypePermissionDecision {
			continue
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range line {
				if !yield(k) {
					return
				}
			}
		})
		if !slices.Equal(keys, want) {
			t.Errorf("permission.decision on the wire has fields %v, want %v", keys, want)
		}
	}
	for _, n := range allows {
		unused += n
	}
	return unused
}

const gatePolicies = `"toolPolicies":[` +
	`{"match":"github/delete_*","decision":"deny","reason":"destructive"},` +
	`{"match":"pager/*","decision":"consent","reason":"pages a human"}]`

const (
	gateFetch   = `{"id":"fetch","type":"t_http","with":{"url":"https://API.Example.COM:8443/issues/42"}}`
	gatePage    = `{"id":"page","type":"t_tool","needs":["fetch"],"with":{"toolset":"pager","tool":"page_oncall","arguments":{"summary":"x"}}}`
	gateGetIss  = `{"id":"get","type":"t_tool","with":{"toolset":"github","tool":"get_issue"}}`
	gateDelete  = `{"id":"del","type":"t_tool","with":{"toolset":"github","tool":"delete_repo"}}`
	gateGeneral = `{"id":"ask","type":"t_model","with":{"role":"general"}}`
)

func TestGateDecisions(t *testing.T) {
	tests := []struct {
		name     string
		nodes    string
		extra    string
		children []string
		limits   func(*Limits)

		status    string
		decisions []string // node action resource decision source, in order
		preflight int      // decisions before the first node.started
		effects   int64
		started   []string // nodes with a node.started, sorted
		suspended []string // node action resource, in order
		failed    string   // node CODE: a part of the message
		output    string   // the result's output, when completed
	}{
		{
			name:      "a static allow is decided once, in preflight",
			nodes:     `[` + gateGetIss + `]`,
			status:    "completed",
			decisions: []string{"get tool.call github/get_issue allow default"},
			preflight: 1, effects: 1, started: []string{"get"},
		},
		{
			name:      "permissions without an entry of the kind deny and fail the node",
			nodes:     `[` + gateGetIss + `]`,
			extra:     `"permissions":["tool:pager/*"]`,
			status:    "failed",
			decisions: []string{"get tool.call github/get_issue deny permissions"},
			preflight: 1, started: []string{"get"},
			failed: "get PERMISSION_DENIED: tool.call github/get_issue denied: permissions: no entry matches tool:github/get_issue",
		},
		{
			name:      "a deny policy fails the node with the policy's reason",
			nodes:     `[` + gateDelete + `]`,
			extra:     gatePolicies,
			status:    "failed",
			decisions: []string{"del tool.call github/delete_repo deny toolPolicy"},
			preflight: 1, started: []string{"del"},
			failed: `del PERMISSION_DENIED: toolPolicy: toolPolicies[0] "github/delete_*" denies tool:github/delete_repo: destructive`,
		},
		{
			name: "onError continue applies to a denial",
			nodes: `[{"id":"del","type":"t_tool","onError":"continue","with":{"toolset":"github","tool":"delete_repo"}},
				{"id":"after","type":"set","needs":["del"],"when":"nodes.del.status == 'failed'","with":{"value":"${{ nodes.del.error.code }}"}}]`,
			extra:     gatePolicies,
			status:    "completed",
			decisions: []string{"del tool.call github/delete_repo deny toolPolicy"},
			preflight: 1, started: []string{"after", "del"},
			failed: "del PERMISSION_DENIED: destructive",
			output: `{"after":"PERMISSION_DENIED"}`,
		},
		{
			name:   "a consent suspends in preflight, before any side effect",
			nodes:  `[` + gateFetch + `,` + gatePage + `]`,
			extra:  gatePolicies + `,"consentAvailable":true`,
			status: "suspended",
			decisions: []string{
				"fetch http.request api.example.com allow default",
				"page tool.call pager/page_oncall consent toolPolicy",
			},
			preflight: 2, suspended: []string{"page tool.call pager/page_oncall"},
		},
		{
			name: "every pending consent is listed",
			nodes: `[{"id":"a","type":"t_tool","with":{"toolset":"pager","tool":"page_oncall"}},` + gateGeneral + `,
				{"id":"b","type":"t_tool","needs":["a"],"with":{"toolset":"pager","tool":"ack"}}]`,
			extra:  gatePolicies + `,"consentAvailable":true`,
			status: "suspended",
			decisions: []string{
				"a tool.call pager/page_oncall consent toolPolicy",
				"ask model.invoke general allow default",
				"b tool.call pager/ack consent toolPolicy",
			},
			preflight: 3, suspended: []string{"a tool.call pager/page_oncall", "b tool.call pager/ack"},
		},
		{
			name:   "a consent without an interaction route is a denial",
			nodes:  `[` + gateFetch + `,` + gatePage + `]`,
			extra:  gatePolicies,
			status: "failed",
			decisions: []string{
				"fetch http.request api.example.com allow default",
				"page tool.call pager/page_oncall deny toolPolicy",
			},
			preflight: 2, effects: 1, started: []string{"fetch", "page"},
			failed: "page PERMISSION_DENIED: toolPolicy: consent required, no interaction route: toolPolicies[1]",
		},
		{
			name:   "a grant satisfies the consent",
			nodes:  `[` + gateFetch + `,` + gatePage + `]`,
			extra:  gatePolicies + `,"consentAvailable":true,"authorization":{"grants":["tool:pager/page_oncall"]}`,
			status: "completed",
			decisions: []string{
				"fetch http.request api.example.com allow default",
				"page tool.call pager/page_oncall allow authorization",
			},
			preflight: 2, effects: 2, started: []string{"fetch", "page"},
		},
		{
			name:   "a grant for another tool leaves the consent",
			nodes:  `[` + gateFetch + `,` + gatePage + `]`,
			extra:  gatePolicies + `,"consentAvailable":true,"authorization":{"grants":[{"action":"tool.call","resource":"pager/ack"}]}`,
			status: "suspended",
			decisions: []string{
				"fetch http.request api.example.com allow default",
				"page tool.call pager/page_oncall consent toolPolicy",
			},
			preflight: 2, suspended: []string{"page tool.call pager/page_oncall"},
		},
		{
			name:      "a grant never overrides a deny",
			nodes:     `[` + gateDelete + `]`,
			extra:     gatePolicies + `,"consentAvailable":true,"authorization":{"grants":["tool:github/*"]}`,
			status:    "failed",
			decisions: []string{"del tool.call github/delete_repo deny toolPolicy"},
			preflight: 1, started: []string{"del"},
			failed: "del PERMISSION_DENIED: destructive",
		},
		{
			name:   "absent permissions restrict nothing",
			nodes:  `[` + gateFetch + `,` + gateGeneral + `,` + gateGetIss + `]`,
			status: "completed",
			decisions: []string{
				"fetch http.request api.example.com allow default",
				"ask model.invoke general allow default",
				"get tool.call github/get_issue allow default",
			},
			preflight: 3, effects: 3, started: []string{"ask", "fetch", "get"},
		},
		{
			name:   "null permissions are absent",
			nodes:  `[` + gateGeneral + `]`,
			extra:  `"permissions":null`,
			status: "completed", decisions: []string{"ask model.invoke general allow default"},
			preflight: 1, effects: 1, started: []string{"ask"},
		},
		{
			name: "empty permissions deny every action",
			nodes: `[{"id":"h","type":"t_http","onError":"continue","with":{"url":"https://api.example.com/"}},
				{"id":"m","type":"t_model","onError":"continue","with":{"role":"general"}},
				{"id":"t","type":"t_tool","onError":"continue","with":{"toolset":"github","tool":"get_issue"}}]`,
			extra:  `"permissions":[]`,
			status: "completed",
			decisions: []string{
				"h http.request api.example.com deny permissions",
				"m model.invoke general deny permissions",
				"t tool.call github/get_issue deny permissions",
			},
			preflight: 3, started: []string{"h", "m", "t"},
			failed: "t PERMISSION_DENIED: permissions: no entry matches tool:github/get_issue",
			output: `{}`,
		},
		{
			name: "permissions allow only their own kind",
			nodes: `[` + gateFetch + `,` + gateGeneral + `,
				{"id":"t","type":"t_tool","onError":"continue","with":{"toolset":"api","tool":"example"}}]`,
			extra:  `"permissions":["model:*","http:*.example.com"]`,
			status: "completed",
			decisions: []string{
				"fetch http.request api.example.com allow permissions",
				"ask model.invoke general allow permissions",
				"t tool.call api/example deny permissions",
			},
			preflight: 3, effects: 2, started: []string{"ask", "fetch", "t"},
		},
		{
			name:      "a templated resource is decided when the node runs",
			nodes:     `[{"id":"get","type":"t_tool","with":{"toolset":"github","tool":"${{ 'get_issue' }}"}}]`,
			status:    "completed",
			decisions: []string{"get tool.call github/get_issue allow default"},
			preflight: 0, effects: 1, started: []string{"get"},
		},
		{
			name:      "a retry decides again",
			nodes:     `[{"id":"get","type":"t_tool","retry":{"maxAttempts":2,"backoffMs":1},"with":{"toolset":"github","tool":"get_issue","failAttempts":1}}]`,
			status:    "completed",
			decisions: []string{"get tool.call github/get_issue allow default", "get tool.call github/get_issue allow default"},
			preflight: 1, effects: 2, started: []string{"get"},
		},
		{
			name:   "every request is decided, the first by preflight",
			nodes:  `[{"id":"fetch","type":"t_http","with":{"url":"https://api.example.com/","requests":3}}]`,
			status: "completed",
			decisions: []string{
				"fetch http.request api.example.com allow default",
				"fetch http.request api.example.com allow default",
				"fetch http.request api.example.com allow default",
			},
			preflight: 1, effects: 3, started: []string{"fetch"},
		},
		{
			name:      "a consent behind a false when still suspends in preflight",
			nodes:     `[{"id":"page","type":"t_tool","when":"false","with":{"toolset":"pager","tool":"page_oncall"}}]`,
			extra:     gatePolicies + `,"consentAvailable":true`,
			status:    "suspended",
			decisions: []string{"page tool.call pager/page_oncall consent toolPolicy"},
			preflight: 1, suspended: []string{"page tool.call pager/page_oncall"},
		},
		{
			name:      "a denial behind a false when is audited and the node skipped",
			nodes:     `[{"id":"del","type":"t_tool","when":"false","with":{"toolset":"github","tool":"delete_repo"}}]`,
			extra:     gatePolicies,
			status:    "completed",
			decisions: []string{"del tool.call github/delete_repo deny toolPolicy"},
			preflight: 1, output: `{}`,
		},
		{
			name:      "a consent inside a map suspends the map in preflight",
			nodes:     `[{"id":"m","type":"map","with":{"items":[1,2],"nodes":[{"id":"page","type":"t_tool","with":{"toolset":"pager","tool":"page_oncall"}}]}}]`,
			extra:     gatePolicies + `,"consentAvailable":true`,
			status:    "suspended",
			decisions: []string{"m tool.call pager/page_oncall consent toolPolicy"},
			preflight: 1, suspended: []string{"m tool.call pager/page_oncall"},
		},
		{
			name:   "map iterations decide under their own ids when they run",
			nodes:  `[{"id":"m","type":"map","with":{"items":[1,2],"concurrency":1,"nodes":[` + gateGetIss + `]}}]`,
			status: "completed",
			decisions: []string{
				"m[0].get tool.call github/get_issue allow default",
				"m[1].get tool.call github/get_issue allow default",
			},
			preflight: 0, effects: 2, started: []string{"m", "m[0].get", "m[1].get"},
		},
		{
			name:     "a consent inside a child workflow suspends the workflow node in preflight",
			nodes:    `[{"id":"call","type":"workflow","with":{"workflow":"c"}}]`,
			children: []string{`{"id":"c","nodes":[{"id":"page","type":"t_tool","with":{"toolset":"pager","tool":"page_oncall"}}]}`},
			extra:    gatePolicies + `,"consentAvailable":true`,
			status:   "suspended",
			decisions: []string{
				"call workflow.run c allow default",
				"call tool.call pager/page_oncall consent toolPolicy",
			},
			preflight: 2, suspended: []string{"call tool.call pager/page_oncall"},
		},
		{
			name:     "child nodes decide under their nested ids when they run",
			nodes:    `[{"id":"call","type":"workflow","with":{"workflow":"c"}}]`,
			children: []string{`{"id":"c","nodes":[` + gateGetIss + `]}`},
			status:   "completed",
			decisions: []string{
				"call workflow.run c allow default",
				"call.get tool.call github/get_issue allow default",
			},
			preflight: 1, effects: 1, started: []string{"call", "call.get"},
		},
		{
			name:      "permissions workflow:other deny running child c, and c is not probed",
			nodes:     `[{"id":"call","type":"workflow","with":{"workflow":"c"}}]`,
			children:  []string{`{"id":"c","nodes":[` + gateGetIss + `,{"id":"page","type":"t_tool","with":{"toolset":"pager","tool":"page_oncall"}}]}`},
			extra:     `"permissions":["workflow:other","tool:*"],` + gatePolicies + `,"consentAvailable":true`,
			status:    "failed",
			decisions: []string{"call workflow.run c deny permissions"},
			preflight: 1, started: []string{"call"},
			failed: "call PERMISSION_DENIED: permissions: no entry matches workflow:c",
		},
		{
			name:  "a consent two children deep, inside a map, suspends the top-level node",
			nodes: `[{"id":"call","type":"workflow","with":{"workflow":"c1"}}]`,
			children: []string{
				`{"id":"c1","nodes":[{"id":"m","type":"map","with":{"items":[1],"nodes":[{"id":"inner","type":"workflow","with":{"workflow":"c2"}}]}}]}`,
				`{"id":"c2","nodes":[` + gateGetIss + `,{"id":"page","type":"t_tool","with":{"toolset":"pager","tool":"page_oncall"}}]}`,
			},
			extra:  gatePolicies + `,"consentAvailable":true`,
			status: "suspended",
			decisions: []string{
				"call workflow.run c1 allow default",
				"call tool.call pager/page_oncall consent toolPolicy",
			},
			preflight: 2, suspended: []string{"call tool.call pager/page_oncall"},
		},
		{
			name:     "a node's own consent and the same one nested are asked once",
			nodes:    `[{"id":"x","type":"t_static","with":{"static":[["workflow.run","c"],["tool.call","pager/page_oncall"]]}}]`,
			children: []string{`{"id":"c","nodes":[{"id":"page","type":"t_tool","with":{"toolset":"pager","tool":"page_oncall"}}]}`},
			extra:    gatePolicies + `,"consentAvailable":true`,
			status:   "suspended",
			decisions: []string{
				"x workflow.run c allow default",
				"x tool.call pager/page_oncall consent toolPolicy",
			},
			preflight: 2, suspended: []string{"x tool.call pager/page_oncall"},
		},
		{
			name:   "a node naming several resources has each decided once",
			nodes:  `[{"id":"x","type":"t_static","with":{"static":[["model.invoke","general"],["tool.call","github/get_issue"],["model.invoke","general"]]}}]`,
			status: "completed",
			decisions: []string{
				"x model.invoke general allow default",
				"x tool.call github/get_issue allow default",
				"x model.invoke general allow default",
			},
			preflight: 2, effects: 3, started: []string{"x"},
		},
		{
			name:     "a workflow node beyond maxChildDepth is not decided",
			limits:   func(l *Limits) { l.MaxChildDepth = -1 }, // none
			nodes:    `[{"id":"call","type":"workflow","onError":"continue","with":{"workflow":"c"}}]`,
			children: []string{`{"id":"c","nodes":[` + gateGetIss + `]}`},
			status:   "completed",
			started:  []string{"call"},
			failed:   "call LIMIT_EXCEEDED: maxChildDepth",
			output:   `{}`,
		},
		{
			name:  "a recursive child is probed once per depth and its consent asked once",
			nodes: `[{"id":"call","type":"workflow","with":{"workflow":"c"}},{"id":"again","type":"workflow","with":{"workflow":"c"}}]`,
			children: []string{`{"id":"c","nodes":[{"id":"deeper","type":"workflow","when":"false","with":{"workflow":"c"}},
				{"id":"page","type":"t_tool","with":{"toolset":"pager","tool":"page_oncall"}}]}`},
			extra:  gatePolicies + `,"consentAvailable":true`,
			status: "suspended",
			decisions: []string{
				"call workflow.run c allow default",
				"call tool.call pager/page_oncall consent toolPolicy",
				"again workflow.run c allow default",
				"again tool.call pager/page_oncall consent toolPolicy",
			},
			preflight: 4, suspended: []string{"call tool.call pager/page_oncall", "again tool.call pager/page_oncall"},
		},
		{
			name:   "a child beyond maxChildDepth is neither probed nor decided",
			limits: func(l *Limits) { l.MaxChildDepth = 1 },
			nodes:  `[{"id":"call","type":"workflow","with":{"workflow":"c1"}}]`,
			children: []string{
				`{"id":"c1","nodes":[{"id":"deeper","type":"workflow","onError":"continue","with":{"workflow":"c2"}}]}`,
				`{"id":"c2","nodes":[{"id":"page","type":"t_tool","with":{"toolset":"pager","tool":"page_oncall"}}]}`,
			},
			extra:     gatePolicies + `,"consentAvailable":true`,
			status:    "completed",
			decisions: []string{"call workflow.run c1 allow default"},
			preflight: 1, started: []string{"call", "call.deeper"},
			failed: "call.deeper LIMIT_EXCEEDED: maxChildDepth",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newGateHarness()
			limits := DefaultLimits()
			if tt.limits != nil {
				tt.limits(&limits)
			}
			gateRun(t, gateEngine(h, limits), h, gateBody(tt.nodes, tt.extra, tt.children...))
			gateAudit(t, h)

			if got := gateStatus(h); got != tt.status {
				t.Errorf("status = %s, want %s (terminal %+v)", got, tt.status, h.term)
			}
			var decisions, suspended []string
			started := map[string]bool{}
			preflight := -1
			for _, en := range h.log() {
				switch ev := en.ev.(type) {
				case *protocol.PermissionDecision:
					decisions = append(decisions, fmtDecision(ev))
				case *protocol.NodeStarted:
					started[ev.NodeID] = true
					if preflight < 0 {
						preflight = len(decisions)
					}
				case *protocol.NodeSuspended:
					suspended = append(suspended, ev.NodeID+" "+ev.Request.Action+" "+ev.Request.Resource)
				case *protocol.NodeFailed:
					if tt.failed != "" && !ev.Retrying && strings.HasPrefix(tt.failed, ev.NodeID+" ") {
						code, msg, _ := strings.Cut(strings.TrimPrefix(tt.failed, ev.NodeID+" "), ": ")
						if ev.Error.Code != protocol.Code(code) || !strings.Contains(ev.Error.Message, msg) {
							t.Errorf("%s failed with %s %q, want %s containing %q", ev.NodeID, ev.Error.Code, ev.Error.Message, code, msg)
						}
						tt.failed = ""
					}
				}
			}
			if tt.failed != "" {
				t.Errorf("no node.failed matching %q", tt.failed)
			}
			if preflight < 0 {
				preflight = len(decisions)
			}
			if !slices.Equal(decisions, tt.decisions) {
				t.Errorf("decisions:\n  %s\nwant:\n  %s", strings.Join(decisions, "\n  "), strings.Join(tt.decisions, "\n  "))
			}
			if preflight != tt.preflight {
				t.Errorf("%d decisions before the first node.started, want %d", preflight, tt.preflight)
			}
			if got := h.effects.Load(); got != tt.effects {
				t.Errorf("%d side effects, want %d", got, tt.effects)
			}
			if got := slices.Sorted(func(yield func(string) bool) {
				for id := range started {
					if !yield(id) {
						return
					}
				}
			}); !slices.Equal(got, tt.started) {
				t.Errorf("started %v, want %v", got, tt.started)
			}
			if !slices.Equal(suspended, tt.suspended) {
				t.Errorf("node.suspended %v, want %v", suspended, tt.suspended)
			}
			if res, ok := h.term.(*protocol.Result); ok {
				var listed []string
				for _, s := range res.Suspended {
					listed = append(listed, s.NodeID+" "+s.Action+" "+s.Resource)
				}
				if !slices.Equal(listed, tt.suspended) {
					t.Errorf("result suspended[] %v, want %v", listed, tt.suspended)
				}
				if tt.output != "" {
					var got, want any
					_ = json.Unmarshal(res.Output, &got)
					_ = json.Unmarshal([]byte(tt.output), &want)
					if !reflect.DeepEqual(got, want) {
						t.Errorf("output %s, want %s", res.Output, tt.output)
					}
				}
			}
		})
	}
}

// TestGateDynamicSuspensionInParallel: a consent met at run time (the tool
// is templated, so preflight cannot see it) suspends its node; the branch
// already running finishes, and nothing new starts, not even a dependent of
// the branch that finished.
func TestGateDynamicSuspensionInParallel(t *testing.T) {
	tests := []struct {
		name  string
		nodes string
		// the nodes that must not start, and the side effects expected
		notStarted []string
		effects    int64
		suspended  []string
	}{
		{
			name: "top level",
			nodes: `[{"id":"slow","type":"t_model","with":{"role":"general","wait":"suspended"}},
				{"id":"after","type":"t_model","needs":["slow"],"with":{"role":"general"}},
				{"id":"ask","type":"t_tool","with":{"toolset":"pager","tool":"${{ 'page_oncall' }}"}}]`,
			notStarted: []string{"after"},
			effects:    1,
			suspended:  []string{"ask tool.call pager/page_oncall"},
		},
		{
			name: "inside a map iteration",
			nodes: `[{"id":"m","type":"map","with":{"items":[1],"nodes":[
					{"id":"slow","type":"t_model","with":{"role":"general","wait":"suspended"}},
					{"id":"after","type":"t_model","needs":["slow"],"with":{"role":"general"}},
					{"id":"ask","type":"t_tool","with":{"toolset":"pager","tool":"${{ 'page_oncall' }}"}}]}},
				{"id":"next","type":"t_model","needs":["m"],"with":{"role":"general"}}]`,
			notStarted: []string{"m[0].after", "next"},
			effects:    1,
			suspended:  []string{"m[0].ask tool.call pager/page_oncall"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newGateHarness()
			release := make(chan struct{})
			h.gates["suspended"] = release
			var once sync.Once
			h.onEmit = func(e protocol.Event) {
				if _, ok := e.(*protocol.NodeSuspended); ok {
					once.Do(func() { close(release) })
				}
			}
			gateRun(t, gateEngine(h, DefaultLimits()), h, gateBody(tt.nodes, gatePolicies+`,"consentAvailable":true`))
			gateAudit(t, h)

			res, ok := h.term.(*protocol.Result)
			if !ok || res.Status != protocol.StatusSuspended {
				t.Fatalf("terminal %+v, want a suspended result", h.term)
			}
			var listed []string
			for _, s := range res.Suspended {
				listed = append(listed, s.NodeID+" "+s.Action+" "+s.Resource)
			}
			if !slices.Equal(listed, tt.suspended) {
				t.Errorf("suspended[] %v, want %v", listed, tt.suspended)
			}
			completed, started := map[string]bool{}, map[string]bool{}
			for _, en := range h.log() {
				switch ev := en.ev.(type) {
				case *protocol.NodeStarted:
					started[ev.NodeID] = true
				case *protocol.NodeCompleted:
					completed[ev.NodeID] = true
				}
			}
			slow := strings.TrimSuffix(tt.suspended[0], "ask tool.call pager/page_oncall") + "slow"
			if !completed[slow] {
				t.Errorf("the running branch %s did not finish", slow)
			}
			for _, id := range tt.notStarted {
				if started[id] {
					t.Errorf("%s started after the suspension", id)
				}
			}
			if got := h.effects.Load(); got != tt.effects {
				t.Errorf("%d side effects, want %d", got, tt.effects)
			}
		})
	}
}

// TestGateAuditLogLine: each decision is one structured log line with the
// event's fields, the execution id and whether preflight made it; never the
// action's arguments, and secrets redacted (here a templated URL puts a
// secret in the host).
func TestGateAuditLogLine(t *testing.T) {
	const secretHost = "hidden-backend.internal.example"
	tests := []struct {
		name  string
		nodes string
		extra string
		want  []map[string]any
	}{
		{
			name:  "preflight and run time",
			nodes: `[` + gateGetIss + `,{"id":"dyn","type":"t_tool","with":{"toolset":"github","tool":"${{ 'get_issue' }}","arguments":{"token":"ARGUMENT-SENTINEL"}}}]`,
			want: []map[string]any{
				{"nodeId": "get", "action": "tool.call", "resource": "github/get_issue", "decision": "allow", "source": "default", "preflight": true},
				{"nodeId": "dyn", "action": "tool.call", "resource": "github/get_issue", "decision": "allow", "source": "default", "preflight": false},
			},
		},
		{
			name:  "a secret in a host is redacted",
			nodes: `[{"id":"fetch","type":"t_http","with":{"url":"https://${{ secrets.backend }}/x"}}]`,
			extra: `"runtime":{"http":{"secrets":{"backend":"` + secretHost + `"}}}`,
			want: []map[string]any{
				{"nodeId": "fetch", "action": "http.request", "resource": redact.Marker, "decision": "allow", "source": "default", "preflight": false},
			},
		},
		{
			name:  "a secret in a denied host is redacted in the reason and the failure",
			nodes: `[{"id":"fetch","type":"t_http","with":{"url":"https://${{ secrets.backend }}/x"}}]`,
			extra: `"permissions":["http:api.example.com"],"runtime":{"http":{"secrets":{"backend":"` + secretHost + `"}}}`,
			want: []map[string]any{
				{"nodeId": "fetch", "action": "http.request", "resource": redact.Marker, "decision": "deny", "source": "permissions", "preflight": false},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			h := newGateHarness()
			e := gateEngine(h, DefaultLimits())
			e.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
			gateRun(t, e, h, gateBody(tt.nodes, tt.extra))

			var got []map[string]any
			sc := bufio.NewScanner(bytes.NewReader(logs.Bytes()))
			for sc.Scan() {
				var line map[string]any
				if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
					t.Fatalf("log line %q: %v", sc.Text(), err)
				}
				if line["msg"] != "permission decision" {
					continue
				}
				if line["executionId"] != "exec-gate" || line["level"] != "INFO" || line["reason"] == "" {
					t.Errorf("log line %s lacks the execution id, level or reason", sc.Text())
				}
				for _, k := range []string{"time", "level", "msg", "executionId", "reason"} {
					delete(line, k)
				}
				got = append(got, line)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decision log lines:\n  %v\nwant:\n  %v", got, tt.want)
			}
			for name, b := range map[string][]byte{"log": logs.Bytes(), "events": h.buf.Bytes()} {
				for _, leak := range []string{"ARGUMENT-SENTINEL", secretHost} {
					if bytes.Contains(b, []byte(leak)) {
						t.Errorf("%s contain %q", name, leak)
					}
				}
			}
		})
	}
}

// TestStaticActionDeclaredOnce: a node declaring the same action twice (an
// agent naming a tool in two lists, say) is decided and audited once; hosts
// are compared normalized.
func TestStaticActionDeclaredOnce(t *testing.T) {
	tests := []struct {
		name    string
		declare [][2]string
		want    []staticAction
	}{
		{"one", [][2]string{{protocol.ActionToolCall, "a/b"}}, []staticAction{{protocol.ActionToolCall, "a/b"}}},
		{"twice", [][2]string{{protocol.ActionToolCall, "a/b"}, {protocol.ActionToolCall, "a/b"}}, []staticAction{{protocol.ActionToolCall, "a/b"}}},
		{"two hosts spelled as one", [][2]string{{protocol.ActionHTTPRequest, "API.example.com:443"}, {protocol.ActionHTTPRequest, "api.example.com."}},
			[]staticAction{{protocol.ActionHTTPRequest, "api.example.com"}}},
		{"same resource, two actions", [][2]string{{protocol.ActionModelInvoke, "x"}, {protocol.ActionWorkflowRun, "x"}},
			[]staticAction{{protocol.ActionModelInvoke, "x"}, {protocol.ActionWorkflowRun, "x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Compiler{n: &node{}}
			for _, d := range tt.declare {
				c.StaticAction(d[0], d[1])
			}
			if !slices.Equal(c.n.static, tt.want) {
				t.Errorf("static = %v, want %v", c.n.static, tt.want)
			}
		})
	}
}

// TestGateProbeIsBounded: a child workflow that names itself many times
// (each call guarded by a `when`) is probed once per depth, and the consents
// it needs are listed once, however many paths lead to them; without this
// preflight would walk fan-out^maxChildDepth graphs.
func TestGateProbeIsBounded(t *testing.T) {
	tests := []struct {
		name     string
		fanOut   int
		maxDepth int
	}{
		{"fan-out 1", 1, 8},
		{"fan-out 3, shallow", 3, 4},
		{"fan-out 16", 16, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var nodes []string
			for i := range tt.fanOut {
				nodes = append(nodes, fmt.Sprintf(`{"id":"self%d","type":"workflow","when":"false","with":{"workflow":"c"}}`, i))
			}
			nodes = append(nodes, `{"id":"page","type":"t_tool","with":{"toolset":"pager","tool":"page_oncall"}}`,
				`{"id":"ack","type":"t_tool","with":{"toolset":"pager","tool":"ack"}}`)
			child := `{"id":"c","nodes":[` + strings.Join(nodes, ",") + `]}`
			body := gateBody(`[{"id":"call","type":"workflow","with":{"workflow":"c"}}]`, gatePolicies+`,"consentAvailable":true`, child)
			h := newGateHarness()
			limits := DefaultLimits()
			limits.MaxChildDepth = tt.maxDepth
			req, err := protocol.DecodeRequest([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			x, err := gateEngine(h, limits).Prepare(req)
			if err != nil {
				t.Fatal(err)
			}
			p := &prober{r: &run{x: x, id: "exec-gate", sink: h}, memo: map[probeKey][]permission.Decision{}}
			// Unbounded, the probe would not end in any useful time: give
			// up on it instead of hanging the package.
			done := make(chan []permission.Decision, 1)
			go func() { done <- p.graph(x.children["c"], 1) }()
			var got []permission.Decision
			select {
			case got = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("probing %d self-calls down to depth %d did not finish in 10s", tt.fanOut, tt.maxDepth)
			}
			var reqs []string
			for _, d := range got {
				reqs = append(reqs, d.Action+" "+d.Resource)
			}
			if want := []string{"tool.call pager/page_oncall", "tool.call pager/ack"}; !slices.Equal(reqs, want) {
				t.Errorf("consents %v, want %v", reqs, want)
			}
			if len(p.memo) != tt.maxDepth {
				t.Errorf("%d graphs probed, want %d (one per depth 1..%d)", len(p.memo), tt.maxDepth, tt.maxDepth)
			}
			if len(h.log()) != 0 {
				t.Errorf("probing emitted %d events, want none", len(h.log()))
			}
		})
	}
}
