package alert

import (
	"cmp"
	"slices"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// Tracker is the alert state machine. It does no I/O, reads no clock and
// is deterministic: its output depends only on the sequence of calls and
// their arguments, and the events of one call are ordered by event time,
// then identity, whatever the order of the findings within it. It is not
// safe for concurrent use.
//
// Call Observe with the findings of closed windows (in the order the
// windows closed), then Advance with the watermark that closed them:
// Advance(w) promises that every finding of a window ending at or before w
// has been observed, and is what resolves alerts when nothing is found.
type Tracker struct {
	cfg     TrackerConfig
	causes  map[string]bool
	states  map[Identity]*state
	reports map[string]int64 // job id -> end of the latest window it reported in (ms)
	now     int64            // event time (ms): the latest window end or watermark
	firing  int
	refused uint64
	// restored holds the jobs Restore brought back, with the event time
	// their saved state was taken at.
	restored map[string]int64
}

// state is one tracked alert: pending until it fires, then firing until
// it resolves and is forgotten.
type state struct {
	id         Identity
	firing     bool
	start      int64 // start of the first window of the condition (ms)
	lastSeen   int64 // end of the latest window with a finding (ms)
	lastNotify int64 // event time of the latest Firing or Renotify (ms)
	labels     map[string]string
	latest     skew.Finding  // the latest finding (for hot keys: the hottest key's)
	keys       []skew.HotKey // hot_key alerts: the keys of the latest window, hottest first
	touched    int64         // window end of the latest Observe group that touched it
	// runs holds, for hot_key alerts, each key's run of findings: its
	// incident (IncidentID) starts where the run starts.
	runs map[string]keyRun
}

// keyRun is one hot key's current run of findings under one alert.
type keyRun struct{ start, lastSeen int64 }

// trackKey extends the run of a hot_key finding's key, or starts a new
// one when the key's previous run is over by the hysteresis, and forgets
// runs that are over.
func (st *state) trackKey(f *skew.Finding, h Hysteresis) {
	if f.Kind != skew.KindHotKey || f.HotKey == nil {
		return
	}
	if st.runs == nil {
		st.runs = make(map[string]keyRun)
	}
	for k, r := range st.runs {
		if h.Over(r.lastSeen, f.WindowStart) {
			delete(st.runs, k)
		}
	}
	r, ok := st.runs[f.HotKey.Key]
	if !ok {
		r = keyRun{start: f.WindowStart}
	}
	r.lastSeen = max(r.lastSeen, f.WindowEnd)
	st.runs[f.HotKey.Key] = r
}

// incidentID returns the id of the incident of the alert's latest
// finding.
func (st *state) incidentID() string {
	if st.id.Cause == CauseHotKey && st.latest.HotKey != nil {
		if r, ok := st.runs[st.latest.HotKey.Key]; ok {
			return IncidentID(st.id, st.latest.HotKey.Key, r.start)
		}
	}
	return IncidentID(st.id, "", st.start)
}

// NewTracker returns a Tracker with no alerts. It fills the zero fields
// of cfg with their defaults and validates it.
func NewTracker(cfg TrackerConfig) (*Tracker, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Tracker{
		cfg:      cfg,
		causes:   make(map[string]bool, len(cfg.Causes)),
		states:   make(map[Identity]*state),
		reports:  make(map[string]int64),
		restored: make(map[string]int64),
	}
	for _, c := range cfg.Causes {
		t.causes[c] = true
	}
	return t, nil
}

// Config returns the validated configuration, its defaults filled in.
func (t *Tracker) Config() TrackerConfig { return t.cfg }

// record is one finding of an Observe call, with its identity.
type record struct {
	id        Identity
	alertable bool
	f         *skew.Finding
}

// Observe takes the findings of closed windows and returns the resulting
// transitions: Pending for new conditions, Firing for conditions that have
// now lasted For, Renotify, and Resolved or Discarded for conditions that
// a later window in fs shows absent for ResolveAfter. Findings of kinds
// other than saturation and hot_key only count as reports of their job
// (RequireReports). Malformed findings (no job or task, a window end not
// after the epoch or before its start) are ignored.
func (t *Tracker) Observe(fs []skew.Finding) []Event {
	recs := make([]record, 0, len(fs))
	for i := range fs {
		f := &fs[i]
		if f.JobID == "" || f.WindowEnd <= 0 || f.WindowStart > f.WindowEnd {
			continue
		}
		id, ok := identityOf(f)
		recs = append(recs, record{id: id, alertable: ok && t.causes[id.Cause], f: f})
	}
	// Window order, then identity; the hottest key first within one
	// identity, so a hot_key alert's latest finding is its hottest key.
	slices.SortStableFunc(recs, func(a, b record) int {
		if c := cmp.Compare(a.f.WindowEnd, b.f.WindowEnd); c != 0 {
			return c
		}
		if c := a.id.compare(b.id); c != 0 {
			return c
		}
		return cmp.Compare(hotShare(b.f), hotShare(a.f))
	})
	var events []Event
	EachWindow(recs, func(r *record) *skew.Finding { return r.f }, func(start, end int64, group []record) {
		events = t.expire(start, events)
		for _, r := range group {
			if r.f.WindowEnd > t.reports[r.f.JobID] {
				t.reports[r.f.JobID] = r.f.WindowEnd
			}
		}
		var touched []*state
		for _, r := range group {
			if !r.alertable {
				continue
			}
			st, isNew := t.apply(r)
			if st == nil {
				continue
			}
			if isNew {
				events = append(events, t.event(EventPending, st, end, ""))
			}
			if st.touched != end {
				st.touched = end
				touched = append(touched, st)
			}
		}
		for _, st := range touched { // identity order: the group is sorted
			events = t.evaluate(st, end, events)
		}
		for _, r := range group {
			if r.f.Kind == skew.KindJobEnd && r.f.JobEnd != nil {
				events = t.endJob(r.f, events)
			}
		}
		t.now = max(t.now, end)
	})
	return events
}

// endJob resolves the firing alerts and discards the pending ones of a
// run that ended (a job_end finding f), in identity order, at the end of
// f's window, and forgets the job.
func (t *Tracker) endJob(f *skew.Finding, events []Event) []Event {
	reason := ReasonJobStopped
	if f.JobEnd.Reason == skew.EndRestarted {
		reason = ReasonJobRestarted
	}
	var done []*state
	for _, st := range t.states {
		if st.id.JobID == f.JobID {
			done = append(done, st)
		}
	}
	slices.SortFunc(done, func(a, b *state) int { return a.id.compare(b.id) })
	for _, st := range done {
		kind := EventDiscarded
		if st.firing {
			kind = EventResolved
			t.firing--
		}
		events = append(events, t.event(kind, st, f.WindowEnd, reason))
		delete(t.states, st.id)
	}
	delete(t.reports, f.JobID)
	delete(t.restored, f.JobID)
	return events
}

// hotShare is the sort key of hot_key findings.
func hotShare(f *skew.Finding) float64 {
	if f.Kind == skew.KindHotKey && f.HotKey != nil {
		return f.HotKey.Share
	}
	return 0
}

// apply adds one alertable finding to its state, creating the state when
// needed. It returns nil when the state cannot be created (MaxTracked).
func (t *Tracker) apply(r record) (st *state, isNew bool) {
	f := r.f
	st = t.states[r.id]
	if st == nil {
		if len(t.states) >= t.cfg.MaxTracked {
			t.refused++
			return nil, false
		}
		st = &state{id: r.id, start: f.WindowStart, lastSeen: f.WindowEnd, latest: cloneFinding(f)}
		if f.Kind == skew.KindHotKey {
			st.keys = []skew.HotKey{*f.HotKey}
		}
		st.trackKey(f, t.cfg.Hysteresis())
		t.states[r.id] = st
		return st, true
	}
	switch {
	case f.WindowEnd > st.lastSeen:
		st.lastSeen = f.WindowEnd
		st.latest = cloneFinding(f)
		st.keys = st.keys[:0]
		if f.Kind == skew.KindHotKey {
			st.keys = append(st.keys, *f.HotKey)
		}
		st.trackKey(f, t.cfg.Hysteresis())
	case f.WindowEnd == st.lastSeen && f.Kind == skew.KindHotKey:
		// Another hot key on the same subtask in the same window (perhaps
		// delivered in a later Observe call): keep the keys hottest first.
		if slices.ContainsFunc(st.keys, func(k skew.HotKey) bool { return k.Key == f.HotKey.Key }) {
			break
		}
		st.trackKey(f, t.cfg.Hysteresis())
		st.keys = append(st.keys, *f.HotKey)
		slices.SortStableFunc(st.keys, func(a, b skew.HotKey) int { return cmp.Compare(b.Share, a.Share) })
		if f.HotKey.Share > st.latest.HotKey.Share {
			st.latest = cloneFinding(f)
		}
	}
	// Older findings (out of order) change nothing: the condition was
	// already known to be present then.
	return st, false
}

// evaluate fires a pending alert that has lasted For and renotifies a
// firing one, at event time now (the end of the window that touched it).
func (t *Tracker) evaluate(st *state, now int64, events []Event) []Event {
	if st.lastSeen != now {
		return events
	}
	if !st.firing {
		if t.cfg.Hysteresis().Lasted(st.start, st.lastSeen) {
			st.firing = true
			t.firing++
			st.labels = t.labels(st)
			st.lastNotify = now
			events = append(events, t.event(EventFiring, st, now, ""))
		}
		return events
	}
	if t.cfg.RenotifyInterval > 0 && time.Duration(now-st.lastNotify)*time.Millisecond >= t.cfg.RenotifyInterval {
		st.lastNotify = now
		events = append(events, t.event(EventRenotify, st, now, ""))
	}
	return events
}

// Advance moves event time to watermark (epoch ms) and resolves the
// alerts whose condition has been absent for ResolveAfter (or whose job
// has been silent for SilentAfter, with RequireReports). Every finding of
// a window ending at or before watermark must have been observed. A
// watermark behind the current event time changes nothing but may still
// resolve alerts after JobsReported calls.
func (t *Tracker) Advance(watermark int64) []Event {
	return t.expire(watermark, nil)
}

// JobsReported records that the jobs reported in the window ending at
// windowEnd (epoch ms), for RequireReports. Observe counts any finding of
// a job as a report already; call this for jobs that reported without
// findings, before the Advance for that window.
func (t *Tracker) JobsReported(windowEnd int64, jobIDs ...string) {
	for _, j := range jobIDs {
		if j != "" && windowEnd > t.reports[j] {
			t.reports[j] = windowEnd
		}
	}
}

// expire moves event time to at and resolves or discards the alerts that
// are over then.
func (t *Tracker) expire(at int64, events []Event) []Event {
	t.now = max(t.now, at)
	now := t.now
	resolveAfter := t.cfg.ResolveAfter.Milliseconds()
	silentAfter := t.cfg.SilentAfter.Milliseconds()
	type over struct {
		st     *state
		at     int64 // when the hysteresis ran out
		reason string
	}
	var done []over
	for _, st := range t.states {
		clock := now
		if t.cfg.RequireReports {
			last, ok := t.reports[st.id.JobID]
			if !ok || last < st.lastSeen {
				last = st.lastSeen // a finding is a report
			}
			if now-last >= silentAfter {
				done = append(done, over{st, last + silentAfter, ReasonJobSilent})
				continue
			}
			clock = min(now, last)
		}
		if h := t.cfg.Hysteresis(); h.Over(st.lastSeen, clock) {
			done = append(done, over{st, h.OverAt(st.lastSeen), ReasonAbsent})
		}
	}
	// The event time of a resolution is when its hysteresis ran out, not
	// when it was noticed, so how the caller batches its calls does not
	// change the events.
	slices.SortFunc(done, func(a, b over) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return a.st.id.compare(b.st.id)
	})
	for _, d := range done {
		kind := EventDiscarded
		if d.st.firing {
			kind = EventResolved
			t.firing--
		}
		events = append(events, t.event(kind, d.st, d.at, d.reason))
		delete(t.states, d.st.id)
	}
	// Forget the reports of jobs that can no longer matter: every alert
	// of theirs is older than both horizons.
	horizon := now - max(resolveAfter, silentAfter)
	for j, last := range t.reports {
		if last < horizon {
			delete(t.reports, j)
		}
	}
	return events
}

// Active returns the firing alerts, ordered by identity, as they would be
// notified now. The alerts of a restored job not heard of since are as of
// the event time its state was saved at, or now if that is later: the
// tracker's own event time is not theirs (see Restore).
func (t *Tracker) Active() []Alert {
	var out []Alert
	for _, st := range t.states {
		if st.firing {
			out = append(out, t.alert(st, StatusFiring, t.jobNow(st.id.JobID), ""))
		}
	}
	slices.SortFunc(out, func(a, b Alert) int { return a.id.compare(b.id) })
	return out
}

// jobNow is the event time of a job's state: the tracker's, or for a
// restored job that of its saved state, whichever is later. It is for
// what Active and Snapshot report, never for resolving.
func (t *Tracker) jobNow(job string) int64 {
	return max(t.now, t.restored[job])
}

// Pending returns the number of pending alerts.
func (t *Tracker) Pending() int { return len(t.states) - t.firing }

// Firing returns the number of firing alerts.
func (t *Tracker) Firing() int { return t.firing }

// Refused returns how many findings were ignored because MaxTracked
// alerts were tracked.
func (t *Tracker) Refused() uint64 { return t.refused }

// Now returns the event time (epoch ms): the latest window end or
// watermark seen.
func (t *Tracker) Now() int64 { return t.now }

// event builds one transition.
func (t *Tracker) event(kind EventKind, st *state, at int64, reason string) Event {
	status := StatusFiring
	if kind == EventResolved || kind == EventDiscarded {
		status = StatusResolved
	}
	return Event{Kind: kind, Alert: t.alert(st, status, at, reason)}
}

// cloneFinding copies the parts of a finding an alert keeps, so that the
// caller may reuse its findings.
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
	return c
}

func ptr[T any](v T) *T { return &v }
