//go:build unix

package skew

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user and system) the process has used,
// for benchmarks on a shared machine, where the wall clock also counts
// the time other processes had the cores.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
