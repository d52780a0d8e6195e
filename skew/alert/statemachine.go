package alert

import (
	"cmp"
	"slices"
	"time"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
)

// StateMachine turns incident changes into alert transitions: alerts are the
// notifications of incidents. It folds no findings and keeps no
// hysteresis of its own: an alert is pending while its condition has an
// open incident, fires once one of them has lasted
// (incident.Change.Lasted), and resolves when the last of them closes,
// with that incident's reason. It does no I/O, reads no clock and is
// deterministic: its output depends only on the changes it is given. It
// is not safe for concurrent use.
//
// One alert covers one incident.Identity; a hot_key alert covers the
// incidents of every hot key of its subtask, so that three hot keys on
// one subtask page once.
type StateMachine struct {
	cfg    Config
	causes map[string]bool
	states map[incident.Identity]*state
	now    int64 // event time (ms): the latest change's
	firing int
}

// state is one tracked alert: pending until it fires, then firing until
// its last incident closes and it is forgotten.
type state struct {
	id         incident.Identity
	firing     bool
	start      int64 // start of its first incident (ms)
	lastSeen   int64 // end of the latest window with a finding (ms)
	lastNotify int64 // event time of the latest Firing or Renotify (ms)
	labels     map[string]string
	latest     skew.Finding  // the latest finding (for hot keys: the hottest key's)
	keys       []skew.HotKey // hot_key alerts: the keys of the latest window, hottest first
	touched    int64         // window end of the latest finding that touched it, for evaluate
	// open holds its open incidents by id, with whether each has lasted.
	open map[string]openIncident
}

// openIncident is what an alert keeps of one of its open incidents.
type openIncident struct {
	key    string
	start  int64
	lasted bool
}

// incidentID returns the id of the incident of the alert's latest
// finding: for a hot_key alert, the hottest key's.
func (st *state) incidentID() string {
	key := ""
	if st.id.Cause == incident.CauseHotKey && st.latest.HotKey != nil {
		key = st.latest.HotKey.Key
	}
	// Two open incidents of one key: one followed its job into a new run
	// and the run it left opened another before its end. The later one
	// is the latest finding's (and the choice must not depend on the
	// map's order).
	found, start := "", int64(0)
	for id, o := range st.open {
		if o.key == key && (found == "" || o.start > start || o.start == start && id < found) {
			found, start = id, o.start
		}
	}
	if found != "" {
		return found
	}
	return incident.IncidentID(st.id, key, st.start)
}

// run is the alert's identity in the run of the job its latest finding
// came from: the run its plan is served for. An incident that followed
// its job into a new run (incident.Incident.RunJobID) keeps its alert,
// whose identity names the run it opened in.
func (st *state) run() incident.Identity {
	id := st.id
	if st.latest.JobID != "" {
		id.JobID = st.latest.JobID
	}
	return id
}

// lasted reports whether one of the alert's open incidents has lasted.
func (st *state) lasted() bool {
	for _, o := range st.open {
		if o.lasted {
			return true
		}
	}
	return false
}

// NewStateMachine returns a StateMachine with no alerts. It fills the zero
// fields of cfg with their defaults and validates it.
func NewStateMachine(cfg Config) (*StateMachine, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &StateMachine{cfg: cfg, causes: make(map[string]bool, len(cfg.Causes)), states: make(map[incident.Identity]*state)}
	for _, c := range cfg.Causes {
		t.causes[c] = true
	}
	return t, nil
}

// Config returns the validated configuration, its defaults filled in.
func (t *StateMachine) Config() Config { return t.cfg }

// Apply takes incident changes, in the order the incident tracker made
// them, and returns the resulting transitions: Pending when a condition's
// first incident opens, Firing once one of its incidents has lasted,
// Renotify, and Resolved (or Discarded, for an alert that never fired)
// when its last incident closes. The changes of one window are taken
// together, so a hot_key alert fires with its hottest key. Changes of
// causes outside Config.Causes are ignored.
func (t *StateMachine) Apply(changes []incident.Change) []Event {
	var events []Event
	var touched []*state // touched by findings of the window ending at window
	var window int64
	evaluate := func() {
		slices.SortFunc(touched, func(a, b *state) int { return a.id.Compare(b.id) })
		for _, st := range touched {
			events = t.evaluate(st, window, events)
			st.touched = 0 // a later change of this window evaluates it again
		}
		touched = touched[:0]
	}
	for i := range changes {
		c := &changes[i]
		in := &c.Incident
		id := incident.Identity{JobID: in.JobID, TaskName: in.TaskName, Subtask: in.Subtask, Cause: in.Cause}
		if !t.causes[id.Cause] || in.JobID == "" {
			continue
		}
		if at := changeAt(c); at != window || c.Kind == incident.Closed {
			evaluate()
			window = at
		}
		st := t.states[id]
		switch c.Kind {
		case incident.Opened, incident.Updated:
			if st == nil {
				if c.Finding == nil {
					continue // a plan's effect on an incident without an alert (its state was lost)
				}
				st = &state{id: id, start: in.Start, lastSeen: c.Finding.WindowEnd, latest: *c.Finding, open: map[string]openIncident{}}
				t.states[id] = st
				events = append(events, t.event(EventPending, st, c.Finding.WindowEnd, ""))
			}
			st.open[in.ID] = openIncident{key: in.Key, start: in.Start, lasted: c.Lasted}
			st.start = min(st.start, in.Start)
			if c.Finding != nil {
				st.apply(c.Finding)
				if st.touched != window {
					st.touched = window
					touched = append(touched, st)
				}
			}
		case incident.Closed:
			if st == nil {
				continue
			}
			delete(st.open, in.ID)
			if len(st.open) > 0 {
				continue
			}
			events = t.resolve(st, in.UpdatedAt, cmp.Or(c.Reason, incident.ReasonAbsent), in.Why(), events)
		}
		t.now = max(t.now, in.UpdatedAt)
	}
	evaluate()
	return events
}

// changeAt is the window a change belongs to: the end of its finding's
// window, or the event time of a change no finding made.
func changeAt(c *incident.Change) int64 {
	if c.Finding != nil {
		return c.Finding.WindowEnd
	}
	return c.Incident.UpdatedAt
}

// apply takes a finding of one of the alert's incidents as its latest.
func (st *state) apply(f *skew.Finding) {
	switch {
	case f.WindowEnd > st.lastSeen:
		st.lastSeen = f.WindowEnd
		st.latest = *f
		st.keys = st.keys[:0]
		if f.HotKey != nil {
			st.keys = append(st.keys, *f.HotKey)
		}
	case f.WindowEnd == st.lastSeen && f.HotKey != nil:
		// Another hot key on the same subtask in the same window: keep
		// the keys hottest first, and the hottest key's finding.
		if i := slices.IndexFunc(st.keys, func(k skew.HotKey) bool { return k.Key == f.HotKey.Key }); i >= 0 {
			st.keys[i] = *f.HotKey
		} else {
			st.keys = append(st.keys, *f.HotKey)
		}
		slices.SortStableFunc(st.keys, func(a, b skew.HotKey) int {
			return cmp.Or(cmp.Compare(b.Share, a.Share), cmp.Compare(a.Key, b.Key))
		})
		if st.latest.HotKey == nil || f.HotKey.Share > st.latest.HotKey.Share ||
			(f.HotKey.Share == st.latest.HotKey.Share && f.HotKey.Key < st.latest.HotKey.Key) {
			st.latest = *f
		}
	}
	// An older finding changes nothing: the condition was known then.
}

// evaluate fires a pending alert one of whose incidents has lasted, and
// renotifies a firing one, at event time now (the end of the window that
// touched it).
func (t *StateMachine) evaluate(st *state, now int64, events []Event) []Event {
	if st.lastSeen != now || t.states[st.id] != st {
		return events
	}
	if !st.firing {
		if st.lasted() {
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

// resolve ends an alert at event time at: Resolved with the reason (and
// why, the incident's resolution, as an annotation) when it fired,
// Discarded otherwise; the alert is forgotten.
func (t *StateMachine) resolve(st *state, at int64, reason, why string, events []Event) []Event {
	kind := EventDiscarded
	if st.firing {
		kind = EventResolved
		t.firing--
	}
	e := t.event(kind, st, at, reason)
	if why != "" {
		e.Alert.Annotations["resolution"] = clean(why)
	}
	delete(t.states, st.id)
	return append(events, e)
}

// Active returns the firing alerts, ordered by identity, as they would be
// notified now.
func (t *StateMachine) Active() []Alert {
	var out []Alert
	for _, st := range t.states {
		if st.firing {
			out = append(out, t.alert(st, StatusFiring, max(t.now, st.lastSeen), ""))
		}
	}
	slices.SortFunc(out, func(a, b Alert) int { return a.id.Compare(b.id) })
	return out
}

// Pending returns the number of pending alerts.
func (t *StateMachine) Pending() int { return len(t.states) - t.firing }

// Firing returns the number of firing alerts.
func (t *StateMachine) Firing() int { return t.firing }

// Now returns the event time (epoch ms) of the latest change.
func (t *StateMachine) Now() int64 { return t.now }

// event builds one transition.
func (t *StateMachine) event(kind EventKind, st *state, at int64, reason string) Event {
	status := StatusFiring
	if kind == EventResolved || kind == EventDiscarded {
		status = StatusResolved
	}
	return Event{Kind: kind, Alert: t.alert(st, status, at, reason)}
}
