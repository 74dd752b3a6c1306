package engine

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/engine/lang"
	"github.com/runnerd/lambda-runner/engine/permission"
	"github.com/runnerd/lambda-runner/engine/plancache"
	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/engine/services"
	"github.com/runnerd/lambda-runner/protocol"
)

// Prepare runs its stages in order, each owned by one file:
//
//  1. decode (engine/document, decode.go): the document's text into a document and
//     its nodes, in the pass that reads the request body;
//  2. check (engine/document, check.go): the rules of docs/workflow.schema.json;
//  3. graph (prepare_graph.go): ids, needs, cycles, dependents;
//  4. compile (prepare_compile.go): each node's when and with, through
//     engine/lang and the node's Kind; the input schema and the output;
//  5. input (document.Input): the request's input against the schema.
//
// Preflight (gate.go) follows acceptance, in Execution.Run.

// prep is the state of one Prepare.
type prep struct {
	e           *Engine
	req         *protocol.ExecutionRequest
	d           *document.Problems
	secretNames map[string]bool
	childDocs   map[string]*document.Document
	childPaths  map[string]string // where each child workflow sits in the request
	children    map[string]*graph
	nodes       int
	overNodes   bool // nodes went past maxNodes, and it was said
	svc         services.Request
	limits      Limits            // the engine's, defaults applied
	input       *lang.InputShape  // the input schema of the document being compiled
	fanout      bool              // a map distributes (with.distribute)
	tally       lang.Tally        // expressions compiled, against maxExpressions
	hints       lang.Hints        // searches for "did you mean", against their bound
	listed      map[string]listed // missingHint's lists, by what they list
	// schemaTexts are the distinct schemas compiled for the request, and
	// schemaBytes their size, against maxSchemaBytes (schemaWithinLimits).
	schemaTexts map[string]struct{}
	schemaBytes int
	// impure is set when compiling read something of the request (its
	// runtime payload, its secrets' names) or ran a kind the engine does
	// not know to read nothing of it: the plan is then not cached.
	impure bool
	// checkBy is when the request's budget for its code nodes' syntax
	// checks ends (checkCode), set by the first of them.
	checkBy time.Time
}

// Prepare checks an execution request before acceptance. The error is a
// *protocol.Invalid listing every problem with its path. PrepareBody also
// checks the body's structure (duplicate keys, nesting).
func (e *Engine) Prepare(req *protocol.ExecutionRequest) (*Execution, error) {
	d := &document.Problems{}
	x := e.prepare(req, d, prepareRun)
	if err := d.Err(); err != nil {
		x.discard()
		return nil, err
	}
	return x, nil
}

// prepareMode says what prepare is for.
type prepareMode int

const (
	prepareRun      prepareMode = iota // an execution: input checked, plans cached
	prepareValidate                    // Validate of a request body: no plan cache
	prepareBare                        // Validate of a bare document: no input either
)

// prepare runs every check of req, recording problems in d, and returns the
// execution as far as it could be built (nil when no workflow was found).
func (e *Engine) prepare(req *protocol.ExecutionRequest, d *document.Problems, mode prepareMode) *Execution {
	p := &prep{e: e, req: req, d: d, limits: e.Limits.WithDefaults(), secretNames: map[string]bool{}, childDocs: map[string]*document.Document{}, childPaths: map[string]string{}, children: map[string]*graph{}}
	p.tally.Max = p.limits.MaxExpressions
	for name := range req.Runtime.HTTP.Secrets {
		p.secretNames[name] = true
	}
	// A document seen before is not decoded, checked or compiled again
	// (plancache.go, engine/plancache); a request with child workflows compiles them against
	// the document's own counts, so it never uses a plan.
	plans := e.plans
	if mode != prepareRun || len(req.Runtime.Workflows) > 0 {
		plans = nil
	}
	var pl *plan
	if plans != nil && req.Workflow != nil {
		switch v := req.WorkflowValue.(type) {
		case *plan: // found by the body's decoder (Engine.check)
			pl = v
		case nil:
			pl = plans.Get(req.Workflow, planEnv{p.limits, e.Services.Code != nil}.key())
		}
	}
	var doc *document.Document
	if dd, ok := req.WorkflowValue.(*document.Document); ok {
		doc = document.Check("workflow", dd, e.withs, d)
	} else if req.Workflow != nil && pl == nil {
		doc = document.Parse("workflow", req.Workflow, p.limits.MaxNodes, e.withs, d)
	}
	for i, raw := range req.Runtime.Workflows {
		path := fmt.Sprintf("runtime.workflows[%d]", i)
		cd := document.Parse(path, raw, p.limits.MaxNodes, e.withs, d)
		switch {
		case cd == nil:
		case cd.ID == "":
			d.Addf(path+".id", "required: child workflows are called by id")
		case p.childDocs[cd.ID] != nil:
			d.Addf(path+".id", "duplicate child workflow id %q", cd.ID)
		default:
			p.childDocs[cd.ID] = cd
			p.childPaths[cd.ID] = path
		}
	}
	decider, err := permission.New(permission.Config{
		Permissions:      req.Permissions,
		ToolPolicies:     req.ToolPolicies,
		Grants:           req.Authorization.Grants,
		ConsentAvailable: req.ConsentAvailable,
	})
	d.AddErr("", err)
	// The runtime services, before the workflow is compiled, so that node
	// kinds can check what they name against them.
	p.svc = e.Services.Check(req, e.modelClients(), d)
	x := &Execution{e: e, req: req, trace: req.Trace, children: p.children, decider: decider, models: p.svc.Models, http: p.svc.HTTP, limits: p.limits}
	defer func() { x.fanout = p.fanout }()
	switch {
	case pl != nil:
		c := pl.Value.(*compiled)
		x.g, p.fanout = c.g, c.fanout
	case doc == nil:
		return x
	default:
		x.g = p.compileDocument("workflow", doc)
		for _, id := range sortedKeys(p.childDocs) {
			if p.children[id] == nil {
				p.children[id] = p.compileDocument(p.childPaths[id], p.childDocs[id])
			}
		}
	}
	if x.g != nil && mode != prepareBare {
		x.input = document.Input(req.Input, x.g.inputSchema, d, &p.hints)
	}
	if d.Len() > 0 {
		return x
	}
	if plans != nil && pl == nil && !p.impure {
		plans.Put(req.Workflow, planEnv{p.limits, e.Services.Code != nil}.key(), &compiled{x.g, p.fanout}, plancache.Bound(p.limits.MemoryMB))
		p.detach()
	}
	x.secretValues = make(map[string]any, len(req.Runtime.HTTP.Secrets))
	for name, s := range req.Runtime.HTTP.Secrets {
		x.secretValues[name] = s.Value
	}
	x.shadows = [2]map[string]any{secrets.Shadows(x.secretValues, 0), secrets.Shadows(x.secretValues, 1)}
	x.windows = [2]map[string]any{secrets.Windows(x.secretValues, 0), secrets.Windows(x.secretValues, 1)}
	// The deployment's model keys too: a provider may echo them, and the
	// table serves every execution that brings no runtime.models.
	x.redact = secrets.New(append(secrets.InRequest(req), e.Services.ModelTable.Secrets()...))
	return x
}

// detach drops what the preparation holds of its request once its graph
// is cached: the graph's expression scopes keep the prep (the compilers
// of its nodes), and a cached plan must keep nothing of the request that
// compiled it (its body, input or secrets) past that request.
func (p *prep) detach() {
	p.req, p.d, p.svc = nil, nil, services.Request{}
	p.secretNames, p.childDocs, p.childPaths, p.children = nil, nil, nil, nil
}

// discard releases what an execution that will not run holds.
func (x *Execution) discard() {
	if x != nil && x.http != nil {
		x.http.Close()
	}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
