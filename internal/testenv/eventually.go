package testenv

import (
	"testing"
	"time"
)

// End is a process, job or goroutine whose end fails a wait (Eventually):
// Done is closed when it ends, and Why says so, with its log's tail.
type End struct {
	Done <-chan struct{}
	Why  func() string
}

// Eventually is the one way a test waits on an event: it polls cond
// until it holds and returns when it did. It fails t with what after
// timeout, or as soon as one of ends is done (a server that exited will
// not make cond true later). The poll starts at 1 ms and doubles up to
// 200 ms, so a fast event is seen at once and a slow one costs little.
// It blocks the calling goroutine, which must be the test's.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool, ends ...End) time.Time {
	t.Helper()
	deadline := time.Now().Add(timeout)
	every := time.Millisecond
	for !cond() {
		for _, e := range ends {
			select {
			case <-e.Done:
				t.Fatalf("%s: %s", what, e.Why())
			default:
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(every)
		every = min(2*every, 200*time.Millisecond)
	}
	return time.Now()
}
