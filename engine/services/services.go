// Package services holds the runtime services of the engine's executions,
// the model providers, toolsets, HTTP egress, sandbox and fan-out that
// nodes reach the world through: how a process configures them (Config,
// which engine names Services), what a request's runtime payload says of
// them, checked before acceptance (Config.Check: runtime.models,
// runtime.toolsets, runtime.http's policy and secrets), and those of one
// execution, opened for its run and closed after its terminal event
// (Config.Open, Run.Close).
//
// The calls nodes make through them are the engine's (Call.Model,
// Call.Tool, Call.HTTP, Call.Code), which authorize, charge and scrub them
// in the one place each invariant has. It imports the adapters
// (engine/models, engine/toolsets, engine/egress, engine/sandbox,
// engine/glob), engine/secrets, engine/limits, engine/distribute (FanOut)
// and engine/document (the problems it reports), never engine.
package services

import (
	"context"

	"github.com/runnerd/lambda-runner/engine/distribute"
	"github.com/runnerd/lambda-runner/engine/egress"
	"github.com/runnerd/lambda-runner/engine/models"
	"github.com/runnerd/lambda-runner/engine/sandbox"
	"github.com/runnerd/lambda-runner/engine/toolsets"
)

// Config configures the runtime services that model, agent, tool and http
// nodes call. It is fixed per process (set it before the first Prepare). The
// zero value is usable and means "nothing configured": no model table of the
// deployment (model and agent nodes then need runtime.models), provider
// clients with default settings, and the default limits of the egress and
// toolsets packages.
type Config struct {
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
	FanOut distribute.FanOut
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
