package deliver

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skewlens/skewlens/alert"
	"github.com/skewlens/skewlens/alert/internal/alerttest"
	"github.com/skewlens/skewlens/pipeline/retry"
	"github.com/skewlens/skewlens/skew"
)

// TestSinkAlerts: observed findings fire an alert, and window closes
// resolve it. (That only stored findings reach the Sink is the
// pipeline's: stream.Stages.)
func TestSinkAlerts(t *testing.T) {
	r := newRecorder()
	a, err := New(Config{Tracker: alert.TrackerConfig{For: -1}, Fanout: FanoutConfig{Retry: retry.Policy{MaxRetries: retry.Unlimited, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}}},
		[]Target{{"rec", r}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	s := NewSink(a)
	ctx := context.Background()
	fs := []skew.Finding{sat("j1", "agg", 3, skew.CauseSlowSubtask, 0)}
	if err := s.Observe(ctx, 2, fs); err != nil {
		t.Fatal(err)
	}
	if err := s.Advance(ctx, time.UnixMilli(win)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "firing", func() bool { return len(r.ids()) >= 1 })
	if err := s.Advance(ctx, time.UnixMilli(200_000)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "resolved", func() bool { return len(r.ids()) >= 2 })
	if got, want := r.ids(), []string{"j1/agg/3/slow_subtask:firing", "j1/agg/3/slow_subtask:resolved"}; !slices.Equal(got, want) {
		t.Fatalf("notified %v, want %v", got, want)
	}
}

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

// TestStatefulSinkSurvivesRestart: a condition fires in a first run; the
// pipeline restarts (a new Alerter and Sink over the same store) while it
// goes on, and the second run notifies no second firing; when it ends,
// the second run resolves it, and stores the job's state without it, so
// a third run notifies nothing. Without the state (NewSink), the second run fires
// again: the test's premise.
func TestStatefulSinkSurvivesRestart(t *testing.T) {
	policy := retry.Policy{MaxRetries: 2, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}
	stats := func(ws int64) skew.Finding {
		return skew.Finding{Kind: skew.KindSubtaskStats, JobID: "j1", TaskName: "agg", SubtaskIndex: alerttest.IntPtr(0),
			WindowStart: ws, WindowEnd: ws + win, Stats: &skew.SubtaskStats{}}
	}
	// run plays windows [from, to) (the condition in those before end)
	// through a fresh Alerter and returns what it notified.
	all := func(string) bool { return true }
	run := func(store *memStates, stateful bool, owns func(string) bool, from, to, end int64) []string {
		r := newRecorder()
		a, err := New(Config{Fanout: FanoutConfig{Retry: policy}}, []Target{{"rec", r}}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := NewSink(a)
		if stateful {
			if s, err = NewStatefulSink(a, store, "g", nil); err != nil {
				t.Fatal(err)
			}
		}
		ctx := context.Background()
		if err := s.Resume(ctx, owns); err != nil {
			t.Fatal(err)
		}
		for i := from; i < to; i++ {
			fs := []skew.Finding{stats(i * win)}
			if i < end {
				fs = append(fs, sat("j1", "agg", 3, skew.CauseSlowSubtask, i*win))
			}
			if err := s.Observe(ctx, uint64(i), fs); err != nil {
				t.Fatal(err)
			}
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

	store := &memStates{fail: 2}
	if got := run(store, true, all, 0, 6, 100); !slices.Equal(got, fired) {
		t.Fatalf("first run notified %v, want %v", got, fired)
	}
	if store.saves == 0 || len(store.groups["g"]["j1"]) == 0 {
		t.Fatal("no alert state stored")
	}
	// An instance that does not own j1 restores nothing of it: it fires
	// afresh, as one without state.
	if got := run(store.clone(), true, func(string) bool { return false }, 6, 20, 10); !slices.Equal(got, append(fired, resolved...)) {
		t.Fatalf("a run that does not own j1 notified %v", got)
	}
	if got := run(store, true, all, 6, 20, 10); !slices.Equal(got, resolved) {
		t.Fatalf("second run notified %v, want only %v", got, resolved)
	}
	got, _ := store.LoadAlertState(context.Background(), "g")
	if len(got) != 1 || strings.Contains(string(got[0].State), `"alerts"`) {
		t.Fatalf("after the alert resolved, the store restores %q, want j1's state without alerts", got)
	}
	if got := run(store, true, all, 20, 22, 0); len(got) != 0 {
		t.Fatalf("third run notified %v", got)
	}
	// The premise: without the state, the restart fires again.
	if got := run(&memStates{}, false, all, 6, 20, 10); !slices.Equal(got, append(fired, resolved...)) {
		t.Fatalf("a run without state notified %v", got)
	}
}
