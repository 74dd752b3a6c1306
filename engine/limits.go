package engine

import "github.com/runnerd/lambda-runner/engine/limits"

// The bounds of an execution live in engine/limits; these are the names
// of them the engine's callers use.

// Limits bound every execution (limits.Bounds).
type Limits = limits.Bounds

// DefaultLimits are the limits of a runner configured with nothing.
func DefaultLimits() Limits { return limits.Default() }

// The defaults the runner's configuration names (infra/config,
// functions/runner).
const (
	// DefaultMemoryMB is the memory assumed when the process is not told
	// its own.
	DefaultMemoryMB = limits.DefaultMemoryMB
	// DefaultMaxDuration is Lambda's longest invocation.
	DefaultMaxDuration = limits.DefaultMaxDuration
	// DefaultReserve is kept back from the deadline to write the terminal
	// event.
	DefaultReserve = limits.DefaultReserve
)
