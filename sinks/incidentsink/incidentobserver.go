package incidentsink

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/internal/promreg"
	"github.com/skewlens/skewlens/pipeline/stream"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
)

// Store stores incident changes and reads them back at start-up. The
// ClickHouse store's Writer is one.
type Store interface {
	// WriteIncidents returns nil only once every incident is stored;
	// storing the same incident state twice must be harmless.
	WriteIncidents(ctx context.Context, ins []incident.Incident) error
	// LoadIncidents returns the open incidents and each job's latest
	// window end, for incident.Tracker.Restore, and the jobs of the open
	// incidents it could not read (their bodies do not decode).
	LoadIncidents(ctx context.Context) (open []incident.Incident, seen map[string]int64, refused []incident.RefusedJob, err error)
}

// IncidentObserver is a stage of the pipeline (a stream.Observer) that
// keeps the incidents table up to date. Create it with New. It is safe for
// concurrent use.
//
// Changes not yet stored (WriteIncidents failed) are kept, at most one per
// incident (its latest state), so they are bounded by the open incidents
// (incident.Config.MaxOpen) plus those closed since the last success;
// metric skewlens_incidents_pending_changes.
type IncidentObserver struct {
	store Store
	log   *slog.Logger
	m     *metrics

	unreg     func()
	closeOnce sync.Once

	mu        sync.Mutex
	tr        *incident.Tracker
	pending   []incident.Change
	index     map[string]int // position in pending, by incident id
	onChanges []func([]incident.Change)
}

// New returns an IncidentObserver writing incidents to store, tracking them
// with tr, and registers its metrics on reg (nil: none). log may be nil.
func New(tr *incident.Tracker, store Store, log *slog.Logger, reg prometheus.Registerer) (*IncidentObserver, error) {
	if tr == nil || store == nil {
		return nil, errors.New("incidentsink: nil tracker or store")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &IncidentObserver{store: store, tr: tr, log: log.With("component", "incidentsink"), index: map[string]int{}}
	s.m = newMetrics(s)
	unreg, err := promreg.Register(reg, "incident observer", s.m.collectors()...)
	if err != nil {
		return nil, fmt.Errorf("incidentsink: %w", err)
	}
	s.unreg = unreg
	return s, nil
}

// OnChanges adds a function called with the changes of each store, in
// order, once they are stored: the alerts (alertdeliver.Alerter.Apply), the
// printed lines. Functions are called in the order they were added. They
// run under the IncidentObserver's lock, must not block, and must not keep
// the slice. Add them before the first Observe.
func (s *IncidentObserver) OnChanges(f func([]incident.Change)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onChanges = append(s.onChanges, f)
}

// Open returns the open incidents (incident.Tracker.Open): after Resume,
// those restored.
func (s *IncidentObserver) Open() []incident.Incident {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tr.Open()
}

// Close unregisters the IncidentObserver's metrics; it does not close the
// store, and is safe to call twice.
func (s *IncidentObserver) Close() error {
	s.closeOnce.Do(s.unreg)
	return nil
}

// Resume drops the tracked incidents and the changes not stored yet, and
// loads again the stored incidents of the jobs owns reports, in one
// attempt (the pipeline retries it). The pipeline calls it when
// partitions are assigned: the incidents of jobs that moved away are not
// closed here, and those of jobs that moved here go on. Unstored changes
// are dropped because their windows' offsets are not committed: the
// jobs' owner reads them again. A job's stored incident that cannot be
// read or restored costs that job, and only that job, its open
// incidents: it is logged (WARN, naming the job and the part) and
// counted (skewlens_incidents_state_refused_jobs_total), and the other
// jobs resume; their conditions open new incidents at their next
// findings.
func (s *IncidentObserver) Resume(ctx context.Context, owns func(jobID string) bool) error {
	open, seen, unreadable, err := s.store.LoadIncidents(ctx)
	if err != nil {
		return fmt.Errorf("resume incidents: %w", err)
	}
	unreadable = slices.DeleteFunc(unreadable, func(r incident.RefusedJob) bool { return !owns(r.JobID) })
	lost := map[string]bool{}
	for _, r := range unreadable {
		lost[r.JobID] = true
	}
	open = slices.DeleteFunc(open, func(in incident.Incident) bool { return !owns(in.JobID) || lost[in.JobID] })
	maps.DeleteFunc(seen, func(job string, _ int64) bool { return !owns(job) })
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tr.Reset()
	refused := append(unreadable, s.tr.Restore(open, seen)...)
	clear(s.pending)
	s.pending = s.pending[:0]
	clear(s.index)
	s.m.pending.Set(0)
	jobs := map[string]bool{}
	for _, r := range refused {
		stream.WarnRefusedState(s.log, "incidents", r.JobID, r.Err)
		jobs[r.JobID] = true
	}
	s.m.refusedJobs.Add(float64(len(jobs)))
	s.log.Info("incidents resumed", "open", s.tr.OpenCount(), "jobs", len(seen), "refused", len(jobs))
	return nil
}

// Observe folds stored findings into incidents and stores the changes,
// with any left from an earlier call. A store error is returned and the
// changes are kept: the runner retries the whole write, the tracker
// ignores findings it has folded in, and the kept changes are stored
// then.
func (s *IncidentObserver) Observe(ctx context.Context, _ uint64, fs []skew.Finding) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.add(s.tr.Observe(fs))
	return s.flush(ctx)
}

// Advance advances the tracker to now, the end of the last closed window, and stores the
// incidents that closed.
func (s *IncidentObserver) Advance(ctx context.Context, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.add(s.tr.Advance(now.UnixMilli()))
	return s.flush(ctx)
}

// add queues changes, replacing a pending change of the same incident
// with its later state (an incident opened and updated before a store
// succeeded stays "opened"; a closed one stays "closed").
func (s *IncidentObserver) add(cs []incident.Change) {
	for _, c := range cs {
		if i, ok := s.index[c.Incident.ID]; ok {
			prev := &s.pending[i]
			if prev.Kind == incident.Opened && c.Kind == incident.Updated {
				c.Kind = incident.Opened
			}
			// A change no finding made (a plan's receipt, a salted key's
			// spread) keeps the finding of the change it replaces: the
			// alerts act on findings, and one taken away here would never
			// fire (a data_skew alert whose plan's receipt started in the
			// window that made it last).
			if c.Finding == nil && c.Kind != incident.Closed {
				c.Finding = prev.Finding
			}
			c.Lasted = c.Lasted || prev.Lasted
			*prev = c
			continue
		}
		s.index[c.Incident.ID] = len(s.pending)
		s.pending = append(s.pending, c)
	}
	s.m.pending.Set(float64(len(s.pending)))
}

// flush stores the pending changes; they are dropped once stored.
func (s *IncidentObserver) flush(ctx context.Context) error {
	if len(s.pending) == 0 {
		return nil
	}
	ins := make([]incident.Incident, len(s.pending))
	for i := range s.pending {
		ins[i] = s.pending[i].Incident
	}
	if err := s.store.WriteIncidents(ctx, ins); err != nil {
		s.log.Warn("incident changes not stored; kept for the next try", "changes", len(s.pending), "err", err)
		return fmt.Errorf("store %d incident changes: %w", len(ins), err)
	}
	for _, c := range s.pending {
		s.m.changes.WithLabelValues(string(c.Kind)).Inc()
	}
	for _, f := range s.onChanges {
		f(s.pending)
	}
	clear(s.pending)
	s.pending = s.pending[:0]
	clear(s.index)
	s.m.pending.Set(0)
	return nil
}
