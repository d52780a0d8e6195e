package incident

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/skewlens/skewlens/skew"
)

// Tracker turns the findings of closed windows into incidents. It does no
// I/O, reads no clock and is deterministic: its changes depend only on
// the sequence of calls and their arguments. It is not safe for
// concurrent use.
//
// Call Observe with the findings of closed windows, in the order the
// windows closed, and Advance with the watermark that closed them.
type Tracker struct {
	cfg    Config
	causes map[string]bool
	open   map[condition]*Incident
	seen   map[string]int64 // job id -> end of the latest window folded in
	// ended holds, during one Observe, the jobs whose run ended in it.
	ended map[string]struct{}
	// reports holds each job's latest window end with a finding of any
	// kind (Config.RequireReports), while it matters: the job has open
	// incidents or reported within ResolveAfter.
	reports map[string]int64
	now     int64
	refused uint64
}

// condition is what makes findings one incident.
type condition struct {
	id  Identity
	key string
}

func (c condition) compare(o condition) int {
	if x := c.id.Compare(o.id); x != 0 {
		return x
	}
	return strings.Compare(c.key, o.key)
}

// New returns a Tracker without incidents, after validating cfg.
func New(cfg Config) (*Tracker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Tracker{cfg: cfg, causes: map[string]bool{}, open: map[condition]*Incident{}, seen: map[string]int64{}, ended: map[string]struct{}{}, reports: map[string]int64{}}
	for _, c := range cfg.Causes {
		t.causes[c] = true
	}
	return t, nil
}

// record is one finding of an Observe call, with its role and, for a
// finding of a condition, its condition.
type record struct {
	role role
	c    condition
	f    *skew.Finding
}

// role is what a record tells the tracker; records of one window are
// folded in this order.
type role uint8

const (
	// roleReport: the finding's job reported in its window
	// (Config.RequireReports).
	roleReport role = iota
	// roleFollow: a job_end finding of a run a new run replaced, for
	// its under_provisioned incidents (see follow).
	roleFollow
	// roleCondition: a finding of a condition (an alert's identity).
	roleCondition
	// roleSpread: a hot_key finding of a salted key (HotKey.Subtasks).
	roleSpread
	// roleStats: a subtask_stats finding, for the effect of a plan on
	// its subtask's data_skew incident (see planEffect) and of a rescale
	// on its task's under_provisioned incident (see rescaleEffect).
	roleStats
	// roleEnd: a job_end finding.
	roleEnd
)

// Observe folds in the findings of closed windows and returns the
// changes, in event time order (then condition order): incidents closed
// because a later window in fs shows them absent for ResolveAfter, or
// relieved by a salting plan or a rescale, or because their run ended
// (an under_provisioned incident, and a skew incident whose salting plan
// carried over, follows its job into the run that replaced it instead:
// see follow), and the incidents each window opened, extended or
// followed. Findings that make no alert
// (hot keys that are not actionable, malformed ones) count only as their
// job's reports and as evidence of a plan's or a rescale's effect, and findings of a
// job's windows that ended at or before the latest window already folded
// in for that job are ignored: a replay after a restart, or the same call
// repeated, changes nothing.
func (t *Tracker) Observe(fs []skew.Finding) []Change {
	recs := make([]record, 0, len(fs))
	type jobWindow struct {
		job string
		end int64
	}
	reported := map[jobWindow]bool{} // one report per job and window: a window has a finding per subtask
	for i := range fs {
		f := intake(&fs[i])
		if f.WindowEnd <= 0 || f.WindowStart > f.WindowEnd {
			continue
		}
		if jw := (jobWindow{f.JobID, f.WindowEnd}); t.cfg.RequireReports && f.Kind != skew.KindJobEnd && !reported[jw] {
			reported[jw] = true
			recs = append(recs, record{role: roleReport, f: f})
		}
		if last, ok := t.seen[f.JobID]; ok && f.WindowEnd <= last {
			continue
		}
		switch {
		case f.Kind == skew.KindJobEnd && f.JobEnd != nil && f.JobID != "":
			if f.JobEnd.Reason == skew.EndRestarted {
				recs = append(recs, record{role: roleFollow, f: f})
			}
			recs = append(recs, record{role: roleEnd, f: f})
			continue
		case f.Kind == skew.KindHotKey && f.HotKey != nil && len(f.HotKey.Subtasks) > 1:
			recs = append(recs, record{role: roleSpread, f: f})
		case f.Kind == skew.KindSubtaskStats && f.Stats != nil && f.SubtaskIndex != nil && *f.SubtaskIndex >= 0:
			// Kept whether or not the incident is open yet: it may open
			// from an earlier window of this batch, and what a window's
			// statistics do must not depend on how windows were batched.
			c := condition{id: Identity{JobID: f.JobID, TaskName: f.TaskName, Subtask: *f.SubtaskIndex, Cause: skew.CauseDataSkew}}
			recs = append(recs, record{role: roleStats, c: c, f: f})
			continue
		}
		id, ok := IdentityOf(f)
		if !ok || !t.causes[id.Cause] {
			continue
		}
		c := condition{id: id}
		if id.Cause == CauseHotKey {
			c.key = f.HotKey.Key
		}
		recs = append(recs, record{role: roleCondition, c: c, f: f})
	}
	slices.SortStableFunc(recs, func(a, b record) int {
		return cmp.Or(cmp.Compare(a.f.WindowEnd, b.f.WindowEnd), cmp.Compare(a.role, b.role), a.c.compare(b.c))
	})
	var out []Change
	eachWindow(recs, func(r *record) *skew.Finding { return r.f }, func(start, end int64, group []record) {
		out = t.expire(start, out)
		var prev *Incident
		var tws []taskWindow // the window's statistics per task, for rescaleEffect
		for _, r := range group {
			if r.role > roleStats && tws != nil {
				out, tws = t.rescaleEffects(tws, out), nil
			}
			switch r.role {
			case roleReport:
				t.reports[r.f.JobID] = max(t.reports[r.f.JobID], r.f.WindowEnd)
			case roleFollow:
				out = t.follow(r.f, out)
			case roleEnd:
				out = t.endJob(r.f, out)
			case roleSpread:
				out = t.spread(r.f, out)
			case roleStats:
				if t.cfg.Plan != nil {
					out = t.planEffect(r, out)
				}
				tws = addStats(tws, r.f)
			case roleCondition:
				in, kind := t.apply(r)
				if in == nil || in == prev {
					continue // refused, or a second finding of one condition in a window
				}
				prev = in
				f := cloneFinding(r.f)
				out = append(out, Change{Kind: kind, Incident: clone(in), Finding: &f, Lasted: t.lasted(in)})
			}
		}
		out = t.rescaleEffects(tws, out)
		t.now = max(t.now, end)
	})
	for _, r := range recs {
		switch _, ended := t.ended[r.f.JobID]; {
		case r.role == roleReport, r.role == roleFollow:
		case r.role == roleEnd:
			delete(t.seen, r.f.JobID) // the run is over: nothing of it comes again
		case !ended:
			t.seen[r.f.JobID] = max(t.seen[r.f.JobID], r.f.WindowEnd)
		}
	}
	clear(t.ended)
	return out
}

// endJob closes every open incident of a run that ended (a job_end
// finding f), in condition order, with the reason as their Resolution.
func (t *Tracker) endJob(f *skew.Finding, out []Change) []Change {
	why, reason := "job stopped reporting", ReasonJobStopped
	if f.JobEnd.Reason == skew.EndRestarted {
		why, reason = "job restarted as "+skew.ShortID(f.JobEnd.Successor), ReasonJobRestarted
	}
	var done []condition
	for c := range t.open {
		if c.id.JobID == f.JobID {
			done = append(done, c)
		}
	}
	slices.SortFunc(done, condition.compare)
	for _, c := range done {
		in := t.open[c]
		delete(t.open, c)
		in.State, in.End, in.Resolution = StateClosed, in.LastSeen, why
		in.UpdatedAt = max(f.WindowEnd, in.UpdatedAt+1)
		out = append(out, Change{Kind: Closed, Incident: *in, Lasted: t.lasted(in), Reason: reason})
	}
	t.ended[f.JobID] = struct{}{}
	delete(t.reports, f.JobID)
	return out
}

// apply folds one finding into its condition's incident, opening one
// when needed. It returns nil when the bound MaxOpen refuses it.
func (t *Tracker) apply(r record) (*Incident, ChangeKind) {
	f := r.f
	in := t.open[r.c]
	kind := Updated
	if in == nil {
		if len(t.open) >= t.cfg.MaxOpen {
			t.refused++
			return nil, ""
		}
		in = &Incident{
			ID: IncidentID(r.c.id, r.c.key, f.WindowStart), JobID: f.JobID, TaskName: r.c.id.TaskName,
			Subtask: r.c.id.Subtask, Cause: r.c.id.Cause, Key: r.c.key, State: StateOpen, Start: f.WindowStart,
		}
		t.open[r.c] = in
		kind = Opened
	} else if f.WindowEnd <= in.LastSeen {
		return in, Updated // the same window again: already folded in
	}
	in.LastSeen = f.WindowEnd
	in.UpdatedAt = max(f.WindowEnd, in.UpdatedAt+1)
	in.Windows++
	if f.JobName != "" {
		in.JobName = f.JobName
	}
	if f.Summary != "" {
		in.Summary = f.Summary
	}
	switch {
	case f.HotKey != nil:
		in.Share.add(f.HotKey.Share)
		t.addKey(in, f.HotKey.Key)
	case f.Saturation != nil && f.Saturation.Evidence != nil:
		ev := f.Saturation.Evidence
		in.Busy.add(ev.BusyMsPerSecond)
		in.InputRatio.add(ev.InputRatio)
		in.Share.add(ev.InputShare)
		for _, k := range ev.HotKeys {
			t.addKey(in, k.Key)
		}
		if in.Parallelism == 0 && r.c.id.Cause == skew.CauseUnderProvisioned {
			in.Parallelism = ev.Parallelism
		}
	}
	return in, kind
}

// addKey adds a hot key to the incident's list, within MaxHotKeys.
func (t *Tracker) addKey(in *Incident, key string) {
	if len(in.HotKeys) < t.cfg.MaxHotKeys && !slices.Contains(in.HotKeys, key) {
		in.HotKeys = append(in.HotKeys, key)
	}
}

// Advance moves event time to watermark (epoch ms) and closes the
// incidents absent for ResolveAfter by then. Every finding of a window
// ending at or before watermark must have been observed.
func (t *Tracker) Advance(watermark int64) []Change {
	return t.expire(watermark, nil)
}

// expire closes the incidents that are over at event time at, in the
// order their hysteresis ran out.
func (t *Tracker) expire(at int64, out []Change) []Change {
	t.now = max(t.now, at)
	h := t.cfg.Hysteresis
	var done []condition
	open := map[string]bool{}
	for c, in := range t.open {
		clock := t.now
		if t.cfg.RequireReports {
			// A silent job's conditions are not absent: a run that has
			// not reported since (a new run an incident followed into,
			// or any job after a restore: its latest report is not
			// stored) counts from the incident's own latest window.
			clock = min(clock, max(t.reports[in.run()], in.absentFrom()))
		}
		if h.Over(in.absentFrom(), clock) {
			done = append(done, c)
		} else {
			open[in.run()] = true
		}
	}
	for j, last := range t.reports {
		if !open[j] && h.Over(last, t.now) {
			delete(t.reports, j) // nothing of it is open, and it reported long ago
		}
	}
	slices.SortFunc(done, func(a, b condition) int {
		if x := cmp.Compare(t.open[a].absentFrom(), t.open[b].absentFrom()); x != 0 {
			return x
		}
		return a.compare(b)
	})
	for _, c := range done {
		in := t.open[c]
		delete(t.open, c)
		in.State = StateClosed
		in.End = in.LastSeen
		// When the hysteresis ran out, not when it was noticed, so that
		// how calls are batched does not change the rows.
		in.UpdatedAt = max(h.OverAt(in.absentFrom()), in.UpdatedAt+1)
		out = append(out, Change{Kind: Closed, Incident: *in, Lasted: t.lasted(in), Reason: ReasonAbsent})
	}
	return out
}

// Open returns the open incidents, ordered by condition.
func (t *Tracker) Open() []Incident {
	cs := make([]condition, 0, len(t.open))
	for c := range t.open {
		cs = append(cs, c)
	}
	slices.SortFunc(cs, condition.compare)
	out := make([]Incident, 0, len(cs))
	for _, c := range cs {
		out = append(out, clone(t.open[c]))
	}
	return out
}

// Restore resumes from stored incidents: the open ones are tracked again
// and, for each job, seen is the end of the latest window an incident of
// it saw (closed ones included; for an incident that followed a new run,
// Incident.RunJobID, that run's too), before which Observe ignores
// findings. With RequireReports, a job's restored incidents are absent
// only once it reports again (its latest report is not stored): a job
// silent since (a run being replaced) is not absent because the pipeline
// restarted.
// Call it on a new Tracker, before Observe, with the incidents of the
// jobs this tracker owns only (the pipeline restores those whose engine
// state it restored): it closes them as it closes its own.
//
// An open incident that does not validate (RefusedJob) costs its job,
// and only its job, its open incidents: none of them is restored, the
// other jobs' are, and the refused jobs are returned, in job order.
func (t *Tracker) Restore(open []Incident, seen map[string]int64) []RefusedJob {
	// Event time is not taken from what is restored: the jobs of a
	// consumer group progress apart (a job that moved here resumes from
	// its last owner's commit, behind the jobs of other instances), and
	// a now set by the furthest one would close the incidents of the
	// others at their first window. The first Observe or Advance sets it.
	for j, s := range seen {
		t.seen[j] = max(t.seen[j], s)
	}
	refused := map[string]error{}
	for i := range open {
		in := &open[i]
		if in.State != StateOpen || in.JobID == "" {
			continue
		}
		if err := restorable(in); err != nil && refused[in.JobID] == nil {
			refused[in.JobID] = fmt.Errorf("incident %.64q: %w", in.ID, err)
		}
	}
	for i := range open {
		in := clone(&open[i])
		if in.State != StateOpen || in.JobID == "" || refused[in.JobID] != nil {
			continue
		}
		c := condition{id: Identity{JobID: in.run(), TaskName: in.TaskName, Subtask: in.Subtask, Cause: in.Cause}, key: in.Key}
		if old := t.open[c]; old != nil && old.UpdatedAt > in.UpdatedAt {
			continue // two open incidents of one condition: the later state wins
		}
		t.open[c] = &in
		t.seen[in.run()] = max(t.seen[in.run()], in.absentFrom())
	}
	return refusedJobs(refused)
}

// restorable checks what the tracker relies on in a stored open incident.
func restorable(in *Incident) error {
	switch {
	case in.ID == "":
		return errors.New("no id")
	case in.Start > in.LastSeen || in.LastSeen > in.UpdatedAt:
		return fmt.Errorf("times out of order: start %d, last seen %d, updated at %d", in.Start, in.LastSeen, in.UpdatedAt)
	case in.RunJobID == in.JobID:
		return errors.New("follows its own run")
	}
	return nil
}

// Reset drops every incident and what was seen of each job: the
// tracker is then as New made it (its configuration and Refused count
// kept), for Restore. A pipeline whose partitions moved to another
// instance resets and restores the stored incidents, so that it does not
// close the incidents of jobs it no longer reads.
func (t *Tracker) Reset() {
	clear(t.open)
	clear(t.seen)
	clear(t.reports)
	t.now = 0
}

// Refused returns how many findings were ignored because MaxOpen
// incidents were open.
func (t *Tracker) Refused() uint64 { return t.refused }

// lasted reports whether an incident has lasted Hysteresis.For.
func (t *Tracker) lasted(in *Incident) bool {
	return t.cfg.Hysteresis.Lasted(in.Start, in.LastSeen)
}

// cloneFinding copies the parts of a finding a Change keeps, so that the
// caller may reuse its findings: its plan and statistics are dropped, and
// it is storable (see finite.go).
func cloneFinding(f *skew.Finding) skew.Finding {
	c := *f
	c.Plan, c.Stats = nil, nil
	if f.SubtaskIndex != nil {
		c.SubtaskIndex = ptr(*f.SubtaskIndex)
	}
	if f.HotKey != nil {
		c.HotKey = ptr(*f.HotKey)
	}
	if f.Saturation != nil {
		s := *f.Saturation
		if s.Evidence != nil {
			ev := *s.Evidence
			ev.HotKeys = slices.Clone(ev.HotKeys)
			ev.UpstreamBackPressed = slices.Clone(ev.UpstreamBackPressed)
			ev.ChainableWith = slices.Clone(ev.ChainableWith)
			if ev.PreviousHotSubtask != nil {
				ev.PreviousHotSubtask = ptr(*ev.PreviousHotSubtask)
			}
			s.Evidence = &ev
		}
		c.Saturation = &s
	}
	return *storable(&c)
}

func ptr[T any](v T) *T { return &v }

// clone copies an incident so that the caller may keep it.
func clone(in *Incident) Incident {
	c := *in
	c.HotKeys = slices.Clone(in.HotKeys)
	if in.Plan != nil {
		p := *in.Plan
		c.Plan = &p
	}
	if in.Rescale != nil {
		r := *in.Rescale
		c.Rescale = &r
	}
	return c
}

// rescaleEffects applies rescaleEffect to each task's statistics of one
// window, in task order.
func (t *Tracker) rescaleEffects(tws []taskWindow, out []Change) []Change {
	for i := range tws {
		out = t.rescaleEffect(&tws[i], out)
	}
	return out
}

// OpenCount returns the number of open incidents.
func (t *Tracker) OpenCount() int { return len(t.open) }
