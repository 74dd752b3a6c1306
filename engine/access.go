package engine

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"time"

	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/sandbox"
	"github.com/runnerd/lambda-runner/engine/schema"
	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/engine/services"
	"github.com/runnerd/lambda-runner/protocol"
)

// This file holds the accessors the kinds use to reach the execution
// behind a Compiler or a Call, so that no kind depends on how the run or
// the preparation is laid out. The built-in kinds outside the engine
// (engine/nodes) use the exported ones; calls.go holds the calls a step
// makes outside the runner.

// HTTPPolicy returns the request's runtime.http.policy, for checks of a
// host or a method known before the run. ok is false when the policy is
// invalid: its problems are reported already.
func (c *Compiler) HTTPPolicy() (p protocol.HTTPPolicy, ok bool) {
	svc := c.services()
	return svc.Policy, svc.HTTP != nil
}

// LookupRole reports whether a statically named model role resolves in
// the execution's model table, itself or through the general role. When
// it does not, where names the table it was looked up in, followed by a
// hint at the roles the table holds, to end a message with.
func (c *Compiler) LookupRole(role string) (ok bool, where string) {
	if c.hasRole(role) {
		return true, ""
	}
	svc := c.services()
	return false, svc.ModelsFrom + c.missingHint("roles", role, svc.Models.Roles)
}

// LookupToolset reports whether the request's runtime.toolsets defines
// the toolset name. When it does not, hint ends a message with the names
// it does define that come close.
func (c *Compiler) LookupToolset(name string) (ok bool, hint string) {
	svc := c.services()
	if svc.Toolsets[name] {
		return true, ""
	}
	return false, c.missingHint("toolsets", name, func() []string { return sortedKeys(svc.Toolsets) })
}

// JSONSchema compiles the JSON Schema raw, written at with.field (a model
// node's json), within the limits on an author's schema. It returns the
// schema and its text, or nils when it has problems, which it reports.
func (c *Compiler) JSONSchema(field string, raw any) (*schema.Schema, json.RawMessage) {
	b, err := json.Marshal(raw)
	if err == nil && !c.p.schemaWithinLimits(c.Path(field), b) {
		return nil, nil
	}
	var sch *schema.Schema
	if err == nil {
		sch, err = compileSchemaText(b)
	}
	if err != nil {
		document.SchemaErrors(c.Path(field), err, c.p.d)
		return nil, nil
	}
	return sch, b
}

// MatchSchema checks v against sch as a request's values are checked, and
// returns an error whose message lists what does not match, each at its
// path below path; nil when v matches.
func MatchSchema(path string, sch *schema.Schema, v any) error {
	if d := (&document.Problems{}); !document.SchemaDetails(path, sch, v, d, &lang.Hints{}) {
		return errors.New(d.Err().Error())
	}
	return nil
}

// CheckCode checks the syntax of a code node's body with a sandbox
// worker (Services.Code, which the caller has checked is set), within
// the request's budget for its checks (codeCheckBudget). When the runner
// could not check it in time (sandbox.ErrBusy) it records so itself at
// with.field, a problem of the runner's (503, Retry-After), and returns
// the error; every other error, a *sandbox.Error of the code's, is the
// caller's to report.
func (c *Compiler) CheckCode(field, code string) error {
	err := c.p.checkCode(code)
	if errors.Is(err, sandbox.ErrBusy) {
		c.p.d.SetBusy(c.Path(field), "node %q: the code could not be checked within %v: %v; try again", c.NodeID(), codeCheckBudget(c.p.limits), err)
	}
	return err
}

// codeCheckBudget bounds the time all the syntax checks of one request
// take together, from the first: 5 s, or a quarter of the longest
// execution when that is shorter (a function with a short timeout keeps
// most of it to run). Checks past it are not made: the request is
// answered 503 with Retry-After (ErrBusy), and the bodies checked by then
// are remembered valid, so that the request sent again gets further.
func codeCheckBudget(l Limits) time.Duration {
	return min(5*time.Second, l.MaxDuration/4)
}

// checkCode checks a code body's syntax within the request's budget for
// its checks (codeCheckBudget), which its first check starts.
func (p *prep) checkCode(code string) error {
	if p.checkBy.IsZero() {
		p.checkBy = time.Now().Add(codeCheckBudget(p.limits))
	}
	ctx, cancel := context.WithDeadline(context.Background(), p.checkBy)
	defer cancel()
	return p.e.Services.Code.Check(ctx, code)
}

// services returns what preparation learned about the request's runtime
// services.
func (c *Compiler) services() *services.Request {
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
// services.Request.LookupRole).
func (c *Compiler) hasRole(role string) bool {
	c.p.impure = true
	return c.p.svc.LookupRole(role)
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

// RedactValue returns v, a decoded JSON value received from outside,
// with every string (object keys too) redacted; a value without a secret
// is returned as it is, shared.
func (c *Call) RedactValue(v any) any { return c.r.x.redact.Value(v) }

// RedactJSON returns JSON text received from outside with every secret
// of the execution masked, in any form the redactor knows.
func (c *Call) RedactJSON(b json.RawMessage) json.RawMessage { return c.r.x.redact.Raw(b) }

// scrub returns the execution's redactor, which also scrubs what the
// execution receives.
func (c *Call) scrub() *secrets.Scrubber { return c.r.x.redact }

// EvalSecret evaluates a template that may read secrets
// (Compiler.SecretTemplate), by the secret rule: first with each of the
// secrets' two shadows (every secret as long as the longest may be),
// whose values go to sh and which decide whether it fails, so that
// neither failing nor what it costs depends on the secrets' lengths; then
// with the secrets. Unless win is nil, win gets the template's values with
// the secrets' two windows (each secret as long as it is), for
// LearnSecrets. A template that reads no secret is evaluated once, as
// Eval does, and sh and win are left as they are.
func (c *Call) EvalSecret(t lang.Template, sh, win *[2]any) (any, error) {
	if !secrets.ReadsSecrets(t) {
		return c.Eval(t)
	}
	with := func(values map[string]any) (any, error) {
		ev := newEvaluator(c.evalContext(), c.sc, t, c.n.sight)
		ev.SetSecrets(values)
		return ev.Eval(t)
	}
	for i := range sh {
		v, err := with(c.r.x.shadows[i])
		if err != nil {
			return nil, err
		}
		sh[i] = v
	}
	v, err := c.Eval(t)
	if err != nil || win == nil {
		return v, err
	}
	if reflect.DeepEqual(sh[0], sh[1]) {
		// The secrets reach nothing of the value (`'qT' ?? secrets.k`).
		*win = *sh
		return v, nil
	}
	for i := range win {
		// As long as the secrets, so no more costly: what the shadows
		// pass, these pass.
		w, err := with(c.r.x.windows[i])
		if err != nil {
			return nil, err
		}
		win[i] = w
	}
	return v, nil
}

// SentString is a string about to be sent that a template reading
// secrets built, beside what the same template built with the secrets'
// two windows and two shadows (EvalSecret).
type SentString struct {
	Value            string
	Windows, Shadows [2]string
}

// LearnSecrets adds to the execution's redactor the part of each value
// that its secrets decided, so that an echo of it, in any form the
// redactor knows, is scrubbed like the secrets. It is called before the
// values are sent. Past the caps on derived values (counted on the
// shadows, whatever the secrets' lengths) it fails with LIMIT_EXCEEDED
// and nothing is learned.
func (c *Call) LearnSecrets(values []SentString) error {
	var out []secrets.Derived
	for _, v := range values {
		if d := secrets.DerivedPart(v.Value, v.Windows[0], v.Windows[1], v.Shadows[0], v.Shadows[1]); d.Value != "" || d.Key != "" {
			out = append(out, d)
		}
	}
	return c.scrub().Learn(out...)
}

// services returns the running execution's services.
func (c *Call) services() *services.Run { return c.r.svc }

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

// HTTPSecrets returns the request's secrets for http nodes, by name: a
// step binds a request to those of them it carries (egress.Request.Bound).
func (c *Call) HTTPSecrets() map[string]protocol.Secret { return c.r.x.req.Runtime.HTTP.Secrets }

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
