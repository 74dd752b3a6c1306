//go:build !unix

package engine

import "time"

// cpuTime is zero where getrusage is not available: no cpu-ns/node.
func cpuTime() time.Duration { return 0 }
