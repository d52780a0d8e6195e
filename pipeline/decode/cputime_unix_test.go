//go:build unix

package decode

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) this process has used.
// On a machine shared with other work, CPU time compares two decoders more
// fairly than wall time, which also counts the time the benchmark waited
// for a core; the benchmarks allocate nothing, so the garbage collector
// adds next to nothing to it.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
