//go:build !unix

package skew

import "time"

// cpuTime is not measured here: benchmarks then report no CPU time.
func cpuTime() time.Duration { return 0 }
