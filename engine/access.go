package engine

import (
	"context"
	"time"

	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/sandbox"
	"github.com/runnerd/lambda-runner/protocol"
)

// This file holds the accessors the built-in kinds use to reach the
// execution behind a Compiler or a Call, so that no kind depends on how the
// run or the preparation is laid out.

// services returns what preparation learned about the request's runtime
// services.
func (c *Compiler) services() *prepServices {
	c.p.impure = true
	return &c.p.svc
}

// missingHint is prep.missingHint: the end of a message about name, not
// among what the runtime payload holds.
func (c *Compiler) missingHint(what, name string, names func() []string) string {
	c.p.impure = true
	return c.p.missingHint(what, name, names)
}

// hasRole reports whether a statically named model role resolves (see
// prep.lookupRole).
func (c *Compiler) hasRole(role string) bool {
	c.p.impure = true
	return c.p.lookupRole(role)
}

// childDocs returns the request's child workflows by id.
func (c *Compiler) childDocs() map[string]*document.Document {
	c.p.impure = true
	return c.p.childDocs
}

// subgraph compiles the nodes of a with field as a graph nested in this
// node (a map's iterations), nil when they are invalid (and reported).
func (c *Compiler) subgraph(field string, docs []document.Node) *graph {
	return c.p.compileGraph(c.Path(field), docs, c.n.sight, true)
}

// templateIn compiles a with field in another expression scope than the
// node's (a map's output, which sees the sub-graph's nodes).
func (c *Compiler) templateIn(field string, v any, sc *lang.Scope) lang.Template {
	return lang.CompileTemplate(c.Path(field), v, sc, c.p.d)
}

// Redact returns s with every secret of the execution masked, for text a
// step passes on before the engine would redact it (an agent tells its
// model why a tool failed).
func (c *Call) Redact(s string) string { return c.r.x.redact.String(s) }

// scrub returns the execution's redactor, which also scrubs what the
// execution receives.
func (c *Call) scrub() *scrubber { return c.r.x.redact }

// services returns the running execution's services.
func (c *Call) services() *runServices { return c.r.svc }

// codeRunner returns the engine's sandbox for code nodes.
func (c *Call) codeRunner() CodeRunner { return c.r.x.e.Services.Code }

// sandboxOptions are the attempt's evaluation options: the execution owns
// it (one execution holds at most its share of the workers), what is
// left of timeoutMs bounds it from when a worker starts on it, and the
// wait for the worker is recorded for the attempt's events.
func (c *Call) sandboxOptions() sandbox.EvalOptions {
	return sandbox.EvalOptions{Owner: c.r, Timeout: c.workTimeout, Started: func(waited time.Duration) { c.queued = waited }}
}

// usage returns the execution's usage counters.
func (c *Call) usage() *usageCounters { return &c.r.usage }

// httpSecrets returns the request's secrets for http nodes, by name.
func (c *Call) httpSecrets() map[string]protocol.Secret { return c.r.x.req.Runtime.HTTP.Secrets }

// suspending reports whether the execution waits for a consent: a
// composite starts nothing more.
func (c *Call) suspending() bool { return c.r.suspended.Load() }

// childWorkflow returns the compiled child workflow id names, nil when the
// request has none by that id.
func (c *Call) childWorkflow(id string) *graph { return c.r.x.children[id] }

// depth returns the child workflow nesting of the node's graph.
func (c *Call) depth() int { return c.gr.depth }

// runGraph runs g inside the node, as a map iteration or a child workflow
// (prefix and depth as in newGraphRun), and returns the finished run. It
// fails as the graph did, or with errSuspended when the execution is
// suspending.
func (c *Call) runGraph(ctx context.Context, g *graph, sc *scope, prefix string, depth int) (*graphRun, error) {
	gr := c.r.newGraphRun(g, sc, prefix, depth)
	if err := gr.execute(ctx); err != nil {
		return nil, err
	}
	if c.suspending() {
		return nil, errSuspended
	}
	return gr, nil
}
