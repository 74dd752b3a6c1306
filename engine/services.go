package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/runnerd/lambda-runner/engine/egress"
	"github.com/runnerd/lambda-runner/engine/glob"
	"github.com/runnerd/lambda-runner/engine/limits"
	"github.com/runnerd/lambda-runner/engine/models"
	"github.com/runnerd/lambda-runner/engine/sandbox"
	"github.com/runnerd/lambda-runner/engine/secrets"
	"github.com/runnerd/lambda-runner/engine/toolsets"
	"github.com/runnerd/lambda-runner/protocol"
)

// Services configures the runtime services that model, agent, tool and http
// nodes call. It is fixed per process (set it before the first Prepare). The
// zero value is usable and means "nothing configured": no model table of the
// deployment (model and agent nodes then need runtime.models), provider
// clients with default settings, and the default limits of the egress and
// toolsets packages.
type Services struct {
	// Models builds the provider of every model call. Share one per process:
	// it loads the AWS configuration (Bedrock) once. Nil means a Clients
	// with default settings, owned by the engine.
	Models *models.Clients
	// ModelTable is the deployment's own model table (RUNNER_MODELS), used
	// by executions whose request has no runtime.models. It is a
	// *models.Table rather than a list so that it is validated once, at
	// startup, where a bad table stops the process instead of failing every
	// request; build it with models.NewTable. Nil means none.
	ModelTable *models.Table
	// HTTP holds the operator's limits of http nodes (they cap what any
	// runtime.http.policy may ask) and the addresses never reachable.
	HTTP egress.Options
	// Toolsets configures the MCP sessions of tool and agent nodes.
	Toolsets toolsets.Options
	// FanOut runs the batches of distributed maps in child invocations
	// (Limits.MaxFanOutInvocations above 0); nil means none can run.
	FanOut FanOut
	// Code evaluates the JavaScript of code nodes, out of process (a
	// *sandbox.Pool). Nil means this runner has none: code nodes are then
	// refused before acceptance and not listed in capabilities.
	Code CodeRunner
}

// CodeRunner evaluates one code node's function body; a *sandbox.Pool is
// one. EvalWith returns a *sandbox.Error for a failure of the code (of
// sandbox.KindTimeout when it ran past opts.Timeout, which counts from
// when a worker started on it), ctx's error when ctx ended first (the
// evaluation stopped by then). The engine passes the execution as
// opts.Owner, so that one execution holds at most its share of the
// workers.
//
// Check checks a function body's syntax before acceptance: nil, a
// *sandbox.Error of sandbox.KindThrown locating a syntax error, an error
// wrapping sandbox.ErrBusy when ctx (the request's budget for its checks)
// ended first, or why it could not be checked (the worker could not
// start, did not answer in time).
type CodeRunner interface {
	EvalWith(ctx context.Context, req sandbox.Request, opts sandbox.EvalOptions) (*sandbox.Reply, error)
	Check(ctx context.Context, code string) error
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

// prepServices is what Prepare learns about the request's runtime
// services: the model table nodes resolve roles against, the toolsets they
// may name and the policy literal URLs are checked against.
type prepServices struct {
	// models is runtime.models when the request has it, else the
	// deployment's table (nil when neither).
	models *models.Table
	// modelsFrom names where models came from, for messages.
	modelsFrom string
	// modelsOK is false when runtime.models is invalid: its problems are
	// reported already, and roles are not checked against it.
	modelsOK bool
	toolsets map[string]bool
	// http is the execution's egress client, nil when the policy is
	// invalid. It holds no connection until a node sends a request.
	http *egress.Client
	// policy is the request's HTTP policy, for the static host check.
	policy protocol.HTTPPolicy
}

// prepareServices validates the runtime payload's services and reports
// their problems at their request paths. It runs before the workflow is
// compiled, so that node kinds can check what they name against it.
func (p *prep) prepareServices() {
	rt := &p.req.Runtime
	s := &p.svc
	// runtime.models, when present (even empty), replaces the deployment's
	// table entirely: the server decided which models this execution uses.
	if rt.Models != nil {
		t, err := models.NewTable("runtime.models", rt.Models)
		p.d.AddErr("runtime.models", err)
		// Credentials stay home: refused here, before acceptance, by the
		// rule every model call is held to.
		p.d.AddErr("runtime.models", p.e.modelClients().CheckCredentials("runtime.models", rt.Models))
		s.models, s.modelsFrom, s.modelsOK = t, "runtime.models", err == nil
	} else {
		s.models, s.modelsFrom, s.modelsOK = p.e.Services.ModelTable, "the runner's model table", true
	}

	p.d.AddErr("runtime.toolsets", toolsets.Validate("runtime.toolsets", rt.Toolsets))
	s.toolsets = make(map[string]bool, len(rt.Toolsets))
	for _, t := range rt.Toolsets {
		s.toolsets[t.Name] = true
	}

	c, err := egress.New(rt.HTTP.Policy, p.e.Services.HTTP)
	p.d.AddErr("runtime.http.policy", err)
	s.http, s.policy = c, rt.HTTP.Policy

	// A host pattern that never matches would make its secret unusable
	// everywhere; one that is malformed is refused like a policy pattern.
	names := make([]string, 0, len(rt.HTTP.Secrets))
	for name := range rt.HTTP.Secrets {
		names = append(names, name)
	}
	sort.Strings(names)
	total := 0
	for _, v := range secrets.InRequest(p.req) {
		total += len(v)
	}
	if total > secrets.MaxSecretsBytes {
		// The redactor is built from every one of them, in some fifty
		// forms each.
		p.d.Addf("runtime", "the secret values of a request (runtime.http.secrets, model API keys and headers, toolset headers) may be at most %d bytes together", secrets.MaxSecretsBytes)
	}
	for _, name := range names {
		if n := len(rt.HTTP.Secrets[name].Value); n > secrets.MaxSecretBytes {
			// The bound every secret-bearing evaluation is checked at
			// (see secrets.Shadows); the value is not quoted.
			p.d.Addf(fmt.Sprintf("runtime.http.secrets.%s", name), "a secret may be at most %d bytes long", secrets.MaxSecretBytes)
		}
		if err := glob.CheckList(len(rt.HTTP.Secrets[name].Hosts)); err != nil {
			p.d.Addf(fmt.Sprintf("runtime.http.secrets.%s.hosts", name), "%v", err)
			continue
		}
		for i, h := range rt.HTTP.Secrets[name].Hosts {
			check := glob.ValidateHost
			if strings.Contains(h, ":") {
				check = glob.Validate // an IPv6 literal has no labels
			}
			if err := check(h); err != nil {
				p.d.Addf(fmt.Sprintf("runtime.http.secrets.%s.hosts[%d]", name, i), "%v", err)
			}
		}
	}
}

// lookupRole reports whether a statically named role resolves in the
// execution's model table, directly or through the general role. It is
// true when the table is invalid, whose problems are reported already.
func (p *prep) lookupRole(role string) bool {
	if !p.svc.modelsOK {
		return true
	}
	_, ok := p.svc.models.Lookup(role)
	return ok
}

// runServices are the services of one running execution. The toolsets
// are connected lazily, on their first use; everything is released by
// close when the execution ends.
type runServices struct {
	models  *models.Table
	clients *models.Clients
	tools   *toolsets.Set // nil when the request defines no toolset
	http    *egress.Client
	// reads are the caps on what the execution reads from outside, and
	// inFlight bounds the replies being read at once.
	reads    limits.ReadCaps
	inFlight *egress.ReadLimit
}

// openServices builds the services of one run.
func (x *Execution) openServices() *runServices {
	reads := x.limits.Reads()
	s := &runServices{models: x.models, clients: x.e.modelClients(), http: x.http, reads: reads}
	s.inFlight = egress.NewInFlightLimit(reads.InFlight)
	if defs := x.req.Runtime.Toolsets; len(defs) > 0 {
		opts := x.e.Services.Toolsets
		opts.MaxResponseBytes, opts.MaxListBytes, opts.MaxListPages = reads.Reply, reads.ToolList, reads.ToolListPages
		opts.InFlight = s.inFlight
		s.tools = toolsets.New(defs, opts)
	}
	if s.http == nil {
		// Prepare refuses a request whose policy egress.New rejects, so
		// this is an Execution built some other way: give it a client
		// with the operator's limits and the default policy.
		s.http, _ = egress.New(protocol.HTTPPolicy{}, x.e.Services.HTTP)
	}
	return s
}

// closeServices releases the services once the terminal event is
// written. The toolsets' goodbyes (a DELETE per session, which a server may
// never answer) run after Run has returned, so that they never hold the
// response, and within the reserve and the caller's deadline, so that they
// never outlive the invocation. Failures only matter to operators: they
// are logged, redacted. ctx is the caller's.
func (r *run) closeServices(ctx context.Context) {
	s := r.svc
	if s == nil {
		return
	}
	if s.http != nil {
		s.http.Close()
	}
	if s.tools == nil {
		return
	}
	by := time.Now().Add(r.x.limits.Reserve)
	if d, ok := ctx.Deadline(); ok && d.Before(by) {
		by = d
	}
	e := r.x.e
	closing := e.closing
	if closing == nil {
		closing = &sync.WaitGroup{} // an Engine not made by New
	}
	closing.Go(func() {
		cctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), by)
		defer cancel()
		if err := s.tools.CloseBy(cctx); err != nil {
			e.Logger.LogAttrs(cctx, slog.LevelWarn, "closing toolsets",
				slog.String("executionId", r.id),
				slog.String("error", r.x.redact.String(err.Error())))
		}
	})
}

// replyLimit is the read limit of one model reply.
func (s *runServices) replyLimit() *egress.ReadLimit {
	return egress.NewReadLimit(s.reads.Reply, "model reply", s.inFlight)
}

// readLimitError maps a read that crossed a cap to the node's error:
// OUTPUT_TOO_LARGE for one reply, LIMIT_EXCEEDED for the replies read at
// once; nil when err is no such failure.
func readLimitError(err error) *NodeError {
	var rl *egress.ReadLimitError
	if !errors.As(err, &rl) {
		return nil
	}
	code := protocol.CodeOutputTooLarge
	if rl.InFlight {
		code = protocol.CodeLimitExceeded
	}
	return &NodeError{Code: code, Message: err.Error(), Err: err}
}

// httpRequests is usage.httpRequests: the hops the egress client let
// through, redirects included.
func (s *runServices) httpRequests() int64 {
	if s == nil || s.http == nil {
		return 0
	}
	return int64(s.http.Requests())
}
