package incidentsink

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
)

// fakeStore keeps the latest state of each incident, like the table, and
// fails the next fail calls; unreadable are jobs of incidents whose
// bodies do not decode.
type fakeStore struct {
	rows       map[string]incident.Incident
	fail       int
	unreadable []incident.RefusedJob
}

func (s *fakeStore) WriteIncidents(_ context.Context, ins []incident.Incident) error {
	if s.fail > 0 {
		s.fail--
		return errors.New("server down")
	}
	for _, in := range ins {
		if old, ok := s.rows[in.ID]; !ok || in.UpdatedAt >= old.UpdatedAt {
			s.rows[in.ID] = in
		}
	}
	return nil
}

func (s *fakeStore) LoadIncidents(context.Context) ([]incident.Incident, map[string]int64, []incident.RefusedJob, error) {
	var open []incident.Incident
	seen := map[string]int64{}
	for _, in := range s.rows {
		if in.State == incident.StateOpen {
			open = append(open, in)
		}
		seen[in.JobID] = max(seen[in.JobID], in.LastSeen)
	}
	return open, seen, s.unreadable, nil
}

func skewed(w int64) []skew.Finding {
	sub := 2
	return []skew.Finding{{
		Kind: skew.KindSaturation, JobID: "j", TaskName: "agg", SubtaskIndex: &sub,
		WindowStart: w * 10_000, WindowEnd: (w + 1) * 10_000,
		Saturation: &skew.Saturation{Cause: skew.CauseDataSkew, Evidence: &skew.Evidence{BusyMsPerSecond: 900}},
	}}
}

func newIncidentObserver(t *testing.T, store *fakeStore, reg prometheus.Registerer) *IncidentObserver {
	t.Helper()
	tr, err := incident.New(incident.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(tr, store, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close(); _ = s.Close() })
	return s
}

// TestIncidentObserverRetryAndRestore fails a store, retries the Write as
// the runner does, restarts from the store and replays: the table holds one
// incident of the right number of windows, which closes.
func TestIncidentObserverRetryAndRestore(t *testing.T) {
	ctx := context.Background()
	store := &fakeStore{rows: map[string]incident.Incident{}}
	reg := prometheus.NewRegistry()
	s := newIncidentObserver(t, store, reg)
	var kinds []incident.ChangeKind
	s.OnChanges(func(cs []incident.Change) {
		for _, c := range cs {
			kinds = append(kinds, c.Kind)
		}
	})
	if err := s.Observe(ctx, 1, skewed(0)); err != nil {
		t.Fatal(err)
	}
	store.fail = 1
	if err := s.Observe(ctx, 2, skewed(1)); err == nil {
		t.Fatal("Observe with a failing store returned nil")
	}
	if got := testutil.ToFloat64(s.m.pending); got != 1 {
		t.Errorf("pending changes = %v, want 1", got)
	}
	if err := s.Observe(ctx, 2, skewed(1)); err != nil { // the runner's retry
		t.Fatal(err)
	}
	want := "# HELP skewlens_incidents_open Incidents open now.\n# TYPE skewlens_incidents_open gauge\nskewlens_incidents_open 1\n"
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "skewlens_incidents_open"); err != nil {
		t.Error(err)
	}
	// An instance that does not own the job restores none of its
	// incidents.
	other := newIncidentObserver(t, store, nil)
	if err := other.Resume(ctx, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	if n := other.tr.OpenCount(); n != 0 {
		t.Fatalf("%d incidents restored of a job not owned", n)
	}
	// A restart replays window 1 and goes on.
	s2 := newIncidentObserver(t, store, nil)
	if err := s2.Resume(ctx, func(job string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if n := s2.tr.OpenCount(); n != 1 {
		t.Fatalf("%d incidents restored, want 1", n)
	}
	for _, w := range []int64{1, 2} {
		if err := s2.Observe(ctx, 3, skewed(w)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s2.Advance(ctx, time.UnixMilli(60_000)); err != nil {
		t.Fatal(err)
	}
	if len(store.rows) != 1 {
		t.Fatalf("%d incidents stored, want 1: %+v", len(store.rows), store.rows)
	}
	for _, in := range store.rows {
		if in.State != incident.StateClosed || in.Windows != 3 || in.Start != 0 || in.End != 30_000 {
			t.Errorf("incident = %+v, want closed, 3 windows from 0 to 30000", in)
		}
	}
	if len(kinds) != 2 || kinds[0] != incident.Opened || kinds[1] != incident.Updated {
		t.Errorf("changes seen by OnChange = %v, want [opened updated]", kinds)
	}
	if got := testutil.ToFloat64(s.m.changes.WithLabelValues("opened")); got != 1 {
		t.Errorf("opened changes = %v, want 1", got)
	}
}

// TestResumeRefusesOneJob: among good jobs' stored incidents, a job with
// an incident that cannot be read and one with an incident that does not
// validate lose their open incidents only: the good job's incident is
// restored, each refused job is logged (WARN, part incidents) and
// counted, and Resume returns nil.
func TestResumeRefusesOneJob(t *testing.T) {
	good := incident.Incident{ID: "g1", JobID: "good", TaskName: "agg", Subtask: 1, Cause: skew.CauseDataSkew,
		State: incident.StateOpen, LastSeen: 10_000, UpdatedAt: 10_000}
	invalid := good
	invalid.ID, invalid.JobID, invalid.Start = "i1", "invalid", 20_000 // starts after its last window
	lost := good
	lost.ID, lost.JobID = "l1", "lost" // readable, but its job has an unreadable one
	store := &fakeStore{rows: map[string]incident.Incident{"g1": good, "i1": invalid, "l1": lost},
		unreadable: []incident.RefusedJob{{JobID: "lost", Err: errors.New(`incident "l2" does not decode`)}}}
	reg := prometheus.NewRegistry()
	tr, err := incident.New(incident.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	s, err := New(tr, store, slog.New(slog.NewTextHandler(&logged, nil)), reg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Resume(context.Background(), func(string) bool { return true }); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if open := s.Open(); len(open) != 1 || open[0].ID != "g1" {
		t.Fatalf("open %+v, want the good job's incident only", open)
	}
	for _, job := range []string{"invalid", "lost"} {
		if !slices.ContainsFunc(strings.Split(logged.String(), "\n"), func(l string) bool {
			return strings.Contains(l, `level=WARN msg="saved state of a job refused; it restarts without it"`) && strings.Contains(l, "part=incidents job="+job+" ")
		}) {
			t.Errorf("no WARN naming job %s:\n%s", job, logged.String())
		}
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP skewlens_incidents_state_refused_jobs_total Jobs whose stored open incidents could not be restored (they did not decode or validate: another version, corruption); they restarted without them.
# TYPE skewlens_incidents_state_refused_jobs_total counter
skewlens_incidents_state_refused_jobs_total 2
`), "skewlens_incidents_state_refused_jobs_total"); err != nil {
		t.Fatal(err)
	}
}

// TestPendingChangeKeepsItsFinding: the changes of an incident waiting to
// be stored are one per incident, the latest. A change no finding made (a
// plan's receipt) keeps the finding of the one it replaces, so that the
// alerts, which act on findings, still see the window that made the
// incident last (without it the data_skew alert of a closed loop never
// fired); a closure takes none.
func TestPendingChangeKeepsItsFinding(t *testing.T) {
	s := newIncidentObserver(t, &fakeStore{rows: map[string]incident.Incident{}}, prometheus.NewRegistry())
	f := skewed(1)[0]
	in := incident.Incident{ID: "i", JobID: "j", UpdatedAt: 20_000}
	s.add([]incident.Change{{Kind: incident.Updated, Incident: in, Finding: &f, Lasted: true}})
	in.UpdatedAt++
	s.add([]incident.Change{{Kind: incident.Updated, Incident: in}})
	if len(s.pending) != 1 || s.pending[0].Finding != &f || !s.pending[0].Lasted || s.pending[0].Incident.UpdatedAt != 20_001 {
		t.Fatalf("pending %+v, want the receipt's incident with the finding before it, lasted", s.pending)
	}
	in.UpdatedAt++
	s.add([]incident.Change{{Kind: incident.Closed, Incident: in}})
	if s.pending[0].Kind != incident.Closed || s.pending[0].Finding != nil {
		t.Fatalf("pending %+v, want the closure without a finding", s.pending)
	}
}
