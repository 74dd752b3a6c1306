// Package limits holds the bounds of one execution: every limit, its
// default, and what is derived from them (the time an execution may run,
// the caps on what it reads from outside). It is pure data: it imports
// engine/models and engine/sandbox for one constant each, nothing else of
// the runner.
package limits

import (
	"time"

	"github.com/runnerd/lambda-runner/engine/models"
	"github.com/runnerd/lambda-runner/engine/sandbox"
)

// The limits of a runner configured with nothing. infra/config leaves a
// setting zero when its variable is unset, so these are the only place
// each number is written.
const (
	DefaultMaxNodes       = 10_000
	DefaultMaxConcurrency = 16
	DefaultMaxMapItems    = 10_000
	DefaultMaxChildDepth  = 8
	DefaultMaxDepth       = 128
	DefaultMaxSchemaDepth = 32
	DefaultMaxSchemaBytes = 256 << 10
	// DefaultMaxExpressions bounds the expressions compiled for one
	// request: two for every node of a workflow of DefaultMaxNodes.
	DefaultMaxExpressions = 20_000
	// DefaultMaxExprMemory bounds what one evaluation allocates (see
	// DefaultMaxExprSteps for its steps).
	DefaultMaxExprMemory = 16 << 20
	// DefaultMaxExprSteps is the step budget of one evaluation: about a
	// second of work under the cost model (docs/security.md, "Expression
	// cost").
	DefaultMaxExprSteps  = 10_000_000
	DefaultMaxEventBytes = 64 << 10
	// DefaultMaxOutputBytes caps one node's output, or the memory budget
	// when that is smaller.
	DefaultMaxOutputBytes int64 = 4 << 20
	// DefaultMaxCodeBytes caps a code node's function body,
	// DefaultMaxCodeMemory what one evaluation of it may hold (its sandbox
	// worker's kernel memory limit), DefaultMaxCodeLogBytes what its
	// console.log may write.
	DefaultMaxCodeBytes          = 64 << 10
	DefaultMaxCodeMemory         = sandbox.DefaultMemoryBytes
	DefaultMaxCodeLogBytes int64 = 64 << 10
	// DefaultMemoryMB is the memory assumed when the process is not told
	// its own (Lambda's smallest sensible size for a workflow runner).
	DefaultMemoryMB = 512
	// DefaultMaxDuration is Lambda's longest invocation.
	DefaultMaxDuration = 15 * time.Minute
	DefaultReserve     = 500 * time.Millisecond
)

// Bounds bound every execution. Capabilities advertise these same values.
// A zero field means its default, so the zero Bounds is Default. Package
// engine calls it engine.Limits.
type Bounds struct {
	MaxNodes       int // nodes run per execution, map iterations and children included
	MaxConcurrency int // nodes running at once per execution
	MaxMapItems    int // items of one map node
	// MaxChildDepth bounds the nesting of child workflows; as 0 means the
	// default, a negative value allows none.
	MaxChildDepth int
	// MaxDepth caps the nesting of a request body (documents and input
	// values), checked before anything is decoded.
	MaxDepth int
	// MaxSchemaDepth and MaxSchemaBytes cap a JSON Schema (an input schema,
	// a model node's json): compiling one costs more than its size.
	// MaxSchemaBytes also caps a request's distinct schemas together.
	MaxSchemaDepth int
	MaxSchemaBytes int
	// MaxExpressions caps the expressions (each `${{ }}` and `when`)
	// compiled for one request, documents of child workflows included:
	// compiling one costs far more than its text (issue 18, class 10).
	MaxExpressions int
	MaxEventBytes  int   // traced input/output per event, truncated beyond
	MaxOutputBytes int64 // one node's output
	// MemoryMB is the memory of the process, which sizes the default
	// MemoryBudget.
	MemoryMB int
	// MemoryBudget bounds all node outputs of one execution together;
	// 0 means a quarter of MemoryMB.
	MemoryBudget int64
	// MaxExprSteps bounds one evaluation (a template, a `when`, an
	// output): predicate iterations, operators and builtin work counted
	// while it runs. 0 means DefaultMaxExprSteps, a negative value no
	// bound.
	MaxExprSteps int64
	// MaxExprMemory bounds the bytes one evaluation may allocate in
	// strings and collections, charged before each allocation. 0 means
	// DefaultMaxExprMemory, a negative value no bound.
	MaxExprMemory int64
	// MaxCodeBytes caps a code node's with.code, checked before
	// acceptance.
	MaxCodeBytes int
	// MaxCodeMemory is the memory one code node evaluation may hold: the
	// kernel limit of the sandbox worker running it (engine/sandbox).
	MaxCodeMemory int64
	// MaxCodeLogBytes bounds what one code node evaluation may write with
	// console.log.
	MaxCodeLogBytes int64
	// MaxDuration bounds an execution whose context has no deadline (the
	// local server); under Lambda the invocation deadline applies.
	MaxDuration time.Duration
	// Reserve is kept back from the deadline to write the terminal event.
	Reserve time.Duration
	// MaxFanOutInvocations is the operator's ceiling on the child
	// invocations a distributed map runs at once (map with.distribute);
	// 0, the default, turns distribution off: such a map is refused.
	MaxFanOutInvocations int
}

// Default returns the limits of a runner configured with nothing.
func Default() Bounds { return Bounds{}.WithDefaults() }

// WithDefaults returns l with each zero field replaced by its default (a
// negative one too, but for MaxChildDepth and the expression budgets,
// where a negative value means none and no bound).
func (l Bounds) WithDefaults() Bounds {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxNodes, DefaultMaxNodes)
	def(&l.MaxConcurrency, DefaultMaxConcurrency)
	def(&l.MaxMapItems, DefaultMaxMapItems)
	switch {
	case l.MaxChildDepth == 0:
		l.MaxChildDepth = DefaultMaxChildDepth
	case l.MaxChildDepth < 0:
		l.MaxChildDepth = 0
	}
	def(&l.MaxDepth, DefaultMaxDepth)
	def(&l.MaxSchemaDepth, DefaultMaxSchemaDepth)
	def(&l.MaxSchemaBytes, DefaultMaxSchemaBytes)
	def(&l.MaxExpressions, DefaultMaxExpressions)
	def(&l.MaxEventBytes, DefaultMaxEventBytes)
	def(&l.MemoryMB, DefaultMemoryMB)
	if l.MemoryBudget <= 0 {
		l.MemoryBudget = int64(l.MemoryMB) << 20 / 4
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = min(DefaultMaxOutputBytes, l.MemoryBudget)
	}
	if l.MaxExprSteps == 0 {
		l.MaxExprSteps = DefaultMaxExprSteps
	}
	if l.MaxExprMemory == 0 {
		l.MaxExprMemory = min(DefaultMaxExprMemory, l.MemoryBudget)
	}
	def(&l.MaxCodeBytes, DefaultMaxCodeBytes)
	if l.MaxCodeMemory <= 0 {
		l.MaxCodeMemory = DefaultMaxCodeMemory
	}
	if l.MaxCodeLogBytes <= 0 {
		l.MaxCodeLogBytes = DefaultMaxCodeLogBytes
	}
	if l.MaxDuration <= 0 {
		l.MaxDuration = DefaultMaxDuration
	}
	if l.Reserve <= 0 {
		l.Reserve = DefaultReserve
	}
	return l
}

// ExecutionTime is the longest an execution may run: MaxDuration less the
// Reserve. Capabilities advertise it as maxDurationMs.
func (l Bounds) ExecutionTime() time.Duration { return l.MaxDuration - l.Reserve }

// What an execution reads from outside (model replies, MCP responses, the
// agent's conversation) is bounded while it is read, by caps derived here
// from the limits, so that a server cannot make the runner buffer more than
// the node could ever keep.
const (
	// replySlack is what a reply may carry beyond the output it becomes:
	// its JSON envelope (ids, usage, finish reason, content block types).
	replySlack = 64 << 10
	// MaxToolListPages bounds the pages of one tools/list: a server that
	// always answers with a nextCursor is not read forever.
	MaxToolListPages = 100
)

// ReadCaps are the bounds on what one execution reads from outside, each
// enforced while the bytes arrive. Exceeding one fails the node in-band
// (OUTPUT_TOO_LARGE or LIMIT_EXCEEDED, naming what was too big).
type ReadCaps struct {
	// Reply caps one model reply body, one MCP response body and one of its
	// SSE events: the per-node output cap plus a JSON envelope, since the
	// reply becomes (at most) the node's output.
	Reply int64
	// ToolList caps the bytes of all the pages of one tools/list, and
	// ToolListPages their number.
	ToolList      int64
	ToolListPages int
	// Conversation caps the agent's history (every turn, tool results
	// included) sent back to the model with each step: four outputs, at
	// most a quarter of the memory budget.
	Conversation int64
	// InFlight caps what all the execution's reads in progress at once
	// hold (concurrent nodes each reading a reply): a model reply counts
	// for what its SDK holds while it decodes it (models' Costs, many
	// times its bytes), any other for its bytes. Half the memory budget,
	// the other half being for node outputs, and never less than one
	// model reply of Reply bytes costs.
	InFlight int64
}

// Reads returns the caps on what an execution reads, from l after defaults.
func (l Bounds) Reads() ReadCaps {
	l = l.WithDefaults()
	return ReadCaps{
		Reply:         l.MaxOutputBytes + replySlack,
		ToolList:      l.MaxOutputBytes + replySlack,
		ToolListPages: MaxToolListPages,
		Conversation:  max(min(4*l.MaxOutputBytes, l.MemoryBudget/4), l.MaxOutputBytes),
		InFlight:      max(l.MemoryBudget/2, models.MaxReplyCostPerByte*(l.MaxOutputBytes+replySlack)),
	}
}
