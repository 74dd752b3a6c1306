package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/runnerd/lambda-runner/engine/permission"
	"github.com/runnerd/lambda-runner/protocol"
)

// Permit is the proof that the decider allowed one action on one resource
// for one node. The runtime services take a Permit and refuse one that does
// not cover what they are asked to do, so a side effect that skips the
// decider cannot be written by accident: the only way to get a Permit is
// Call.Authorize.
type Permit struct {
	action, resource string
	nodeID           string
}

// Covers reports whether the permit allows action on resource.
func (p Permit) Covers(action, resource string) bool {
	return p.action != "" && p.action == action && p.resource == resource
}

func (p Permit) check(action, resource string) error {
	if !p.Covers(action, resource) {
		// A programming error, never a user's: fail the node loudly.
		return Errorf(protocol.CodePermissionDenied, "internal: %s %s attempted without a permit", action, resource)
	}
	return nil
}

// staticAction is an action a node names in its configuration, decided in
// preflight before any node runs.
type staticAction struct{ action, resource string }

// StaticAction declares that the node will perform action on resource
// whenever it runs (a literal tool, role, host or child workflow), so it is
// decided right after acceptance, before any side effect.
func (c *Compiler) StaticAction(action, resource string) {
	if action == protocol.ActionHTTPRequest {
		resource = permission.NormalizeHost(resource)
	}
	c.n.static = append(c.n.static, staticAction{action, resource})
}

// decisions remembers preflight decisions so that the first use of each at
// run time does not decide (and audit) a second time.
type decisions struct {
	mu      sync.Mutex
	pending map[string]permission.Decision
}

func decisionKey(nodeID, action, resource string) string {
	return nodeID + "\x00" + action + "\x00" + resource
}

func (d *decisions) take(key string) (permission.Decision, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dec, ok := d.pending[key]
	if ok {
		delete(d.pending, key)
	}
	return dec, ok
}

func (d *decisions) put(key string, dec permission.Decision) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending == nil {
		d.pending = map[string]permission.Decision{}
	}
	d.pending[key] = dec
}

// Authorize decides action on resource for this node, audits the decision
// (a permission.decision event and a log line) and returns a Permit when it
// is allowed. A denial is a PERMISSION_DENIED error; a consent decision
// suspends the node (the error must be returned from Step.Run as is).
func (c *Call) Authorize(ctx context.Context, action, resource string) (Permit, error) {
	if action == protocol.ActionHTTPRequest {
		resource = permission.NormalizeHost(resource)
	}
	dec, ok := c.r.pre.take(decisionKey(c.ID, action, resource))
	if !ok {
		dec = c.r.decide(c.ID, action, resource)
	}
	return c.r.outcome(c.ID, dec)
}

// decide asks the decider and audits the answer.
func (r *run) decide(nodeID, action, resource string) permission.Decision {
	dec := r.x.decider.Decide(action, resource)
	_ = r.sink.Emit(&protocol.PermissionDecision{
		NodeID: nodeID, Action: dec.Action, Resource: dec.Resource,
		Decision: string(dec.Outcome), Source: string(dec.Source), Reason: dec.Reason,
	})
	r.x.e.Logger.Info("permission decision", "executionId", r.id, "nodeId", nodeID,
		"action", dec.Action, "resource", dec.Resource, "decision", string(dec.Outcome),
		"source", string(dec.Source))
	return dec
}

func (r *run) outcome(nodeID string, dec permission.Decision) (Permit, error) {
	switch dec.Outcome {
	case permission.Allow:
		return Permit{action: dec.Action, resource: dec.Resource, nodeID: nodeID}, nil
	case permission.Consent:
		return Permit{}, &suspended{action: dec.Action, resource: dec.Resource}
	}
	return Permit{}, &NodeError{Code: protocol.CodePermissionDenied, Message: fmt.Sprintf("%s %s denied: %s", dec.Action, dec.Resource, dec.Reason)}
}

// preflight decides every static action of the top-level graph before any
// node runs. When one needs consent, every such node is suspended and
// nothing runs: the server asks once and relaunches with the grants. Other
// decisions are kept for the node's first use.
func (r *run) preflight(gr *graphRun) {
	for _, n := range gr.g.nodes {
		for _, a := range n.static {
			dec := r.decide(n.id, a.action, a.resource)
			if dec.Outcome == permission.Consent {
				r.suspend(n.id, n.typ, &suspended{action: dec.Action, resource: dec.Resource})
				continue
			}
			r.pre.put(decisionKey(n.id, a.action, a.resource), dec)
		}
	}
}
