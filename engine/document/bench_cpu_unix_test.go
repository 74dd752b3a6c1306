//go:build unix

package document_test

import (
	"syscall"
	"time"
)

// cpuTime is the process's CPU time, user and system: on a shared machine
// a steadier measure of a benchmark than the time it took.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
