package deliver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skewlens/skewlens/alert"
	"github.com/skewlens/skewlens/pipeline/retry"
	"github.com/skewlens/skewlens/skew"
)

// StateStore keeps the alert state per consumer group and job (the
// ClickHouse store's Writer is one). SaveAlertState returns nil only once
// the states are durably stored; later versions replace earlier ones, and
// an empty State replaces a job's older one. LoadAlertState returns the
// latest non-empty state of each job of the group.
type StateStore interface {
	SaveAlertState(ctx context.Context, group string, version uint64, states []alert.JobSnapshot) error
	LoadAlertState(ctx context.Context, group string) ([]alert.JobSnapshot, error)
}

// Sink is the Alerter as a stage of the pipeline (a stream.Observer):
// the pipeline gives it findings only once they are stored (an alert
// never names a finding that is not in ClickHouse), and every window
// close advances it, so alerts resolve when findings stop. With a
// StateStore (NewStatefulSink), every window close also stores the
// Alerter's state, and Resume loads it again after a restart or a
// rebalance. The Alerter never blocks it.
type Sink struct {
	a     *Alerter
	store StateStore // nil: the alert state is not kept
	group string
	log   *slog.Logger

	mu sync.Mutex // serialises the state saves
	// saved names the jobs whose last stored state was not empty: a job
	// that drops out of the Alerter's snapshot gets an empty state, so
	// that a restart does not bring back alerts that are over.
	saved map[string]bool
}

// NewSink returns a Sink that alerts through a and keeps no alert state:
// a restart forgets the alerts.
func NewSink(a *Alerter) *Sink {
	return &Sink{a: a, log: slog.New(slog.DiscardHandler), saved: map[string]bool{}}
}

// NewStatefulSink returns a Sink that alerts through a and stores a's
// state in store under the consumer group's name each time windows close
// (after the engine's state, before the offsets are committed: see
// Advance). log may be nil.
func NewStatefulSink(a *Alerter, store StateStore, group string, log *slog.Logger) (*Sink, error) {
	if a == nil || store == nil || group == "" {
		return nil, errors.New("deliver: nil alerter or state store, or no consumer group")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sink{a: a, store: store, group: group, log: log.With("component", "alert state"), saved: map[string]bool{}}, nil
}

// Resume drops the Alerter's alerts and loads again the consumer group's
// stored alert state of the jobs owns reports, in one attempt (the
// pipeline retries it). The pipeline calls it when partitions are
// assigned: jobs that moved away are no longer resolved or stored here,
// and jobs that moved here resume their alerts. A Sink without a
// StateStore forgets its alerts. A stored state that does not validate
// is a permanent error.
func (s *Sink) Resume(ctx context.Context, owns func(jobID string) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var snaps []alert.JobSnapshot
	if s.store != nil {
		var err error
		if snaps, err = s.store.LoadAlertState(ctx, s.group); err != nil {
			return fmt.Errorf("load alert state of group %s: %w", s.group, err)
		}
		snaps = slices.DeleteFunc(snaps, func(sn alert.JobSnapshot) bool { return !owns(sn.JobID) })
	}
	if err := s.a.Reset(snaps); err != nil {
		return retry.Permanent("resume alerts", fmt.Errorf("alert state of group %s: %w", s.group, err))
	}
	// The stored states of jobs read elsewhere now are theirs to replace.
	clear(s.saved)
	s.log.Info("alert state restored", "group", s.group, "jobs", len(snaps), "firing", len(s.a.Active()))
	return nil
}

// Observe gives the Alerter stored findings.
func (s *Sink) Observe(_ context.Context, _ uint64, fs []skew.Finding) error {
	s.a.Observe(fs)
	return nil
}

// Advance advances the Alerter to now, the end of the last closed
// window, and stores the Alerter's state (with a StateStore). Calling it
// again with the same now (the pipeline retries a failed Advance)
// changes no alert and stores the state again.
func (s *Sink) Advance(ctx context.Context, now time.Time) error {
	s.a.Advance(now.UnixMilli())
	if s.store == nil {
		return nil
	}
	return s.saveState(ctx, now)
}

// saveState stores the Alerter's snapshot, and an empty state for each
// job stored before that is no longer in it. A job whose state cannot be
// encoded is logged and keeps its older state.
func (s *Sink) saveState(ctx context.Context, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	snaps, serr := s.a.Snapshot()
	cur := make(map[string]bool, len(snaps))
	for _, sn := range snaps {
		cur[sn.JobID] = true
	}
	if serr != nil {
		s.log.Warn("alert state of some jobs not saved", "err", serr)
	} else {
		for j := range s.saved {
			if !cur[j] {
				snaps = append(snaps, alert.JobSnapshot{JobID: j})
			}
		}
	}
	if len(snaps) == 0 {
		return nil
	}
	slices.SortFunc(snaps, func(a, b alert.JobSnapshot) int { return strings.Compare(a.JobID, b.JobID) })
	// Wall-clock versions, as the engine state's: a restarted pipeline's
	// saves replace those of the run before it.
	if err := s.store.SaveAlertState(ctx, s.group, uint64(time.Now().UnixNano()), snaps); err != nil {
		return fmt.Errorf("save alert state of %d jobs at %s: %w", len(snaps), now.UTC().Format(time.RFC3339), err)
	}
	if serr == nil {
		s.saved = cur
	} else {
		for j := range cur {
			s.saved[j] = true
		}
	}
	return nil
}
