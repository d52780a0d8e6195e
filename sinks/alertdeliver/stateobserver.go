package alertdeliver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/pipeline/stream"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/alert"
	"github.com/skewlens/skewlens/skew/incident"
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

// StateObserver keeps the Alerter's state as a stage of the pipeline (a
// stream.Observer): every window close stores it in a StateStore (after
// the incidents, before the offsets are committed), and Resume loads it
// again after a restart or a rebalance, beside the incidents restored.
// The alerts themselves come from the incident changes (Alerter.Apply),
// not from findings, so Observe does nothing. The Alerter never blocks
// it.
type StateObserver struct {
	a     *Alerter
	store StateStore
	group string
	open  func() []incident.Incident
	log   *slog.Logger

	mu sync.Mutex // serialises the state saves
	// saved names the jobs whose last stored state was not empty: a job
	// that drops out of the Alerter's snapshot gets an empty state, so
	// that a restart does not bring back alerts that are over.
	saved map[string]bool
}

// NewStateObserver returns a StateObserver that stores a's state in store
// under the consumer group's name. open returns the open incidents once
// they are resumed (incidentsink.IncidentObserver.Open): Resume restores
// the alerts beside them, so it must run after the incidents' Resume. log
// may be nil.
func NewStateObserver(a *Alerter, store StateStore, group string, open func() []incident.Incident, log *slog.Logger) (*StateObserver, error) {
	if a == nil || store == nil || group == "" || open == nil {
		return nil, errors.New("deliver: nil alerter, state store or open incidents, or no consumer group")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &StateObserver{a: a, store: store, group: group, open: open, log: log.With("component", "alert state"), saved: map[string]bool{}}, nil
}

// Resume drops the Alerter's alerts and loads again the consumer group's
// stored alert state of the jobs owns reports, in one attempt (the
// pipeline retries it). The pipeline calls it when partitions are
// assigned, after the incidents' Resume: jobs that moved away are no
// longer resolved or stored here, and jobs that moved here resume their
// alerts. A stored state that does not validate costs its job only its
// alert state: it is logged (WARN, naming the job and the part) and
// counted, and the other jobs are restored.
func (s *StateObserver) Resume(ctx context.Context, owns func(jobID string) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	snaps, err := s.store.LoadAlertState(ctx, s.group)
	if err != nil {
		return fmt.Errorf("load alert state of group %s: %w", s.group, err)
	}
	snaps = slices.DeleteFunc(snaps, func(sn alert.JobSnapshot) bool { return !owns(sn.JobID) })
	refused, err := s.a.Reset(snaps, s.open())
	if err != nil {
		return retry.Permanent("resume alerts", fmt.Errorf("alert state of group %s: %w", s.group, err))
	}
	// The stored states of jobs read elsewhere now are theirs to replace;
	// a refused state is replaced at the next save (by an empty one if
	// the job has no alerts then), so that it is not refused again.
	clear(s.saved)
	for _, r := range refused {
		stream.WarnRefusedState(s.log, "alerts", r.JobID, r.Err, "group", s.group)
		s.saved[r.JobID] = true
	}
	s.log.Info("alert state restored", "group", s.group, "jobs", len(snaps)-len(refused), "refused", len(refused), "firing", len(s.a.Active()))
	return nil
}

// Observe does nothing: alerts follow the incidents (Alerter.Apply).
func (s *StateObserver) Observe(context.Context, uint64, []skew.Finding) error { return nil }

// Advance stores the Alerter's state at now, the end of the last closed
// window. Calling it again (the pipeline retries a failed Advance)
// stores the state again.
func (s *StateObserver) Advance(ctx context.Context, now time.Time) error {
	return s.saveState(ctx, now)
}

// saveState stores the Alerter's snapshot, and an empty state for each
// job stored before that is no longer in it. A job whose state cannot be
// encoded is logged and keeps its older state.
func (s *StateObserver) saveState(ctx context.Context, now time.Time) error {
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
