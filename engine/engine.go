package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/runnerd/lambda-runner/engine/lang"

	"github.com/runnerd/lambda-runner/engine/egress"
	"github.com/runnerd/lambda-runner/engine/models"
	"github.com/runnerd/lambda-runner/engine/permission"
	"github.com/runnerd/lambda-runner/protocol"
)

// Engine prepares and runs executions. It is safe for concurrent use once
// configured; its zero value is not usable, use New.
type Engine struct {
	// Limits bound every execution; a zero field means its default (see
	// Limits.WithDefaults), read when an execution is prepared.
	Limits Limits
	// Logger receives decisions and failures, never bodies or secrets.
	Logger *slog.Logger
	// Services configures the runtime services of model, agent, tool and
	// http nodes; its zero value means nothing configured.
	Services Services
	// Observer, if set, is told of executions and node attempts (tracing).
	Observer Observer

	kinds map[string]Kind
	// defaultClients serves model calls when Services.Models is nil.
	defaultClients *models.Clients
	// closing counts the toolset closes of finished executions, which run
	// after Run has returned (see run.closeServices).
	// A pointer: an Engine is copied (ServeBatch), and the copy's
	// executions are closed in the same group.
	closing *sync.WaitGroup
}

// WaitClosed waits for the services of the executions that have finished
// to be closed: the goodbyes to their MCP servers, which run after Run has
// returned so that they never hold the response, each within the reserve.
func (e *Engine) WaitClosed() {
	if e.closing != nil {
		e.closing.Wait()
	}
}

// New returns an engine with the built-in node types.
func New(limits Limits) *Engine {
	e := &Engine{Limits: limits, Logger: slog.New(slog.DiscardHandler), kinds: map[string]Kind{}, defaultClients: &models.Clients{}, closing: &sync.WaitGroup{}}
	e.Register("set", setKind{})
	e.Register("fail", failKind{})
	e.Register("map", mapKind{})
	e.Register("workflow", workflowKind{})
	e.Register("model", modelKind{})
	e.Register("agent", agentKind{})
	e.Register("tool", toolKind{})
	e.Register("http", httpKind{})
	e.Register("code", codeKind{})
	return e
}

// Register adds or replaces a node type.
func (e *Engine) Register(name string, k Kind) { e.kinds[name] = k }

// NodeTypes lists the registered node types, sorted; code only when
// Services.Code is set.
func (e *Engine) NodeTypes() []string {
	names := make([]string, 0, len(e.kinds))
	for n, k := range e.kinds {
		if _, ok := k.(codeKind); ok && e.Services.Code == nil {
			continue
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Execution is a request checked and compiled, ready to run once.
type Execution struct {
	e            *Engine
	req          *protocol.ExecutionRequest
	g            *graph
	children     map[string]*graph
	input        any
	trace        bool
	secretValues map[string]any
	redact       *scrubber
	decider      *permission.Decider
	models       *models.Table  // runtime.models, else the deployment's
	http         *egress.Client // this execution's, released by Run
	limits       Limits         // the engine's, defaults applied
	// body is the request body, kept when a map distributes (fanout):
	// each of its child invocations prepares the same request.
	body   []byte
	fanout bool
}

// prep is the state of one Prepare.
type prep struct {
	e           *Engine
	req         *protocol.ExecutionRequest
	d           *detailList
	secretNames map[string]bool
	childDocs   map[string]*document
	children    map[string]*graph
	nodes       int
	svc         prepServices
	limits      Limits           // the engine's, defaults applied
	input       *lang.InputShape // the input schema of the document being compiled
	fanout      bool             // a map distributes (with.distribute)
	tally       lang.Tally       // expressions compiled, against maxExpressions
}

// Prepare checks an execution request before acceptance. The error is a
// *protocol.Invalid listing every problem with its path. PrepareBody also
// checks the body's structure (duplicate keys, nesting).
func (e *Engine) Prepare(req *protocol.ExecutionRequest) (*Execution, error) {
	d := &detailList{}
	x := e.prepare(req, d, true)
	if err := d.err(); err != nil {
		x.discard()
		return nil, err
	}
	return x, nil
}

// prepare runs every check of req, recording problems in d, and returns the
// execution as far as it could be built (nil when no workflow was found).
func (e *Engine) prepare(req *protocol.ExecutionRequest, d *detailList, withInput bool) *Execution {
	p := &prep{e: e, req: req, d: d, limits: e.Limits.WithDefaults(), secretNames: map[string]bool{}, childDocs: map[string]*document{}, children: map[string]*graph{}}
	p.tally.Max = p.limits.MaxExpressions
	for name := range req.Runtime.HTTP.Secrets {
		p.secretNames[name] = true
	}
	var doc *document
	if dd, ok := req.WorkflowValue.(*document); ok {
		doc = checkDocument("workflow", dd, d)
	} else if req.Workflow != nil {
		doc = parseDocument("workflow", req.Workflow, d)
	}
	for i, raw := range req.Runtime.Workflows {
		path := fmt.Sprintf("runtime.workflows[%d]", i)
		cd := parseDocument(path, raw, d)
		switch {
		case cd == nil:
		case cd.ID == "":
			d.add(path+".id", "required: child workflows are called by id")
		case p.childDocs[cd.ID] != nil:
			d.add(path+".id", "duplicate child workflow id %q", cd.ID)
		default:
			p.childDocs[cd.ID] = cd
		}
	}
	decider, err := permission.New(permission.Config{
		Permissions:      req.Permissions,
		ToolPolicies:     req.ToolPolicies,
		Grants:           req.Authorization.Grants,
		ConsentAvailable: req.ConsentAvailable,
	})
	d.addErr("", err)
	p.prepareServices()
	x := &Execution{e: e, req: req, trace: req.Trace, children: p.children, decider: decider, models: p.svc.models, http: p.svc.http, limits: p.limits}
	defer func() { x.fanout = p.fanout }()
	if doc == nil {
		return x
	}
	x.g = p.compileDocument("workflow", doc)
	for _, id := range sortedKeys(p.childDocs) {
		if p.children[id] == nil {
			p.children[id] = p.compileDocument(childPath(req, id), p.childDocs[id])
		}
	}
	if x.g != nil && withInput {
		x.input = p.checkInput(x.g, req.Input)
	}
	if d.len() > 0 {
		return x
	}
	x.secretValues = make(map[string]any, len(req.Runtime.HTTP.Secrets))
	for name, s := range req.Runtime.HTTP.Secrets {
		x.secretValues[name] = s.Value
	}
	// The deployment's model keys too: a provider may echo them, and the
	// table serves every execution that brings no runtime.models.
	x.redact = newScrubber(append(secretsOf(req), e.Services.ModelTable.Secrets()...))
	return x
}

// discard releases what an execution that will not run holds.
func (x *Execution) discard() {
	if x != nil && x.http != nil {
		x.http.Close()
	}
}

// compileDocument compiles a top-level or child workflow document.
func (p *prep) compileDocument(path string, doc *document) *graph {
	// Expressions are checked against this document's input schema; a
	// child workflow compiled meanwhile has its own.
	defer func(saved *lang.InputShape) { p.input = saved }(p.input)
	p.input = nil
	if len(doc.Input) <= p.limits.MaxSchemaBytes {
		p.input = lang.NewInputShape(doc.Input)
	}
	g := p.compileGraph(path+".nodes", doc.Nodes, nil, false)
	if g == nil {
		return nil
	}
	g.id = doc.ID
	if len(doc.Input) > 0 && string(doc.Input) != "null" && p.schemaWithinLimits(path+".input", doc.Input) {
		var err error
		if g.inputSchema, err = compileSchemaText(doc.Input); err != nil {
			schemaErrors(path+".input", err, p.d)
		}
	}
	if doc.has&hasOutput != 0 {
		var v any
		_ = json.Unmarshal(doc.Output, &v)
		all := make([]string, len(g.nodes))
		for i, n := range g.nodes {
			all[i] = n.id
		}
		sc := &lang.Scope{Visible: g.has, Ancestors: func() []string { return all }, Input: p.input, Tally: &p.tally}
		g.output = lang.CompileTemplate(path+".output", v, sc, p.d)
		g.hasOutput = true
	}
	return g
}

// schemaWithinLimits refuses an input schema over maxSchemaBytes or nested
// deeper than maxSchemaDepth before it is compiled: compiling costs more
// than the schema's size.
func (p *prep) schemaWithinLimits(path string, raw []byte) bool {
	l := p.limits
	if l.MaxSchemaBytes > 0 && len(raw) > l.MaxSchemaBytes {
		p.d.add(path, "the input schema is %d bytes, over maxSchemaBytes (%d)", len(raw), l.MaxSchemaBytes)
		return false
	}
	err := protocol.CheckStructure(raw, l.MaxSchemaDepth)
	var inv *protocol.Invalid
	if errors.As(err, &inv) {
		for _, det := range inv.Details {
			sub := path
			if det.Path != "" {
				sub += "." + det.Path
			}
			p.d.add(sub, "%s", strings.Replace(det.Message, "maxDepth", "maxSchemaDepth", 1))
		}
		return false
	}
	return err == nil
}

// checkInput decodes the execution input and checks it against the
// workflow's input schema.
func (p *prep) checkInput(g *graph, raw json.RawMessage) any {
	var input any
	if len(raw) > 0 {
		v, err := decodeJSON(raw)
		if err != nil {
			p.d.add("input", "malformed JSON: %v", err)
			return nil
		}
		input = v
	}
	if g.inputSchema != nil {
		schemaDetails("input", g.inputSchema, input, p.d)
	}
	return input
}

func childPath(req *protocol.ExecutionRequest, id string) string {
	for i, raw := range req.Runtime.Workflows {
		var head struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(raw, &head) == nil && head.ID == id {
			return fmt.Sprintf("runtime.workflows[%d]", i)
		}
	}
	return "runtime.workflows"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// secretsOf lists every secret value a request carries: HTTP secrets, model
// API keys and headers, toolset headers.
func secretsOf(req *protocol.ExecutionRequest) []string {
	var out []string
	for _, s := range req.Runtime.HTTP.Secrets {
		out = append(out, s.Value)
	}
	for _, m := range req.Runtime.Models {
		out = append(out, m.APIKey)
		for _, v := range m.Headers {
			out = append(out, v)
		}
	}
	for _, t := range req.Runtime.Toolsets {
		for _, v := range t.Headers {
			out = append(out, v)
		}
	}
	return out
}
