package engine

import (
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/runnerd/lambda-runner/engine/document"
	"github.com/runnerd/lambda-runner/engine/egress"
	"github.com/runnerd/lambda-runner/engine/models"
	"github.com/runnerd/lambda-runner/engine/permission"
	"github.com/runnerd/lambda-runner/engine/plancache"
	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/engine/services"
	"github.com/runnerd/lambda-runner/protocol"
)

// Services configures the runtime services that model, agent, tool and
// http nodes call (services.Config): fixed per process, its zero value
// meaning nothing configured.
type Services = services.Config

// CodeRunner evaluates one code node's function body and checks its
// syntax before acceptance (services.CodeRunner); a *sandbox.Pool is one.
type CodeRunner = services.CodeRunner

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
	withs document.Withs // the with of each Specified kind
	// defaultClients serves model calls when Services.Models is nil.
	defaultClients *models.Clients
	// closing counts the toolset closes of finished executions, which run
	// after Run has returned (see run.closeServices).
	// A pointer: an Engine is copied (ServeBatch), and the copy's
	// executions are closed in the same group.
	closing *sync.WaitGroup
	// plans keeps the compiled plans of documents seen before
	// (plancache.go); nil keeps none. A pointer, shared by copies: a plan
	// is keyed by the limits it was compiled under.
	plans *planCache
}

// WaitClosed waits for the services of the executions that have finished
// to be closed: the goodbyes to their MCP servers, which run after Run has
// returned so that they never hold the response, each within the reserve.
func (e *Engine) WaitClosed() {
	if e.closing != nil {
		e.closing.Wait()
	}
}

// registered holds the node types every engine starts with: map and
// workflow, whose graphs are the engine's, and those RegisterKind adds.
var registered = struct {
	sync.Mutex
	kinds map[string]Kind
}{kinds: map[string]Kind{"map": &mapKind{}, "workflow": &workflowKind{}}}

// RegisterKind makes the node type name available to every engine New
// returns from then on. It is meant to be called from the init function
// of the package that holds the kind, as database/sql drivers register:
// the built-in kinds are registered by importing engine/nodes, which a
// program that builds an Engine does for its side effect. It panics when
// name is registered twice or k is nil; Engine.Register adds or replaces a
// type on one engine.
func RegisterKind(name string, k Kind) {
	registered.Lock()
	defer registered.Unlock()
	if k == nil {
		panic("engine: RegisterKind of a nil kind " + name)
	}
	if _, dup := registered.kinds[name]; dup {
		panic("engine: RegisterKind called twice for node type " + name)
	}
	registered.kinds[name] = k
}

// New returns an engine with the registered node types (see
// RegisterKind).
func New(limits Limits) *Engine {
	e := &Engine{Limits: limits, Logger: slog.New(slog.DiscardHandler), defaultClients: &models.Clients{}, closing: &sync.WaitGroup{}, plans: plancache.New()}
	registered.Lock()
	e.kinds = maps.Clone(registered.kinds)
	registered.Unlock()
	e.specify()
	return e
}

// Register adds or replaces a node type. Plans compiled before are
// dropped: they may have been compiled with the type it replaces.
func (e *Engine) Register(name string, k Kind) {
	e.kinds[name] = k
	e.specify()
	e.plans.Reset()
}

// specify collects the with of each Specified kind, for the document's
// check.
func (e *Engine) specify() {
	e.withs = make(document.Withs, len(e.kinds))
	for name, k := range e.kinds {
		if s, ok := k.(Specified); ok {
			e.withs[name] = s.With()
		}
	}
}

// WithSpecs returns the with of each registered node type that describes
// its own (Specified), by type: what docs/workflow.schema.json's with
// definitions are generated from (internal/schemagen). The caller must
// not change them.
func (e *Engine) WithSpecs() document.Withs { return e.withs }

// NodeTypes lists the registered node types, sorted; a kind that runs
// only on an engine configured for it (Availability: code, with
// Services.Code) only when it is.
func (e *Engine) NodeTypes() []string {
	names := make([]string, 0, len(e.kinds))
	for n, k := range e.kinds {
		if a, ok := k.(Availability); ok && !a.Available(&e.Services) {
			continue
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// modelClients returns the clients model calls use.
func (e *Engine) modelClients() *models.Clients {
	if e.Services.Models != nil {
		return e.Services.Models
	}
	return e.defaultClients
}

// ModelRoles lists the roles of the deployment's model table, sorted, for
// capabilities.
func (e *Engine) ModelRoles() []string {
	roles := e.Services.ModelTable.Roles()
	if roles == nil {
		roles = []string{}
	}
	return roles
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
	shadows      [2]map[string]any // secretValues' shadows (see secrets.Shadows)
	windows      [2]map[string]any // and windows (see secrets.Windows)
	redact       *secrets.Scrubber
	decider      *permission.Decider
	models       *models.Table  // runtime.models, else the deployment's
	http         *egress.Client // this execution's, released by Run
	limits       Limits         // the engine's, defaults applied
	// body is the request body, kept when a map distributes (fanout):
	// each of its child invocations prepares the same request.
	body   []byte
	fanout bool
	// pins are the nodes taken as given (SetPins); nil in a runner.
	pins map[string]pinned
}
