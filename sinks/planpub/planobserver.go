package planpub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/internal/promreg"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/plans"
)

// ChangePublisher stores plan changes: the Publisher (the Kafka topic)
// is one, the ClickHouse plans table (through PublisherFunc) another.
// Publish returns nil only once every change is stored, in order.
type ChangePublisher interface {
	Publish(ctx context.Context, changes []plans.Change) error
}

// PublisherFunc adapts a function to ChangePublisher.
type PublisherFunc func(ctx context.Context, changes []plans.Change) error

// Publish calls f.
func (f PublisherFunc) Publish(ctx context.Context, changes []plans.Change) error {
	return f(ctx, changes)
}

// Tee returns a ChangePublisher that publishes to each of ps in turn and
// stops at the first error. Each must tolerate changes published twice (the
// PlanObserver retries all of them): a compacted topic and a versioned
// table both do. A PlanObserver publishing to a Tee that holds a *Publisher
// publishes its lineage messages to that Publisher alone (they are the
// topic's).
func Tee(ps ...ChangePublisher) ChangePublisher { return tee(ps) }

type tee []ChangePublisher

// Publish publishes to each member in turn.
func (t tee) Publish(ctx context.Context, changes []plans.Change) error {
	for _, p := range t {
		if err := p.Publish(ctx, changes); err != nil {
			return err
		}
	}
	return nil
}

type publisher = ChangePublisher

// PlanObserver is a stage of the pipeline (a stream.Observer) that keeps
// the plans topic up to date: it feeds stored findings to a plans.Manager
// and publishes the plan changes. Create it with NewPlanObserver. It is
// safe for concurrent use; its methods serialise, so the changes reach the
// topic in the order the Manager made them.
//
// Changes not yet published are kept in order; a change replaces its
// task's last pending change only when both carry the same plan version
// (see add). So the pending changes are bounded by the Manager's tasks
// (plans.Config.MaxPlans plus overridden tasks) times the changes of
// version each makes while publishing fails; metric
// skewlens_planpub_pending_changes. Why: docs/architecture.md, Design
// notes: the plan sink's queue.
type PlanObserver struct {
	mgr  *plans.Manager
	pub  publisher
	load PlanLoader
	log  *slog.Logger
	m    *observerMetrics
	// lin follows the lineage messages on the plans topic (guarded by
	// mu); nil without a topic.
	lin *lineageState

	unreg     func()
	closeOnce sync.Once

	mu      sync.Mutex
	pending []plans.Change
	index   map[string]int // position in pending of each task's last change, by plans.Key
	// republished is the event time current plans were last published
	// again (see Advance).
	republished time.Time
	// overrides are the overrides last given to SetOverrides, which
	// Resume sets again on the restored Manager.
	overrides []plans.Override
}

// RepublishEvery is the most event time that passes between two
// publications of every current plan by Advance (less when half the
// Manager's Cooldown or TTL is shorter). A plan's version changes only
// when it changes materially, but its updated_at and expires_at move with
// every window that confirms it; readers that judge expiry by expires_at
// (the plans table behind skewlens serve, a Flink job) must see them move
// before the old expires_at passes.
const RepublishEvery = 5 * time.Minute

// NewPlanObserver returns a PlanObserver publishing plan changes through
// pub (a *Publisher, or a Tee of it and the plans table), that resumes the
// stored plans from load (StoredPlans: where Restore reads them), and
// registers the Manager's statistics and the pending changes on reg (nil:
// not registered). log may be nil. When pub is a *Publisher or a Tee
// holding one, the PlanObserver also publishes the lineage messages (see
// the package documentation) to it, starting from those its last Load read
// (Restore's).
func NewPlanObserver(mgr *plans.Manager, pub ChangePublisher, load PlanLoader, log *slog.Logger, reg prometheus.Registerer) (*PlanObserver, error) {
	if mgr == nil || pub == nil || load == nil {
		return nil, permanent("new sink", errors.New("nil manager, publisher or plan loader"))
	}
	return newPlanObserver(mgr, pub, load, log, reg)
}

func newPlanObserver(mgr *plans.Manager, pub publisher, load PlanLoader, log *slog.Logger, reg prometheus.Registerer) (*PlanObserver, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := newObserverMetrics(mgr)
	unreg, err := promreg.Register(reg, "plan observer", m.pending, m)
	if err != nil {
		return nil, permanent("new sink", err)
	}
	return &PlanObserver{mgr: mgr, pub: pub, load: load, lin: newLineageState(lineageOutOf(pub)),
		log: log.With("component", "planpub.sink"), m: m, unreg: unreg, index: map[string]int{}}, nil
}

// Close unregisters the PlanObserver's metrics. It does not close the
// Publisher, which the caller owns, and is safe to call twice.
func (s *PlanObserver) Close() error {
	s.closeOnce.Do(s.unreg)
	return nil
}

// Observe feeds every stored finding to the Manager, advances it to the
// latest window end in fs and publishes the changes, with any left from
// an earlier call. A publish error is returned, and the changes are kept:
// the runner retries the whole write, the Manager ignores findings it has
// seen, and the kept changes are published then. Observe blocks like
// Publisher.Publish.
func (s *PlanObserver) Observe(ctx context.Context, _ uint64, fs []skew.Finding) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var end int64
	for i := range fs {
		s.add(s.mgr.Observe(&fs[i]))
		end = max(end, fs[i].WindowEnd)
	}
	if end > 0 {
		s.add(s.mgr.Advance(time.UnixMilli(end)))
	}
	return s.flush(ctx)
}

// Advance advances the Manager to now (event time, e.g. the end of the
// last closed window) and publishes the changes: cooled-down keys and
// expired plans go even when no findings come. Call it when windows close
// without findings. Every RepublishEvery of event time it publishes every
// current plan again, unchanged but for its times and with its version.
func (s *PlanObserver) Advance(ctx context.Context, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.add(s.mgr.Advance(now))
	cfg := s.mgr.Config()
	if now.Sub(s.republished) >= min(RepublishEvery, cfg.Cooldown/2, cfg.TTL/2) {
		cur := s.mgr.Current()
		for i := range cur {
			s.add([]plans.Change{{JobID: cur[i].JobID, TaskName: cur[i].TaskName, Plan: &cur[i]}})
		}
		if err := s.flush(ctx); err != nil {
			return err
		}
		s.republished = now
		return nil
	}
	return s.flush(ctx)
}

// SetOverrides replaces the Manager's overrides and publishes the
// changes. Invalid overrides are left out and reported, as by
// plans.Manager.SetOverrides; the valid ones take effect all the same.
// The PlanObserver keeps ovs (the caller must not change them) for Resume.
func (s *PlanObserver) SetOverrides(ctx context.Context, ovs []plans.Override) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.overrides = ovs
	cs, verr := s.mgr.SetOverrides(ovs)
	s.add(cs)
	if err := s.flush(ctx); err != nil {
		return errors.Join(err, verr)
	}
	if verr != nil {
		return fmt.Errorf("planpub: set overrides: %w", verr)
	}
	return nil
}

// Resume drops the Manager's plans and the changes not published yet,
// restores the stored plans of the jobs owns reports (from the PlanObserver's
// PlanLoader) and sets the overrides last given to SetOverrides again,
// in one attempt (the pipeline retries it): the Manager is then as at
// start-up. The pipeline calls it when partitions are assigned: the
// plans of jobs that moved away are no longer retired, expired or
// published here, and those of jobs that moved here go on from what
// their last owner published. Unpublished changes are dropped because
// their windows' offsets are not committed: the jobs' owner reads them
// again. Plans that cannot be read or that the Manager refuses cost only
// their tasks their plans: their jobs are logged and counted, as by
// Restore. The lineage messages of the owned jobs that the read found
// are compared again at the next publication (stale ones tombstoned).
// Resume blocks on the read.
func (s *PlanObserver) Resume(ctx context.Context, owns func(jobID string) bool) error {
	stored, err := s.load.LoadPlans(ctx)
	if err != nil {
		return fmt.Errorf("resume salting plans: %w", err)
	}
	stored.Plans = slices.DeleteFunc(stored.Plans, func(p plans.Plan) bool { return !owns(p.JobID) })
	stored.Retired = slices.DeleteFunc(stored.Retired, func(r plans.RetiredTask) bool { return !owns(r.JobID) })
	stored.Unreadable = slices.DeleteFunc(stored.Unreadable, func(r plans.RefusedJob) bool { return !owns(r.JobID) })
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mgr.Reset()
	logRefused(s.log, s.mgr.Restore(stored))
	clear(s.pending)
	s.pending = s.pending[:0]
	clear(s.index)
	if s.lin != nil {
		// After the load above: the lineage messages it read.
		s.lin.reset(owns)
	}
	// Event time starts again from the committed offsets: republish as a
	// started instance does, at the first Advance.
	s.republished = time.Time{}
	cs, verr := s.mgr.SetOverrides(s.overrides)
	if verr != nil {
		s.log.Warn("plan overrides", "err", verr)
	}
	s.add(cs) // published with the next Write or Advance; sets the metric
	s.log.Info("salting plans resumed", "plans", len(stored.Plans), "retired", len(stored.Retired), "overrides", len(s.overrides))
	return nil
}

// Pending returns the changes not published yet.
func (s *PlanObserver) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// add queues changes, each replacing its task's last pending change when
// both carry the same plan version (see PlanObserver).
func (s *PlanObserver) add(cs []plans.Change) {
	if s.lin != nil {
		s.lin.touch(cs)
	}
	for _, c := range cs {
		k := plans.Key(c.JobID, c.TaskName)
		if i, ok := s.index[k]; ok && version(s.pending[i]) == version(c) {
			s.pending[i] = c
			continue
		}
		s.index[k] = len(s.pending)
		s.pending = append(s.pending, c)
	}
	s.m.pending.Set(float64(len(s.pending)))
}

// version returns the plan version a change carries; 0 for a retirement
// (a tombstone), which carries no plan.
func version(c plans.Change) uint64 {
	if c.Plan == nil {
		return 0
	}
	return c.Plan.Version
}

// flush publishes the pending changes, then the lineage messages they
// make (see lineageState); both are dropped once published.
func (s *PlanObserver) flush(ctx context.Context) error {
	if s.lin != nil {
		s.lin.update(s.mgr)
	}
	if len(s.pending) > 0 {
		if err := s.pub.Publish(ctx, s.pending); err != nil {
			s.log.Warn("plan changes not published; kept for the next try", "changes", len(s.pending), "err", err)
			return err
		}
		clear(s.pending)
		s.pending = s.pending[:0]
		clear(s.index)
		s.m.pending.Set(0)
	}
	if s.lin != nil {
		if err := s.lin.flush(ctx); err != nil {
			s.log.Warn("lineage messages not published; kept for the next try", "messages", len(s.lin.pending), "err", err)
			return err
		}
	}
	return nil
}

// observerMetrics are the PlanObserver's metrics: the pending changes, and the
// Manager's statistics, read at each scrape.
type observerMetrics struct {
	mgr     *plans.Manager
	pending prometheus.Gauge
	descs   map[string]*prometheus.Desc
}

func newObserverMetrics(mgr *plans.Manager) *observerMetrics {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("skewlens_plans_"+name, help, nil, nil)
	}
	return &observerMetrics{
		mgr: mgr,
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "skewlens", Subsystem: "planpub", Name: "pending_changes",
			Help: "Plan changes waiting to be published (at most one per task and plan version).",
		}),
		descs: map[string]*prometheus.Desc{
			"served":      d("served", "Salting plans served now."),
			"tasks":       d("tasks", "Tasks the plan manager tracks (served, cooling down, overridden or recently retired)."),
			"invalid":     d("invalid_findings_total", "salting_plan findings ignored as invalid."),
			"stale":       d("stale_findings_total", "Findings older than their task's last one, ignored."),
			"bad_keys":    d("bad_keys_total", "Keys of findings left out because their salted keys were invalid."),
			"overflow":    d("overflow_total", "Findings of new tasks dropped because the plan manager tracks its maximum of tasks."),
			"keys_capped": d("keys_capped_total", "Keys dropped because a plan reached its maximum of keys."),
			"refused":     d("state_refused_jobs_total", "Jobs whose stored plans could not be restored (they did not decode or validate: another version, corruption); their tasks restart without them."),
		},
	}
}

// Describe implements prometheus.Collector for the Manager's statistics.
func (m *observerMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range m.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector for the Manager's statistics.
func (m *observerMetrics) Collect(ch chan<- prometheus.Metric) {
	st := m.mgr.Stats()
	gauge := func(k string, v int) {
		ch <- prometheus.MustNewConstMetric(m.descs[k], prometheus.GaugeValue, float64(v))
	}
	counter := func(k string, v uint64) {
		ch <- prometheus.MustNewConstMetric(m.descs[k], prometheus.CounterValue, float64(v))
	}
	gauge("served", st.Plans)
	gauge("tasks", st.Tasks)
	counter("invalid", st.Invalid)
	counter("stale", st.Stale)
	counter("bad_keys", st.BadKeys)
	counter("overflow", st.Overflow)
	counter("keys_capped", st.KeysCapped)
	counter("refused", st.RefusedJobs)
}
