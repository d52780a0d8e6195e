//go:build !unix

package decode

import "time"

// processCPU is not available here; callers fall back to wall time.
func processCPU() (time.Duration, bool) { return 0, false }
