package alertdeliver

import (
	"context"

	"github.com/skewlens/skewlens/skew/alert"
)

// Notifier delivers alerts somewhere. Notify makes one attempt: it blocks
// until every alert is delivered, a delivery fails, or ctx ends, and does
// not retry; the Fanout retries it. Errors a retry cannot fix are marked
// with retry.Permanent (retry.IsPermanent reports them). A Notifier
// used by a Fanout gets one Notify call at a time; Fanout.Stop closes it
// when it implements io.Closer.
type Notifier interface {
	Notify(ctx context.Context, alerts []alert.Alert) error
}

// Target is a named notifier; the name is the notifier label of the
// metrics and must be unique within a Fanout.
type Target struct {
	Name     string
	Notifier Notifier
}
