package alert

import (
	"errors"
	"fmt"
)

// NotifyError is a failed delivery. Permanent errors are ones a retry
// cannot fix (an HTTP 4xx other than 408 and 429, a message the broker
// refuses); the others (5xx, network errors, timeouts) may succeed later.
type NotifyError struct {
	// Notifier names the notifier ("alertmanager", "webhook", "kafka").
	Notifier string
	// Op says what failed, e.g. "POST http://am:9093/api/v2/alerts".
	Op string
	// StatusCode is the HTTP status, 0 when there was none.
	StatusCode int
	// Permanent marks errors a retry cannot fix.
	Permanent bool
	Err       error
}

func (e *NotifyError) Error() string {
	kind := "retryable"
	if e.Permanent {
		kind = "fatal"
	}
	if e.StatusCode != 0 {
		return fmt.Sprintf("%s notifier: %s: %s: HTTP %d: %v", e.Notifier, e.Op, kind, e.StatusCode, e.Err)
	}
	return fmt.Sprintf("%s notifier: %s: %s: %v", e.Notifier, e.Op, kind, e.Err)
}

// Unwrap returns the underlying error.
func (e *NotifyError) Unwrap() error { return e.Err }

// Fatal reports whether a retry cannot fix the error, for callers that
// classify errors by behaviour (errors.As to interface{ Fatal() bool }).
func (e *NotifyError) Fatal() bool { return e.Permanent }

// IsFatal reports whether err, or an error it wraps, says Fatal() true.
func IsFatal(err error) bool {
	var f interface{ Fatal() bool }
	return errors.As(err, &f) && f.Fatal()
}
