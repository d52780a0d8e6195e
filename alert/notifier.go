package alert

import "context"

// Notifier delivers alerts somewhere. Notify blocks until every alert is
// delivered, a delivery fails for good, or ctx ends; it retries retryable
// failures itself. Errors a retry cannot fix satisfy IsFatal. A Notifier
// used by a Fanout gets one Notify call at a time; Fanout.Stop closes it
// when it implements io.Closer.
type Notifier interface {
	Notify(ctx context.Context, alerts []Alert) error
}

// NotifierFunc adapts a function to Notifier.
type NotifierFunc func(ctx context.Context, alerts []Alert) error

// Notify calls f.
func (f NotifierFunc) Notify(ctx context.Context, alerts []Alert) error { return f(ctx, alerts) }

// Target is a named notifier; the name is the notifier label of the
// metrics and must be unique within a Fanout.
type Target struct {
	Name     string
	Notifier Notifier
}
