package engine

import (
	"sync"

	"github.com/runnerd/lambda-runner/engine/plancache"
	"github.com/runnerd/lambda-runner/protocol"
)

// A workflow server sends the same workflow document with every execution
// of it, and Prepare spent most of a request decoding, checking and
// compiling that document again. What compiling a document produced is
// therefore kept, keyed by the document's exact text, and a request that
// brings the same text again skips the decode and every document stage:
// only its own parts (envelope, permissions, runtime services, input
// against the kept input schema, secrets) are prepared.
//
// Only what no request can change is kept. A document is cached only
// when it was prepared without any problem, with no runtime.workflows in
// its request, and its compile read nothing of the request: a node kind
// that looks at the runtime payload (model, agent, tool, http, workflow,
// or any kind registered from outside the engine) or a field that may name
// secrets marks the preparation impure (prep.impure), and its plan is not
// kept. A compiled graph is immutable while it runs (its reachability is
// computed once, behind a sync.Once), as a map's sub-graph already runs
// its iterations at once, so one plan serves concurrent executions.

// The cache holds at most a planMemoryShare-th of the process's memory
// (Limits.MemoryMB: 64 MB of 512), counted as the text of the documents
// it keeps and an estimate of their compiled graphs (planSize). A
// document whose estimate is over half the bound (planMaxShare) is never kept,
// so that one author cannot empty the cache with one document; any number
// of distinct documents only evict each other.

// planEnv is what else than its document a compile reads of the engine:
// a plan is found only under the same limits and sandbox. The cache holds
// its key (planEnv.key), a pointer, which goes into the cache's interface
// without an allocation the struct would cost every request.
type planEnv struct {
	limits Limits
	code   bool
}

// compiled is what a plan keeps of a compile, as its Value.
type compiled struct {
	g      *graph
	fanout bool // a map distributes
}

type (
	planCache = plancache.Cache
	plan      = plancache.Plan
)

// planEnvs holds one *planEnv for each env a plan was looked up or kept
// under, so that equal envs are the same pointer, the cache's key. An
// engine's limits and sandbox are its configuration, not a request's:
// the list is as long as the configurations a process runs, one or two,
// and a map would cost more of the bootstrap than it saves.
var planEnvs struct {
	sync.Mutex
	list []*planEnv
}

// key returns the one *planEnv equal to env.
func (env planEnv) key() *planEnv {
	planEnvs.Lock()
	for _, k := range planEnvs.list {
		if *k == env {
			planEnvs.Unlock()
			return k
		}
	}
	k := &env
	planEnvs.list = append(planEnvs.list, k)
	planEnvs.Unlock()
	return k
}

var _ protocol.KnownWorkflow = (*plan)(nil)
