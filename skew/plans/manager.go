package plans

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/keygroup"
)

// Manager turns the engine's salting_plan findings and the operators'
// overrides into the plans to serve and the changes to publish. See the
// package documentation for the rules; docs/salting-plans.md has them in
// full. Create it with NewManager. A Manager is safe for concurrent use;
// its methods never block on anything but each other.
type Manager struct {
	cfg Config

	mu    sync.Mutex
	tasks map[string]*taskState // by Key(job, task)
	// now is the latest event time seen (window ends, Advance; not
	// restored plans, see Restore); overrides take effect at it.
	now   time.Time
	stats Stats
}

// Stats counts what the Manager left out, for the caller's metrics.
type Stats struct {
	// Plans is the number of plans currently served.
	Plans int
	// Tasks is the number of tasks tracked (served, cooling down,
	// overridden, or retired and remembered).
	Tasks int
	// Invalid counts salting_plan findings ignored because their job,
	// task or parallelism is invalid.
	Invalid uint64
	// Stale counts findings older than the last one of their task.
	Stale uint64
	// BadKeys counts keys of findings left out because their salted keys
	// are invalid (see Config.Separator).
	BadKeys uint64
	// Overflow counts findings of new tasks dropped at Config.MaxPlans.
	Overflow uint64
	// KeysCapped counts keys dropped at Config.MaxKeys.
	KeysCapped uint64
	// RefusedJobs counts the jobs Restore refused plans of.
	RefusedJobs uint64
}

// taskState is what the Manager knows about one task.
type taskState struct {
	job, task, jobName string
	// The engine's plan: the parallelism pair and the keys, including
	// those cooling down.
	par, maxPar   int
	keys          map[string]*keyState
	updated       time.Time // last confirming finding; zero when none
	before, after float64   // the engine's max/mean predictions
	// served is the plan served now (nil: none); version the last one
	// published, kept after retirement so versions never go back.
	served    *Plan
	version   uint64
	retiredAt time.Time
	// pinned with frozen: the plan as it was pinned (nil when there was
	// none). ovs: the task's valid overrides, sorted by At.
	pinned bool
	frozen *Plan
	ovs    []Override
}

// keyState is one key of the engine's plan.
type keyState struct {
	share   float64
	subtask int
	buckets int
	salted  []skew.SaltTarget
	lastHot time.Time
}

// NewManager returns a Manager with no plans. A zero field of cfg means
// its default (DefaultConfig). It fails only when cfg is invalid.
func NewManager(cfg Config) (*Manager, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Manager{cfg: cfg, tasks: map[string]*taskState{}}, nil
}

// Reset drops every plan, override and event time: the Manager is then as
// NewManager made it (its configuration and Stats counters kept), and
// Restore and SetOverrides may be called again. A pipeline whose
// partitions moved to another instance resets and restores the stored
// plans, so that it neither retires nor publishes the plans of jobs it
// no longer reads.
func (m *Manager) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.tasks)
	m.now = time.Time{}
}

// Config returns the Manager's configuration with its defaults filled in.
func (m *Manager) Config() Config { return m.cfg }

// Observe merges one finding into its task's plan and returns the
// changes to publish: for a salting_plan or hot_key finding none or one
// new version of the task's plan, for a job_end finding those of endJob.
// Other kinds, and findings older than the task's last one, are ignored,
// so replaying findings after a restart changes nothing. The finding's
// window end is the event time.
//
// It applies the package's rules (see Rules in the package doc): a
// salting_plan finding's keys with at least two valid salted keys join or
// refresh the plan (share, LastHotAt); a hot_key finding of a key already
// in the plan keeps it hot and confirms the plan, but never adds a key or
// changes salted keys (docs/architecture.md, Design notes: why hot_key
// findings confirm a plan); keys whose cooldown has passed leave. A new
// version is made only when the served plan changes materially.
func (m *Manager) Observe(f *skew.Finding) []Change {
	if f == nil {
		return nil
	}
	switch {
	case f.Kind == skew.KindSaltingPlan && f.Plan != nil:
	case f.Kind == skew.KindHotKey && f.HotKey != nil:
		return m.observeHotKey(f)
	case f.Kind == skew.KindJobEnd && f.JobEnd != nil:
		return m.endJob(f)
	default:
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p := f.Plan
	r, err := keygroup.NewRouter(p.Parallelism, p.MaxParallelism)
	if err != nil || p.MaxParallelism == 0 || checkJobID(f.JobID) != nil ||
		checkName("task name", f.TaskName, MaxNameBytes) != nil {
		m.stats.Invalid++
		return nil
	}
	now := time.UnixMilli(f.WindowEnd).UTC()
	id := Key(f.JobID, f.TaskName)
	st := m.tasks[id]
	if st != nil && now.Before(st.updated) {
		m.stats.Stale++
		return nil
	}
	// The finding's usable keys, checked before any state is made.
	hot := make([]*skew.SaltedKey, 0, len(p.Keys))
	for i := range p.Keys {
		k := &p.Keys[i]
		if k.Buckets < 2 && len(k.Salted) == 0 {
			continue // hot, but the engine does not salt it this window
		}
		if !saltTargetsOK(r, m.cfg.Separator, k) {
			m.stats.BadKeys++
			continue
		}
		hot = append(hot, k)
	}
	if len(hot) == 0 && (st == nil || st.served == nil && len(st.keys) == 0) {
		// Nothing to serve, for a task new or retired: it stays as it
		// is (a retired task as a restored retirement is).
		return nil
	}
	if st == nil {
		if !m.makeRoom() {
			return nil
		}
		st = &taskState{job: f.JobID, task: f.TaskName, keys: map[string]*keyState{}}
		m.tasks[id] = st
	}
	if now.After(m.now) {
		m.now = now
	}
	if checkName("job name", f.JobName, MaxNameBytes) == nil {
		st.jobName = f.JobName
	}
	if st.par != p.Parallelism || st.maxPar != p.MaxParallelism {
		clear(st.keys)
		st.par, st.maxPar = p.Parallelism, p.MaxParallelism
	}
	st.updated = now
	st.before, st.after = finite(p.MaxOverMeanBefore), finite(p.MaxOverMeanAfter)
	for _, k := range hot {
		ks := st.keys[k.Key]
		if ks == nil {
			ks = &keyState{}
			st.keys[k.Key] = ks
		}
		if ks.buckets == 0 || m.cfg.material(ks.buckets, k.Buckets) {
			ks.buckets, ks.salted = k.Buckets, slices.Clone(k.Salted)
		}
		ks.share, ks.subtask, ks.lastHot = k.Share, k.Subtask, now
	}
	m.cool(st, now)
	m.capKeys(st, now)
	return m.publish(st, now, nil)
}

// endJob retires the plans of a run that ended (a job_end finding) and
// forgets its tasks, overrides and pins included: Flink never reuses a
// job id. When a new run of the job took its place, each task's engine
// plan first carries over to it (a new task of the successor, version 1)
// if the successor's task runs at the parallelism and max parallelism the
// salted keys were routed for (a max parallelism not known yet counts as
// the same); otherwise the engine proposes a plan afresh when the skew
// shows again.
func (m *Manager) endJob(f *skew.Finding) []Change {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.UnixMilli(f.WindowEnd).UTC()
	if now.After(m.now) {
		m.now = now
	}
	next := map[string]skew.TaskShape{}
	if f.JobEnd.Reason == skew.EndRestarted && checkJobID(f.JobEnd.Successor) == nil {
		for _, t := range f.JobEnd.SuccessorTasks {
			next[t.Name] = t
		}
	}
	var out []Change
	for _, id := range m.ids() {
		st := m.tasks[id]
		if st.job != f.JobID {
			continue
		}
		sh, ok := next[st.task]
		if ok && len(st.keys) > 0 && sh.Parallelism == st.par && (sh.MaxParallelism == 0 || sh.MaxParallelism == st.maxPar) &&
			m.tasks[Key(f.JobEnd.Successor, st.task)] == nil && m.makeRoom() {
			c := &taskState{job: f.JobEnd.Successor, task: st.task, jobName: st.jobName, par: st.par, maxPar: st.maxPar,
				keys: make(map[string]*keyState, len(st.keys)), updated: now, before: st.before, after: st.after}
			for k, ks := range st.keys {
				cp := *ks
				cp.salted = slices.Clone(ks.salted)
				c.keys[k] = &cp
			}
			m.tasks[Key(c.job, c.task)] = c
			out = m.publish(c, now, out)
		}
		st.pinned, st.frozen, st.ovs = false, nil, nil
		clear(st.keys)
		out = m.publish(st, now, out)
		delete(m.tasks, id)
	}
	return out
}

// observeHotKey refreshes a key of a plan from a hot_key finding (see
// Observe).
func (m *Manager) observeHotKey(f *skew.Finding) []Change {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.tasks[Key(f.JobID, f.TaskName)]
	if st == nil {
		return nil
	}
	ks := st.keys[f.HotKey.Key]
	if ks == nil {
		return nil
	}
	now := time.UnixMilli(f.WindowEnd).UTC()
	if now.Before(st.updated) {
		m.stats.Stale++
		return nil
	}
	if sh := f.HotKey.Share; sh >= 0 && sh <= 1 {
		ks.share = sh
	}
	ks.lastHot, st.updated = now, now
	if now.After(m.now) {
		m.now = now
	}
	m.cool(st, now)
	return m.publish(st, now, nil)
}

// Advance moves the Manager's event time to now (it never goes back) and
// returns the changes that time alone makes: keys whose cooldown has
// passed leave their plans (a new version, or a retirement when no key is
// left), plans not confirmed for the TTL are retired, and tasks retired
// for longer than Config.RetainRetired are forgotten. Pinned and
// overridden plans are not retired by time. Changes are sorted by job and
// task.
func (m *Manager) Advance(now time.Time) []Change {
	m.mu.Lock()
	defer m.mu.Unlock()
	now = now.UTC()
	if now.Before(m.now) {
		now = m.now
	}
	m.now = now
	var out []Change
	for _, id := range m.ids() {
		st := m.tasks[id]
		m.cool(st, now)
		if len(st.keys) > 0 && !now.Before(st.updated.Add(m.cfg.TTL)) {
			clear(st.keys)
		}
		out = m.publish(st, now, out)
		if st.served == nil && len(st.keys) == 0 && len(st.ovs) == 0 && !st.pinned &&
			!now.Before(st.retiredAt.Add(m.cfg.RetainRetired)) {
			delete(m.tasks, id)
		}
	}
	return out
}

// Current returns the plans served now, sorted by job and task. The
// plans are copies: their shares, LastHotAt, UpdatedAt and ExpiresAt are
// the latest, while Version and GeneratedAt are those of the version last
// published.
func (m *Manager) Current() []Plan {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Plan
	for _, id := range m.ids() {
		if p := m.tasks[id].served; p != nil {
			out = append(out, *clonePlan(p))
		}
	}
	return out
}

// Plan returns the plan served now for one task, or nil.
func (m *Manager) Plan(jobID, taskName string) *Plan {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st := m.tasks[Key(jobID, taskName)]; st != nil {
		return clonePlan(st.served)
	}
	return nil
}

// Stats returns the Manager's counters.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	s.Tasks = len(m.tasks)
	for _, st := range m.tasks {
		if st.served != nil {
			s.Plans++
		}
	}
	return s
}

// Restore loads the plans served before a restart (the latest per task,
// from the topic or the plans table), so that versions continue from them
// and replayed findings make no new versions, and the tasks whose plans
// were retired, so that a task's next plan continues from its retired
// version (for Config.RetainRetired after the retirement). A plan or
// retirement whose version is not above the Manager's for its task is
// skipped. An engine plan brings back its keys with their LastHotAt, so
// that cooldowns and the TTL go on; a pinned plan is frozen again until
// SetOverrides says whether its pin still exists. Call it before the
// first Observe (or after Reset), then SetOverrides, with the plans of the
// jobs this Manager owns only (the pipeline restores those whose engine
// state it restored): it cools, expires, retires and publishes them as
// its own. It leaves the event time to the first Observe or Advance:
// plans are stored as they changed, and the newest one's time would cool
// the others' keys before their jobs' next findings.
//
// A plan that does not validate, or for which there is no room
// (MaxPlans), costs its task its plan: it is skipped, and the others are
// restored all the same (a job's other plans too: they are on the topic,
// and a job ignores a version below the one it has). s.Unreadable are the
// stored plans the caller could not read. Restore returns the jobs of
// both, one per job in job order, and counts them (Stats.RefusedJobs).
func (m *Manager) Restore(s Stored) []RefusedJob {
	m.mu.Lock()
	defer m.mu.Unlock()
	refused := map[string][]error{}
	for _, r := range s.Unreadable {
		refused[r.JobID] = append(refused[r.JobID], r.Err)
	}
	for i := range s.Plans {
		p := clonePlan(&s.Plans[i])
		if err := m.restorable(p); err != nil {
			refused[p.JobID] = append(refused[p.JobID], fmt.Errorf("plan of task %.64q: %w", p.TaskName, err))
			continue
		}
		st, err := m.restoredTask(p.JobID, p.TaskName, p.Version)
		if err != nil {
			refused[p.JobID] = append(refused[p.JobID], err)
		}
		if st == nil {
			continue
		}
		normalize(p)
		st.served, st.version, st.jobName = p, p.Version, p.JobName
		clear(st.keys)
		st.par, st.maxPar, st.updated = 0, 0, time.Time{}
		st.pinned, st.frozen = p.Pinned, nil
		if p.Pinned {
			st.frozen = clonePlan(p)
		}
		if p.Source == SourceEngine && !p.Pinned {
			st.par, st.maxPar, st.updated = p.Parallelism, p.MaxParallelism, p.UpdatedAt
			st.before, st.after = p.MaxOverMeanBefore, p.MaxOverMeanAfter
			for _, k := range p.HotKeys {
				st.keys[k.Key] = &keyState{share: k.Share, subtask: k.Subtask, buckets: k.Buckets,
					salted: slices.Clone(k.Salted), lastHot: k.LastHotAt}
			}
		}
	}
	for _, r := range s.Retired {
		if err := errors.Join(checkJobID(r.JobID), checkName("task name", r.TaskName, MaxNameBytes)); err != nil || r.Version == 0 {
			refused[r.JobID] = append(refused[r.JobID], fmt.Errorf("retirement of task %.64q (version %d): %w", r.TaskName, r.Version, err))
			continue
		}
		st, err := m.restoredTask(r.JobID, r.TaskName, r.Version)
		if err != nil {
			refused[r.JobID] = append(refused[r.JobID], err)
		}
		if st != nil {
			*st = taskState{job: r.JobID, task: r.TaskName, keys: map[string]*keyState{}, version: r.Version, retiredAt: r.At.UTC()}
		}
	}
	out := make([]RefusedJob, 0, len(refused))
	for j, errs := range refused {
		out = append(out, RefusedJob{JobID: j, Err: errors.Join(errs...)})
	}
	slices.SortFunc(out, func(a, b RefusedJob) int { return cmp.Compare(a.JobID, b.JobID) })
	m.stats.RefusedJobs += uint64(len(out))
	return out
}

// restoredTask returns the state a restored plan or retirement of
// version v of a task goes into (nil when the Manager has that version or
// a later one), making it if needed; the error says there was no room.
func (m *Manager) restoredTask(job, task string, v uint64) (*taskState, error) {
	id := Key(job, task)
	st := m.tasks[id]
	if st != nil {
		if v <= st.version {
			return nil, nil
		}
		return st, nil
	}
	if !m.makeRoom() {
		return nil, fmt.Errorf("plan of task %.64q: more than %d tasks", task, m.cfg.MaxPlans)
	}
	st = &taskState{job: job, task: task, keys: map[string]*keyState{}}
	m.tasks[id] = st
	return st, nil
}

// RefusedJob is a job some of whose stored plans Restore refused (they
// do not decode or validate: another version, corruption), and why: the
// one type every owner of per-job state refuses with (skew.RefusedJob).
type RefusedJob = skew.RefusedJob

// restorable checks a plan read back from storage.
func (m *Manager) restorable(p *Plan) error {
	if err := checkJobID(p.JobID); err != nil {
		return err
	}
	if err := checkName("task name", p.TaskName, MaxNameBytes); err != nil {
		return err
	}
	if p.Version == 0 {
		return errors.New("version 0")
	}
	if p.Source != SourceEngine && p.Source != SourceOverride {
		return fmt.Errorf("source %q", p.Source)
	}
	return validatePlan(p, p.JobID, p.TaskName)
}

// SetOverrides replaces all overrides by ovs and returns the changes of
// the served plans, sorted by job and task. A task that gains a pin
// freezes the engine's plan as it is now; one that loses it serves the
// engine's plan again. Overrides take effect at the latest event time the
// Manager has seen. Overrides that fail Validate are left out and
// reported in the error; the others take effect all the same.
func (m *Manager) SetOverrides(ovs []Override) ([]Change, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	byTask := map[string][]Override{}
	var errs []error
	for i, o := range ovs {
		if err := o.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("override %d: %w", i, err))
			continue
		}
		o.At = o.At.UTC()
		o.Plan = clonePlan(o.Plan)
		id := Key(o.JobID, o.TaskName)
		byTask[id] = append(byTask[id], o)
	}
	for id := range byTask {
		if m.tasks[id] == nil {
			o := byTask[id][0]
			// Overrides are few and made by people, so they are never
			// refused for MaxPlans; a retired task still makes room.
			m.evict()
			m.tasks[id] = &taskState{job: o.JobID, task: o.TaskName, keys: map[string]*keyState{}}
		}
	}
	at := m.now
	if at.IsZero() {
		// Nothing observed yet: the overrides' own time.
		for _, o := range byTask {
			for _, o := range o {
				if o.At.After(at) {
					at = o.At
				}
			}
		}
	}
	var out []Change
	for _, id := range m.ids() {
		st := m.tasks[id]
		nov := byTask[id]
		if len(nov) == 0 && len(st.ovs) == 0 && !st.pinned {
			continue
		}
		slices.SortStableFunc(nov, func(a, b Override) int { return a.At.Compare(b.At) })
		pin := slices.ContainsFunc(nov, func(o Override) bool { return o.Action == ActionPin })
		switch {
		case pin && !st.pinned:
			st.pinned, st.frozen = true, m.enginePlan(st)
		case !pin:
			st.pinned, st.frozen = false, nil
		}
		st.ovs = nov
		out = m.publish(st, at, out)
	}
	return out, errors.Join(errs...)
}

// ids returns the tracked task ids sorted by job, then task. (Sorting the
// ids would not do: job "a" comes before job "a-b", but "a/t" sorts after
// "a-b/t".)
func (m *Manager) ids() []string {
	ids := make([]string, 0, len(m.tasks))
	for id := range m.tasks {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		x, y := m.tasks[a], m.tasks[b]
		return cmp.Or(cmp.Compare(x.job, y.job), cmp.Compare(x.task, y.task))
	})
	return ids
}

// makeRoom makes room for one more task (see evict); it reports false,
// counting an overflow, when there is none.
func (m *Manager) makeRoom() bool {
	if m.evict() {
		return true
	}
	m.stats.Overflow++
	return false
}

// evict makes room for one more task, forgetting the task retired longest
// ago if MaxPlans tasks are tracked; it reports false when all of them are
// live.
func (m *Manager) evict() bool {
	if len(m.tasks) < m.cfg.MaxPlans {
		return true
	}
	victim := ""
	var vt *taskState
	for id, st := range m.tasks {
		if st.served != nil || len(st.keys) > 0 || len(st.ovs) > 0 || st.pinned {
			continue
		}
		if vt == nil || st.retiredAt.Before(vt.retiredAt) || st.retiredAt.Equal(vt.retiredAt) && id < victim {
			victim, vt = id, st
		}
	}
	if vt == nil {
		return false
	}
	delete(m.tasks, victim)
	return true
}

// cool drops the keys whose cooldown has passed at now.
func (m *Manager) cool(st *taskState, now time.Time) {
	for k, ks := range st.keys {
		if !now.Before(ks.lastHot.Add(m.cfg.Cooldown)) {
			delete(st.keys, k)
		}
	}
}

// capKeys keeps at most MaxKeys keys: those hot at now first, then the
// most recently hot, then the largest shares, then by key.
func (m *Manager) capKeys(st *taskState, now time.Time) {
	if len(st.keys) <= m.cfg.MaxKeys {
		return
	}
	names := make([]string, 0, len(st.keys))
	for k := range st.keys {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int {
		x, y := st.keys[a], st.keys[b]
		return cmp.Or(
			-x.lastHot.Compare(y.lastHot),
			-cmp.Compare(x.share, y.share),
			cmp.Compare(a, b))
	})
	for _, k := range names[m.cfg.MaxKeys:] {
		delete(st.keys, k)
		m.stats.KeysCapped++
	}
}

// enginePlan returns the engine's plan of a task as it stands (nil when
// it has no key), without version and GeneratedAt.
func (m *Manager) enginePlan(st *taskState) *Plan {
	if len(st.keys) == 0 {
		return nil
	}
	p := &Plan{
		JobID: st.job, JobName: st.jobName, TaskName: st.task,
		Parallelism: st.par, MaxParallelism: st.maxPar,
		UpdatedAt: st.updated,
		Separator: m.cfg.Separator, Source: SourceEngine,
		MaxOverMeanBefore: st.before, MaxOverMeanAfter: st.after,
		HotKeys: make([]HotKey, 0, len(st.keys)),
	}
	for k, ks := range st.keys {
		p.HotKeys = append(p.HotKeys, HotKey{
			Key: k, Share: ks.share, Subtask: ks.subtask, Buckets: ks.buckets,
			Salted: slices.Clone(ks.salted), LastHotAt: ks.lastHot,
		})
	}
	normalize(p)
	return p
}

// publish recomputes the served plan of st at now and appends the change
// to out, if there is one: a new version when the served plan changed
// materially, a retirement when there is none any more.
func (m *Manager) publish(st *taskState, now time.Time, out []Change) []Change {
	base := st.frozen
	if !st.pinned {
		base = m.enginePlan(st)
	}
	cand := apply(base, st.ovs, false)
	if cand == nil {
		if st.served == nil {
			return out
		}
		// The job name goes with the plan: a restored retirement has
		// none, so a later plan takes it from its own findings.
		st.served, st.retiredAt, st.jobName = nil, now, ""
		return append(out, Change{JobID: st.job, TaskName: st.task, Retired: true, Version: st.version, At: now})
	}
	if cand.Source == SourceEngine && !cand.Pinned {
		cand.ExpiresAt = m.expiry(cand)
	}
	if st.served != nil && SameMaterial(cand, st.served) {
		cand.Version, cand.GeneratedAt = st.served.Version, st.served.GeneratedAt
		st.served = cand
		return out
	}
	st.version++
	cand.Version, cand.GeneratedAt = st.version, now
	st.served = cand
	return append(out, Change{JobID: st.job, TaskName: st.task, Plan: clonePlan(cand)})
}

// finite returns v, or 0 when v is NaN or infinite: a plan is published
// as JSON, which has neither, and a plan that cannot be published cannot
// be restored either. The predictions are informational; the engine
// rounds such numbers to 0 too.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// expiry is when an engine plan is retired unless confirmed: at the TTL
// after its last confirmation, or when its last key has cooled down,
// whichever comes first.
func (m *Manager) expiry(p *Plan) time.Time {
	var last time.Time
	for _, k := range p.HotKeys {
		if k.LastHotAt.After(last) {
			last = k.LastHotAt
		}
	}
	e := p.UpdatedAt.Add(m.cfg.TTL)
	if c := last.Add(m.cfg.Cooldown); c.Before(e) {
		e = c
	}
	return e.UTC()
}
