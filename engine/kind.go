package engine

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/protocol"
)

// Kind is a node type. Prepare checks one node of the type before
// acceptance, reporting problems through the Compiler, and returns the Step
// that runs it (nil when the node is invalid).
type Kind interface {
	Prepare(c *Compiler) Step
}

// Step runs one attempt of a node. call.With holds the node's evaluated
// configuration. The output must be JSON-marshalable.
type Step interface {
	Run(ctx context.Context, call *Call) (any, error)
}

// composite is a Step that runs nodes of its own: a map's iterations, a
// child workflow. The scheduler gives it no concurrency slot (its inner
// nodes take theirs), and preflight probes the nodes it will run for the
// consents they need.
type composite interface {
	Step
	// subgraph returns the graph the step runs at its own child depth,
	// known at preparation (a map's sub-graph), or nil when what it runs is
	// only known from an action (a child workflow, named by workflow.run).
	subgraph() *graph
}

// PureKind is a Kind whose Prepare reads nothing of the request but the
// node's document and the engine's configuration, so that what it
// compiles may be kept for the next request with the same document
// (plancache.go). Pure reports whether it is. The Compiler methods that
// read the runtime payload mark the preparation impure as they read it
// anyway; a Kind that is not a PureKind may read anything.
type PureKind interface {
	Kind
	Pure() bool
}

// Specified is implemented by a Kind that describes its with once
// (document.With): the document's check of a node's with and its
// definition in docs/workflow.schema.json (go generate) both come from
// it. A kind that is not Specified has its with checked by its Prepare
// alone.
type Specified interface {
	With() *document.With
}

// Availability is implemented by a Kind that runs only on an engine
// configured for it (a code node needs Services.Code): Engine.NodeTypes
// leaves it out when Available reports false.
type Availability interface {
	Available(s *Services) bool
}

// WorkTimed is a Step that applies its node's timeoutMs itself, from when
// its work starts rather than from the attempt's start, because it may
// first wait its turn for a shared resource (a code node, for a sandbox
// worker: see Call.Code). The wait is bounded by the execution's deadline
// and its cancellation. TimesItsWork does nothing: it marks the Step.
type WorkTimed interface {
	Step
	TimesItsWork()
}

// StepFunc adapts a function to Step.
type StepFunc func(ctx context.Context, call *Call) (any, error)

// Run calls f.
func (f StepFunc) Run(ctx context.Context, call *Call) (any, error) { return f(ctx, call) }

// Compiler is what a Kind sees of the node it prepares.
type Compiler struct {
	p   *prep
	g   *graph
	n   *node
	doc *document.Node
	sc  *lang.Scope
}

// NodeID returns the node's id.
func (c *Compiler) NodeID() string { return c.n.id }

// Path returns the request path of a with field ("" for with itself).
func (c *Compiler) Path(field string) string {
	if field == "" {
		return c.n.path + ".with"
	}
	return c.n.path + ".with." + field
}

// Raw returns a with field as written.
func (c *Compiler) Raw(field string) (any, bool) {
	v, ok := c.doc.With[field]
	return v, ok
}

// Literal returns a with field that is a plain string without templates:
// a statically known role, toolset, tool or URL.
func (c *Compiler) Literal(field string) (string, bool) {
	s, ok := c.doc.With[field].(string)
	if !ok || strings.Contains(s, "${{") {
		return "", false
	}
	return s, true
}

// Errorf records a problem with a with field.
func (c *Compiler) Errorf(field, format string, args ...any) {
	c.p.d.Addf(c.Path(field), format, args...)
}

// RuntimeErrorf records a problem with a field that names something the
// request's runtime payload must declare (a toolset, a model role, a child
// workflow). Checked as a bare document, without a request, it is a warning.
func (c *Compiler) RuntimeErrorf(field, format string, args ...any) {
	c.p.d.NeedsRuntimef(c.Path(field), format, args...)
}

// With compiles the node's with, less the given fields, as the value the
// scheduler evaluates into Call.With before each attempt.
func (c *Compiler) With(except ...string) {
	// lang.CompileTemplateAt does not keep or change what it reads: with nothing
	// left out, the document's own map serves.
	m := c.doc.With
	if len(except) > 0 {
		m = make(map[string]any, len(c.doc.With))
		for k, v := range c.doc.With {
			if !contains(except, k) {
				m[k] = v
			}
		}
	}
	c.n.with = lang.CompileTemplateAt(c.n.path, ".with", m, c.sc, c.p.d)
}

// WithValue compiles the node's with as With does; when with holds value
// alone (the usual set node), it compiles that member instead, so that
// evaluating it builds no object around the value: Call.With is then
// with.value itself. It reports which it did.
func (c *Compiler) WithValue() bool {
	c.With()
	if m, ok := c.n.with.Member("value"); ok {
		c.n.with, c.n.valueOnly = m, true
	}
	return c.n.valueOnly
}

// Template compiles one with field for the Step to evaluate itself with
// Call.Eval (for fields evaluated in another scope or later).
func (c *Compiler) Template(field string) lang.Template {
	v, ok := c.doc.With[field]
	if !ok {
		return lang.Template{}
	}
	return lang.CompileTemplate(c.Path(field), v, c.sc, c.p.d)
}

// SecretTemplate is Template for the fields of an http node that may use
// secrets.NAME.
func (c *Compiler) SecretTemplate(field string) lang.Template {
	v, ok := c.doc.With[field]
	if !ok {
		return lang.Template{}
	}
	c.p.impure = true // the request's secret names
	sc := secrets.Scope(*c.sc, c.p.secretNames, c.NodeID())
	return lang.CompileTemplate(c.Path(field), v, &sc, c.p.d)
}

// Request returns the execution request, for static checks against the
// runtime payload.
func (c *Compiler) Request() *protocol.ExecutionRequest {
	c.p.impure = true
	return c.p.req
}

// Engine returns the engine, for its configuration.
func (c *Compiler) Engine() *Engine { return c.p.e }

// Limits returns the limits the execution is prepared under, defaults
// applied.
func (c *Compiler) Limits() Limits { return c.p.limits }

// Call is one attempt of a node, as its Step sees it.
type Call struct {
	// ID is the node's id in events: "each[3].summarize" inside a map.
	ID string
	// Type is the node's type.
	Type string
	// Attempt counts from 1.
	Attempt int
	// With is the node's evaluated configuration (see Compiler.With);
	// for a set node of with.value alone, that value (node.valueOnly).
	With any

	r   *run
	gr  *graphRun
	n   *node
	sc  *scope
	ctx context.Context // the attempt's, bounding Eval
	ev  lang.Evaluator  // evaluated with; allocated with the call

	// logs are a code node's console.log lines, for node.completed.
	logs []string
	// workTimeout is what is left of the node's timeoutMs for a Step that
	// times its work itself (WorkTimed), 0 for none; queued is how long
	// the attempt waited for a sandbox worker, for its events.
	workTimeout time.Duration
	queued      time.Duration
}

// Eval evaluates a template compiled by Compiler.Template in the node's
// scope.
func (c *Call) Eval(t lang.Template) (any, error) {
	ev := newEvaluator(c.evalContext(), c.sc, t, c.n.sight)
	if t.UsesSecrets() {
		ev.SetSecrets(c.r.x.secretValues)
	}
	return ev.Eval(t)
}

// evalContext is the context evaluations of the call stop with.
func (c *Call) evalContext() context.Context {
	if c.ctx == nil {
		return context.Background()
	}
	return c.ctx
}

// WithMap returns Call.With as an object (empty when with was absent).
func (c *Call) WithMap() map[string]any {
	m, _ := c.With.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m
}

// ExecutionID returns the id of the execution the call belongs to.
func (c *Call) ExecutionID() string { return c.r.id }

// Limits returns the limits the execution runs under, defaults applied.
func (c *Call) Limits() Limits { return c.r.x.limits }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// JSONType names a value's JSON type for messages ("a string", "an
// object"), never its content.
func JSONType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case float64, int, int64, float32, int32, uint, uint64:
		return "a number"
	case json.Number:
		// What the decoder keeps of a number out of float64's range.
		return "a number out of range"
	}
	// A value of expr's own (a date, a duration) is named as the
	// expression language names it, never by its Go type.
	return "a " + lang.TypeName(v)
}
