package kafkasrc

import (
	"time"

	"github.com/skewlens/skewlens/internal/retry"
)

// retryPolicy paces the retries of Fetch, Commit, Send, Backlog and the
// topic checks: 50 ms doubling to 5 s, until their context ends, since a
// broker restart takes as long as it takes and the callers bound the wait
// with their context.
func retryPolicy() retry.Policy {
	return retry.Policy{MaxRetries: retry.Unlimited, MinBackoff: 50 * time.Millisecond, MaxBackoff: 5 * time.Second}
}
