package stream

import (
	"context"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// Observer is a stage that keeps state of the jobs whose findings it sees
// (salting plans, incidents, alerts). It is called only after the
// findings are stored, and it owns its own saving: an Observer stores
// what it must keep across a restart before Observe or Advance returns.
// Every method is called from the runner's goroutine, one at a time, and
// a failed call is retried as a whole (Observe and Advance must ignore
// what they already took in).
type Observer interface {
	// Observe takes the findings of closed windows: a batch, of one or
	// more windows and jobs.
	Observe(ctx context.Context, version uint64, fs []skew.Finding) error
	// Advance takes event time passing to now, the end of the last closed
	// window, even when that window had no findings.
	Advance(ctx context.Context, now time.Time) error
	// Resume drops all state and loads again what is saved of the jobs
	// owns reports true for, as at a restart (see Resumer).
	Resume(ctx context.Context, owns func(jobID string) bool) error
}

// SinkChain is the Sink of a pipeline with stateful stages: the store, then
// the Observers, called in their order. It is the one place that decides
// the order in which findings reach the stages:
//
//   - Write stores the batch (the windows closed together, of one or more
//     jobs), then gives it to each Observer in turn; each does its I/O
//     once per batch (the incident tracker, the one fold of findings,
//     takes a batch window by window);
//   - Advance and Resume call the Observers in order.
//
// The first error stops a call and is returned as it is.
type SinkChain struct {
	store Sink
	obs   []Observer
}

// NewSinkChain returns the SinkChain that stores findings in store and
// then calls obs in order.
func NewSinkChain(store Sink, obs ...Observer) *SinkChain {
	return &SinkChain{store: store, obs: obs}
}

// Write stores fs, then gives them to the Observers.
func (s *SinkChain) Write(ctx context.Context, version uint64, fs []skew.Finding) error {
	if err := s.store.Write(ctx, version, fs); err != nil {
		return err
	}
	for _, o := range s.obs {
		if err := o.Observe(ctx, version, fs); err != nil {
			return err
		}
	}
	return nil
}

// Advance advances the store (when it is an Advancer) and the Observers.
func (s *SinkChain) Advance(ctx context.Context, now time.Time) error {
	if a, ok := s.store.(Advancer); ok {
		if err := a.Advance(ctx, now); err != nil {
			return err
		}
	}
	for _, o := range s.obs {
		if err := o.Advance(ctx, now); err != nil {
			return err
		}
	}
	return nil
}

// Resume resumes the Observers in order, with the jobs of owns.
func (s *SinkChain) Resume(ctx context.Context, owns func(jobID string) bool) error {
	for _, o := range s.obs {
		if err := o.Resume(ctx, owns); err != nil {
			return err
		}
	}
	return nil
}
