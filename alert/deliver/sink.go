package deliver

import (
	"context"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// Writer stores findings; Write returns nil only once they are stored.
type Writer interface {
	Write(ctx context.Context, version uint64, fs []skew.Finding) error
}

// advancer is the pipeline's stream.Advancer, named here so that this
// package does not import the pipeline.
type advancer interface {
	Advance(ctx context.Context, now time.Time) error
}

// Sink wraps the pipeline's findings sink: findings reach the Alerter
// only once next has stored them (an alert never names a finding that is
// not in ClickHouse), and every window close advances it, so alerts
// resolve when findings stop. It is safe for concurrent use if next is;
// the Alerter never blocks it.
type Sink struct {
	next Writer
	a    *Alerter
}

// NewSink returns a Sink that writes to next and alerts through a.
func NewSink(next Writer, a *Alerter) *Sink { return &Sink{next: next, a: a} }

// Write writes fs to next and, once that succeeded, observes them.
func (s *Sink) Write(ctx context.Context, version uint64, fs []skew.Finding) error {
	if err := s.next.Write(ctx, version, fs); err != nil {
		return err
	}
	s.a.Observe(fs)
	return nil
}

// Advance advances next (when it is an advancer too) and then the
// Alerter to now, the end of the last closed window.
func (s *Sink) Advance(ctx context.Context, now time.Time) error {
	if adv, ok := s.next.(advancer); ok {
		if err := adv.Advance(ctx, now); err != nil {
			return err
		}
	}
	s.a.Advance(now.UnixMilli())
	return nil
}
