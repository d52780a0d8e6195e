package alertdeliver

import "fmt"

// NotifyError is a failed delivery. Whether a retry can fix it is said the
// one way of package retry: a notifier returns an error no retry can fix
// (an HTTP 4xx other than 408, 425 and 429, a message the broker refuses)
// marked with retry.Permanent, and the Fanout asks retry.IsPermanent; the
// others (5xx, network errors, timeouts) may succeed later.
type NotifyError struct {
	// Notifier names the notifier ("alertmanager", "webhook", "kafka").
	Notifier string
	// Op says what failed, e.g. "POST http://am:9093/api/v2/alerts".
	Op string
	// StatusCode is the HTTP status, 0 when there was none.
	StatusCode int
	Err        error
}

func (e *NotifyError) Error() string {
	if e.StatusCode != 0 {
		return fmt.Sprintf("%s notifier: %s: HTTP %d: %v", e.Notifier, e.Op, e.StatusCode, e.Err)
	}
	return fmt.Sprintf("%s notifier: %s: %v", e.Notifier, e.Op, e.Err)
}

// Unwrap returns the underlying error.
func (e *NotifyError) Unwrap() error { return e.Err }
