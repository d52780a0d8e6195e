package alertdeliver

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/internal/testenv/alerttest"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/alert"
	"github.com/skewlens/skewlens/skew/incident"
)

// memStates is a StateStore in memory: the latest state of each job, as
// the alert_state table's readers see it.
type memStates struct {
	mu     sync.Mutex
	fail   int // the next saves fail with a retryable error
	groups map[string]map[string][]byte
	saves  int
}

func (m *memStates) SaveAlertState(_ context.Context, group string, _ uint64, states []alert.JobSnapshot) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail > 0 {
		m.fail--
		return errors.New("dial tcp 127.0.0.1:9000: connection refused")
	}
	if m.groups == nil {
		m.groups = map[string]map[string][]byte{}
	}
	if m.groups[group] == nil {
		m.groups[group] = map[string][]byte{}
	}
	for _, s := range states {
		m.groups[group][s.JobID] = slices.Clone(s.State)
	}
	m.saves++
	return nil
}

// clone returns a copy of the stored states, for a run that must not
// change them.
func (m *memStates) clone() *memStates {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := &memStates{groups: map[string]map[string][]byte{}}
	for g, jobs := range m.groups {
		c.groups[g] = maps.Clone(jobs)
	}
	return c
}

func (m *memStates) LoadAlertState(_ context.Context, group string) ([]alert.JobSnapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []alert.JobSnapshot
	for j, s := range m.groups[group] {
		if len(s) > 0 {
			out = append(out, alert.JobSnapshot{JobID: j, State: slices.Clone(s)})
		}
	}
	slices.SortFunc(out, func(a, b alert.JobSnapshot) int { return strings.Compare(a.JobID, b.JobID) })
	return out, nil
}

// memIncidents is the incidents table in memory: the latest state of
// each incident, and what incident.Tracker.Restore takes from it.
type memIncidents map[string]incident.Incident

func (m memIncidents) store(cs []incident.Change) []incident.Change {
	for _, c := range cs {
		m[c.Incident.ID] = c.Incident
	}
	return cs
}

func (m memIncidents) load(owns func(string) bool) (open []incident.Incident, seen map[string]int64) {
	seen = map[string]int64{}
	for _, in := range m {
		if !owns(in.JobID) {
			continue
		}
		if in.State == incident.StateOpen {
			open = append(open, in)
		}
		seen[in.JobID] = max(seen[in.JobID], in.LastSeen)
	}
	return open, seen
}

// TestStateObserverSurvivesRestart: a condition fires in a first run; the
// pipeline restarts (a new incident tracker, Alerter and StateObserver over the
// same stores) while it goes on, and the second run notifies no second
// firing; when it ends, the second run resolves it and stores an empty
// state for the job, so a third run notifies nothing. Without the alert
// state, the second run fires again: the test's premise.
func TestStateObserverSurvivesRestart(t *testing.T) {
	policy := retry.Policy{MaxRetries: 2, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}
	// run plays windows [from, to) (the condition in those before end)
	// through a fresh incident tracker, Alerter and StateObserver, and
	// returns what it notified.
	all := func(string) bool { return true }
	run := func(store *memStates, incidents memIncidents, owns func(string) bool, from, to, end int64) []string {
		r := newRecorder()
		a, err := New(Config{Fanout: FanoutConfig{Retry: policy}}, []Target{{"rec", r}}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		it := alerttest.Incidents(t, incident.DefaultConfig().Hysteresis.For)
		s, err := NewStateObserver(a, store, "g", it.Open, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		it.Restore(incidents.load(owns))
		if err := s.Resume(ctx, owns); err != nil {
			t.Fatal(err)
		}
		for i := from; i < to; i++ {
			var fs []skew.Finding
			if i < end {
				fs = append(fs, sat("j1", "agg", 3, skew.CauseSlowSubtask, i*win))
			}
			if err := s.Observe(ctx, uint64(i), fs); err != nil {
				t.Fatal(err)
			}
			a.Apply(incidents.store(it.Observe(fs)))
			a.Apply(incidents.store(it.Advance((i + 1) * win)))
			for err := s.Advance(ctx, time.UnixMilli((i+1)*win)); err != nil; err = s.Advance(ctx, time.UnixMilli((i+1)*win)) {
				if retry.IsPermanent(err) {
					t.Fatal(err)
				}
			}
		}
		a.Stop() // drains the queue
		// The transitions, not the notifications: a queue keeps only the
		// latest state of an alert, so a firing followed by its
		// resolution may reach the notifier as the resolution alone.
		var out []string
		for _, k := range []string{"firing", "resolved"} {
			for range int(testutil.ToFloat64(a.m.transitions.WithLabelValues(k))) {
				out = append(out, "j1/agg/3/slow_subtask:"+k)
			}
		}
		if len(out) > 0 && len(r.ids()) == 0 {
			t.Fatal("nothing notified")
		}
		return out
	}
	fired := []string{"j1/agg/3/slow_subtask:firing"}
	resolved := []string{"j1/agg/3/slow_subtask:resolved"}

	store, incidents := &memStates{fail: 2}, memIncidents{}
	if got := run(store, incidents, all, 0, 6, 100); !slices.Equal(got, fired) {
		t.Fatalf("first run notified %v, want %v", got, fired)
	}
	if store.saves == 0 || len(store.groups["g"]["j1"]) == 0 {
		t.Fatal("no alert state stored")
	}
	// An instance that does not own j1 restores nothing of it: it fires
	// afresh, as one without state.
	if got := run(store.clone(), maps.Clone(incidents), func(string) bool { return false }, 6, 20, 10); !slices.Equal(got, append(fired, resolved...)) {
		t.Fatalf("a run that does not own j1 notified %v", got)
	}
	// The premise: without the alert state, the restart fires again.
	if got := run(&memStates{}, maps.Clone(incidents), all, 6, 20, 10); !slices.Equal(got, append(fired, resolved...)) {
		t.Fatalf("a run without alert state notified %v", got)
	}
	if got := run(store, incidents, all, 6, 20, 10); !slices.Equal(got, resolved) {
		t.Fatalf("second run notified %v, want only %v", got, resolved)
	}
	if got, _ := store.LoadAlertState(context.Background(), "g"); len(got) != 0 || len(store.groups["g"]["j1"]) != 0 {
		t.Fatalf("after the alert resolved, the store restores %q, want nothing (j1's state stored empty)", got)
	}
	if got := run(store, incidents, all, 20, 22, 0); len(got) != 0 {
		t.Fatalf("third run notified %v", got)
	}
}

// TestStateObserverResolvesWhatEndedMeanwhile: an alert whose incident closed
// and was stored while its own state was not (a crash between the two)
// resolves at Resume.
func TestStateObserverResolvesWhatEndedMeanwhile(t *testing.T) {
	r := newRecorder()
	a, err := New(Config{Fanout: FanoutConfig{Retry: retry.Policy{MaxRetries: 1, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}}}, []Target{{"rec", r}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	it := alerttest.Incidents(t, -1)
	store := &memStates{}
	s, err := NewStateObserver(a, store, "g", it.Open, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a.Apply(it.Observe([]skew.Finding{sat("j1", "agg", 3, skew.CauseSlowSubtask, 0)}))
	if err := s.Advance(ctx, time.UnixMilli(win)); err != nil {
		t.Fatal(err)
	}
	// Restart with the incident closed (none open) and the alert state as
	// saved while it fired.
	a2, err := New(Config{}, []Target{{"rec", r}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Stop()
	s2, err := NewStateObserver(a2, store, "g", func() []incident.Incident { return nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Resume(ctx, func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if n := testutil.ToFloat64(a2.m.transitions.WithLabelValues(string(alert.EventResolved))); n != 1 || len(a2.Active()) != 0 {
		t.Fatalf("resolved %v at resume, %d active; want 1 and none", n, len(a2.Active()))
	}
	if _, err := NewStateObserver(a2, store, "g", nil, nil); err == nil {
		t.Fatal("NewStateObserver without open incidents succeeded")
	}
}

// TestStateObserverResumeRefusesOneJob: among good jobs' saved alert
// states, one job's corrupt state costs that job only its alert state: the
// good job's firing alert is restored (no second firing), the bad job is
// logged (WARN, part alerts) and counted, and Resume returns nil; the next
// save replaces the corrupt state.
func TestStateObserverResumeRefusesOneJob(t *testing.T) {
	ctx := context.Background()
	it := alerttest.Incidents(t, -1)
	first, err := New(Config{}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	incidents := memIncidents{}
	first.Apply(incidents.store(it.Observe([]skew.Finding{sat("good", "agg", 3, skew.CauseSlowSubtask, 0), sat("bad", "agg", 1, skew.CauseSlowSubtask, 0)})))
	store := &memStates{}
	s1, err := NewStateObserver(first, store, "g", it.Open, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.Advance(ctx, time.UnixMilli(win)); err != nil {
		t.Fatal(err)
	}
	store.groups["g"]["bad"] = []byte(`{"v":1,"job_id":"bad","alerts":[{"task_name":`) // torn, or another build's

	reg := prometheus.NewRegistry()
	r := newRecorder()
	a, err := New(Config{}, []Target{{"rec", r}}, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	it2 := alerttest.Incidents(t, -1)
	it2.Restore(incidents.load(func(string) bool { return true }))
	var logged strings.Builder
	s2, err := NewStateObserver(a, store, "g", it2.Open, slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Resume(ctx, func(string) bool { return true }); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if active := a.Active(); len(active) != 1 || active[0].Identity().JobID != "good" {
		t.Fatalf("active %v, want the good job's alert only", active)
	}
	if !strings.Contains(logged.String(), `level=WARN msg="saved state of a job refused; it restarts without it" component="alert state" part=alerts job=bad `) {
		t.Errorf("no WARN naming job bad:\n%s", logged.String())
	}
	if got := testutil.ToFloat64(a.m.refusedJobs); got != 1 {
		t.Errorf("skewlens_alerts_state_refused_jobs_total = %v, want 1", got)
	}
	// The bad job has no alert now; the next save replaces its state.
	if err := s2.Advance(ctx, time.UnixMilli(2*win)); err != nil {
		t.Fatal(err)
	}
	if st := store.groups["g"]["bad"]; len(st) != 0 {
		t.Errorf("the corrupt state is still stored: %s", st)
	}
}
