package engine

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/runnerd/lambda-runner/engine/permission"
	"github.com/runnerd/lambda-runner/protocol"
)

// This file is the engine's permission gate: the only place that asks the
// decider (engine/permission). Every side effect of an execution passes
// here first:
//
//   - Call.Authorize decides one action for one node attempt, audits it and
//     returns nil (allowed), a suspension or a PERMISSION_DENIED error;
//   - preflight decides the actions nodes name statically (Compiler.
//     StaticAction) right after acceptance, before any node runs, so that a
//     consent suspends the execution before the first side effect.
//
// docs/permissions.md is the operator's version of these rules.

// staticAction is an action a node names in its configuration, decided in
// preflight before any node runs.
type staticAction struct{ action, resource string }

// StaticAction declares that the node will perform action on resource
// whenever it runs (a literal tool, role, host or child workflow), so that it
// is decided right after acceptance, before any side effect. Declaring the
// same action twice declares it once. The node must still call
// Call.Authorize before the action: the preflight decision is what that call
// returns the first time, without deciding (or auditing) again.
func (c *Compiler) StaticAction(action, resource string) {
	if action == protocol.ActionHTTPRequest {
		resource = permission.NormalizeHost(resource)
	}
	a := staticAction{action, resource}
	if !slices.Contains(c.n.static, a) {
		c.n.static = append(c.n.static, a)
	}
}

// decisions holds the preflight decisions of top-level nodes until each is
// used: the first Authorize of the node for the same action and resource
// takes it instead of deciding again, so that one side effect has exactly
// one permission.decision event. Any later call (another request of the
// same node, a retry) finds nothing and decides afresh.
type decisions struct {
	mu      sync.Mutex
	pending map[decisionKey]permission.Decision
}

type decisionKey struct{ nodeID, action, resource string }

func (d *decisions) take(key decisionKey) (permission.Decision, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dec, ok := d.pending[key]
	if ok {
		delete(d.pending, key)
	}
	return dec, ok
}

func (d *decisions) put(key decisionKey, dec permission.Decision) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending == nil {
		d.pending = map[decisionKey]permission.Decision{}
	}
	d.pending[key] = dec
}

// Authorize decides action on resource for this node and returns nil when
// it is allowed. Each call stands for one side effect (one request,
// one tool call, one model invocation): call it immediately before each,
// every time, retries included. The decision is audited (a
// permission.decision event and a log line) unless preflight already did
// for this node, in which case the first call returns that decision.
//
// A denial is a PERMISSION_DENIED *NodeError carrying the decider's reason.
// A consent returns an error that suspends the node: Step.Run must return it
// (wrapped or not) without acting. Any error means the side effect must not
// happen.
func (c *Call) Authorize(ctx context.Context, action, resource string) error {
	if action == protocol.ActionHTTPRequest {
		resource = permission.NormalizeHost(resource)
	}
	dec, ok := c.r.pre.take(decisionKey{c.ID, action, resource})
	if !ok {
		dec = c.r.x.decider.Decide(action, resource)
		c.r.audit(ctx, c.ID, dec, false)
	}
	return c.r.outcome(dec)
}

// audit reports a decision as a permission.decision event and a log line,
// both with secrets redacted (a templated URL may put a secret in a host).
// The line is structured and names what was decided, never the action's
// arguments.
func (r *run) audit(ctx context.Context, nodeID string, dec permission.Decision, preflight bool) {
	resource, reason := r.x.redact.String(dec.Resource), r.x.redact.String(dec.Reason)
	_ = r.sink.Emit(&protocol.PermissionDecision{
		NodeID: nodeID, Action: dec.Action, Resource: resource,
		Decision: string(dec.Outcome), Source: string(dec.Source), Reason: reason,
	})
	r.x.e.Logger.LogAttrs(ctx, slog.LevelInfo, "permission decision",
		slog.String("executionId", r.id),
		slog.String("nodeId", nodeID),
		slog.String("action", dec.Action),
		slog.String("resource", resource),
		slog.String("decision", string(dec.Outcome)),
		slog.String("source", string(dec.Source)),
		slog.String("reason", reason),
		slog.Bool("preflight", preflight),
	)
}

// outcome turns a decision into what Authorize returns.
func (r *run) outcome(dec permission.Decision) error {
	switch dec.Outcome {
	case permission.Allow:
		return nil
	case permission.Consent:
		return &suspended{action: dec.Action, resource: dec.Resource}
	}
	// Redacted here too: a step may pass the message on (an agent tells
	// its model why a tool was refused) before the engine would redact it.
	msg := fmt.Sprintf("%s %s denied: %s", dec.Action, dec.Resource, dec.Reason)
	return &NodeError{Code: protocol.CodePermissionDenied, Message: r.x.redact.String(msg)}
}

// preflight runs right after acceptance, before any node, and finds every
// consent the execution will need for what its nodes name statically, so
// that the server can ask once and a suspension costs no side effect (the
// runner is stateless: a relaunch repeats whatever already ran).
//
// Each top-level node's static actions are decided and audited under the
// node's id, whether or not the node will run (a `when` is not evaluated
// yet): a consent suspends the node, any other decision waits for the node's
// first Authorize.
//
// The nodes a top-level node runs inside itself (a map's sub-graph, a child
// workflow it names literally and may run, and so on down) have ids that are
// not known yet (a map iteration's index) or that would be decided once per
// run, so they are only probed: a consent among their static actions is
// audited under the top-level node and suspends it; allows and denials are
// not emitted here, since the nested node decides (and audits) them itself
// when it runs, under its own id.
//
// When anything suspends, Run starts no node at all.
func (r *run) preflight(gr *graphRun) {
	ctx := context.Background()
	p := &prober{r: r, memo: map[probeKey][]permission.Decision{}}
	for _, n := range gr.g.nodes {
		if len(n.static) == 0 && n.inner == nil {
			continue // nothing to decide: most nodes of a large graph
		}
		var nested []permission.Decision
		asked := map[staticAction]bool{} // consents requested for n
		for _, a := range n.static {
			if !p.runsAt(a, 0) {
				continue
			}
			dec := r.x.decider.Decide(a.action, a.resource)
			r.audit(ctx, n.id, dec, true)
			switch dec.Outcome {
			case permission.Consent:
				asked[staticAction{dec.Action, dec.Resource}] = true
				r.suspend(n.id, n.typ, &suspended{action: dec.Action, resource: dec.Resource})
			default:
				r.pre.put(decisionKey{n.id, a.action, a.resource}, dec)
			}
			if dec.Allowed() {
				nested = append(nested, p.child(a, 0)...)
			}
		}
		nested = append(nested, p.inner(n, 0)...)
		for _, dec := range nested {
			req := staticAction{dec.Action, dec.Resource}
			if asked[req] {
				continue
			}
			asked[req] = true
			r.audit(ctx, n.id, dec, true)
			r.suspend(n.id, n.typ, &suspended{action: dec.Action, resource: dec.Resource})
		}
	}
}

// prober finds the consents the nested nodes of a graph need, without
// auditing anything (see preflight).
type prober struct {
	r    *run
	memo map[probeKey][]permission.Decision
}

// probeKey is a graph run at a child workflow depth: the depth decides
// which of its workflow nodes may still run their child.
type probeKey struct {
	g     *graph
	depth int
}

// runsAt reports whether a node at child depth would reach action a: a
// workflow node fails with LIMIT_EXCEEDED before deciding when its child
// would nest deeper than maxChildDepth.
func (p *prober) runsAt(a staticAction, depth int) bool {
	return a.action != protocol.ActionWorkflowRun || depth+1 <= p.r.x.limits.MaxChildDepth
}

// graph returns the consent decisions that nodes of g, run at depth, or
// the nodes they run inside themselves, need for their static actions, each
// request once. Results are memoized per graph and depth, so that a child
// workflow named by many nodes (or by itself, down to maxChildDepth) is
// probed once per depth.
func (p *prober) graph(g *graph, depth int) []permission.Decision {
	key := probeKey{g, depth}
	if out, ok := p.memo[key]; ok {
		return out
	}
	// A graph cannot reach itself at the same depth (map sub-graphs are
	// nested in their node, a child is one level deeper), so an entry is
	// never read before it is complete.
	var out []permission.Decision
	seen := map[staticAction]bool{}
	add := func(decs []permission.Decision) {
		for _, d := range decs {
			if a := (staticAction{d.Action, d.Resource}); !seen[a] {
				seen[a] = true
				out = append(out, d)
			}
		}
	}
	for _, n := range g.nodes {
		for _, a := range n.static {
			if !p.runsAt(a, depth) {
				continue
			}
			dec := p.r.x.decider.Decide(a.action, a.resource)
			switch dec.Outcome {
			case permission.Consent:
				add([]permission.Decision{dec})
			case permission.Allow:
				add(p.child(a, depth))
			}
		}
		add(p.inner(n, depth))
	}
	p.memo[key] = out
	return out
}

// child probes the child workflow an allowed workflow.run starts from a
// graph at depth (nothing for any other action).
func (p *prober) child(a staticAction, depth int) []permission.Decision {
	if a.action != protocol.ActionWorkflowRun {
		return nil
	}
	c := p.r.x.children[a.resource]
	if c == nil {
		return nil
	}
	return p.graph(c, depth+1)
}

// inner probes the graph a composite node runs at its own depth (a map's
// sub-graph; nothing for other nodes).
func (p *prober) inner(n *node, depth int) []permission.Decision {
	if n.inner == nil {
		return nil
	}
	sub := n.inner.subgraph()
	if sub == nil {
		return nil
	}
	return p.graph(sub, depth)
}
