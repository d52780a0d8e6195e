package clickhouse

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
)

// incidentFixtures runs an incident tracker over the fixture findings,
// window by window as the pipeline does, and returns every change (the
// rows the pipeline writes) and the latest state of each incident.
func incidentFixtures(t *testing.T, fs []skew.Finding) (changes []incident.Incident, final []incident.Incident) {
	t.Helper()
	tr, err := incident.New(incident.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	sorted := slices.Clone(fs)
	slices.SortStableFunc(sorted, func(a, b skew.Finding) int { return cmp.Compare(a.WindowEnd, b.WindowEnd) })
	latest := map[string]incident.Incident{}
	add := func(cs []incident.Change) {
		for _, c := range cs {
			changes = append(changes, c.Incident)
			latest[c.Incident.ID] = c.Incident
		}
	}
	for i := 0; i < len(sorted); {
		j := i
		for j < len(sorted) && sorted[j].WindowEnd == sorted[i].WindowEnd {
			j++
		}
		add(tr.Observe(sorted[i:j]))
		add(tr.Advance(sorted[i].WindowEnd))
		i = j
	}
	for _, in := range latest {
		final = append(final, in)
	}
	slices.SortFunc(final, func(a, b incident.Incident) int { return strings.Compare(a.ID, b.ID) })
	if len(final) < 3 {
		t.Fatalf("the fixtures make %d incidents; the tests need several", len(final))
	}
	return changes, final
}

// tsvEscape spells a value as ClickHouse's TabSeparated output does.
func tsvEscape(v string) string {
	return strings.NewReplacer("\\", "\\\\", "'", "\\'", "\n", "\\n", "\t", "\\t").Replace(v)
}

// incidentDocExpect returns the expected rows of the incident queries of
// docs/queries.md for the fixtures' incidents, their values escaped as in
// TabSeparated output when tsv is set (chDB).
func incidentDocExpect(final []incident.Incident, tsv bool) map[string][][]string {
	if tsv {
		final = slices.Clone(final)
		for i := range final {
			in := &final[i]
			in.JobID, in.TaskName, in.Key = tsvEscape(in.JobID), tsvEscape(in.TaskName), tsvEscape(in.Key)
		}
	}
	var open [][]string
	type jc struct{ job, cause string }
	count := map[jc]int{}
	longest := map[jc]int64{}
	for _, in := range final {
		if in.State == incident.StateOpen {
			open = append(open, []string{in.JobID, in.TaskName, fmt.Sprint(in.Subtask), in.Cause, in.Key,
				fmt.Sprint(in.Start), fmt.Sprint((in.LastSeen - in.Start) / 1000), fmt.Sprint(in.Windows),
				fmt.Sprint(in.Busy.Peak), fmt.Sprint(in.InputRatio.Peak), fmt.Sprint(in.Share.Peak), in.State})
		}
		k := jc{in.JobID, in.Cause}
		count[k]++
		longest[k] = max(longest[k], (in.LastSeen-in.Start)/1000)
	}
	slices.SortFunc(open, func(a, b []string) int { return slices.Compare(a[:5], b[:5]) })
	var perCause [][]string
	for k, n := range count {
		perCause = append(perCause, []string{k.job, k.cause, fmt.Sprint(n), fmt.Sprint(longest[k])})
	}
	slices.SortFunc(perCause, func(a, b []string) int { return slices.Compare(a[:2], b[:2]) })
	return map[string][][]string{
		"Open incidents and how long they have lasted": open,
		"Incidents per job and cause (last 24 hours)":  perCause,
	}
}

// testIncidents writes the fixtures' incidents twice (a replay) and
// checks the readers: Incidents with its filters and LoadIncidents.
func testIncidents(ctx context.Context, t *testing.T, s *Store, fs []skew.Finding) {
	changes, final := incidentFixtures(t, fs)
	// The stored body is JSON, which spells invalid UTF-8 (hostile
	// fixtures) as U+FFFD: compare with what JSON keeps.
	for i := range final {
		b, err := json.Marshal(final[i])
		if err != nil {
			t.Fatal(err)
		}
		final[i] = incident.Incident{}
		if err := json.Unmarshal(b, &final[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		if err := s.Writer().WriteIncidents(ctx, changes); err != nil {
			t.Fatalf("WriteIncidents #%d: %v", i+1, err)
		}
	}
	got, err := s.Incidents().Incidents(ctx, servestore.IncidentsQuery{Limit: MaxIncidentsLimit})
	if err != nil {
		t.Fatal(err)
	}
	var all []incident.Incident
	for _, b := range got {
		var in incident.Incident
		if err := json.Unmarshal(b, &in); err != nil {
			t.Fatal(err)
		}
		all = append(all, in)
	}
	for i := 1; i < len(all); i++ {
		if all[i].Start > all[i-1].Start {
			t.Errorf("incidents not latest start first: %d after %d", all[i].Start, all[i-1].Start)
		}
	}
	slices.SortFunc(all, func(a, b incident.Incident) int { return strings.Compare(a.ID, b.ID) })
	if !reflect.DeepEqual(all, final) {
		t.Errorf("Incidents:\n got %+v\nwant %+v", all, final)
	}
	var wantOpen []incident.Incident
	seen := map[string]int64{}
	for _, in := range final {
		if in.State == incident.StateOpen {
			wantOpen = append(wantOpen, in)
		}
		seen[in.JobID] = max(seen[in.JobID], in.LastSeen)
	}
	open, gotSeen, refused, err := s.Writer().LoadIncidents(ctx)
	if err != nil || len(refused) > 0 {
		t.Fatal(err, refused)
	}
	if !reflect.DeepEqual(open, wantOpen) || !reflect.DeepEqual(gotSeen, seen) {
		t.Errorf("LoadIncidents:\n got %+v %v\nwant %+v %v", open, gotSeen, wantOpen, seen)
	}
	// Filters: one job, one state, since.
	job, state := final[0].JobID, final[0].State
	since := time.UnixMilli(final[0].LastSeen)
	filtered, err := s.Incidents().Incidents(ctx, servestore.IncidentsQuery{JobID: job, State: state, Since: since})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, in := range final {
		if in.JobID == job && in.State == state && in.LastSeen >= final[0].LastSeen {
			want++
		}
	}
	if len(filtered) != want || want == 0 {
		t.Errorf("Incidents of job %s, state %s, since %d: %d, want %d", job, state, final[0].LastSeen, len(filtered), want)
	}
	for _, b := range filtered {
		var in incident.Incident
		if err := json.Unmarshal(b, &in); err != nil || in.JobID != job || in.State != state || in.LastSeen < final[0].LastSeen {
			t.Errorf("filtered incident %s does not match (%v)", b, err)
		}
	}
}

func TestIncidentRowRejects(t *testing.T) {
	for _, in := range []incident.Incident{{JobID: "j"}, {ID: "x"}, {ID: "x", JobID: "j", UpdatedAt: -1}} {
		if _, err := incidentRow(&in, time.Now()); err == nil {
			t.Errorf("incidentRow(%+v) accepted", in)
		}
	}
	r, err := incidentRow(&incident.Incident{ID: "x", JobID: "j", UpdatedAt: 7}, time.Now())
	if err != nil || len(r) != len(incidentColumns()) || r[len(r)-2] != uint64(7) {
		t.Errorf("incidentRow = %v, %v: want %d columns, version 7", r, err, len(incidentColumns()))
	}
}

// TestLoadIncidentsFollowedRun: an incident that followed its job into
// a new run (incident.Incident.RunJobID: an under_provisioned one, or a
// data_skew one whose salting plan carried over) gives that run its
// latest window too, open or closed, so that a restored tracker does not
// fold in again the new run's windows the incident already saw; the rows
// stay the old run's. An open incident whose body does not decode costs
// its job only: the job is returned among the refused, and the others
// load.
func TestLoadIncidentsFollowedRun(t *testing.T) {
	t.Parallel()
	ctx, s, _ := newMigratedSink(t, "followed")
	const oldRun, newRun, other = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210", "other-job"
	up := func(id, job, run string, state string, lastSeen, version int64) incident.Incident {
		return incident.Incident{ID: id, JobID: job, TaskName: "agg", Subtask: -1, Cause: skew.CauseUnderProvisioned, State: state,
			Start: 10_000, LastSeen: lastSeen, Windows: 3, Parallelism: 2, RunJobID: run, RunSince: 80_000, UpdatedAt: version,
			Summary: `a "run_job_id": "` + other + `" in a summary is not a field`}
	}
	skewed := up("s", oldRun, newRun, incident.StateOpen, 120_000, 120_000) // a data_skew incident the plan carried over
	skewed.Cause, skewed.Subtask, skewed.Parallelism = skew.CauseDataSkew, 1, 0
	skewed.Plan = &incident.PlanEffect{Version: 1, At: 80_000, BusyBefore: 990}
	rows := []incident.Incident{
		up("a", oldRun, "", incident.StateOpen, 60_000, 60_000),
		up("a", oldRun, newRun, incident.StateOpen, 60_000, 90_000),   // followed
		up("a", oldRun, newRun, incident.StateOpen, 110_000, 110_000), // the new run's finding extended it
		up("b", other, "", incident.StateOpen, 30_000, 30_000),
		skewed,
	}
	closed := rows[2]
	closed.State, closed.End, closed.Resolution, closed.UpdatedAt = incident.StateClosed, 110_000, "resolved by rescale to 4", 130_000
	closed.Rescale = &incident.RescaleEffect{ParallelismBefore: 2, ParallelismAfter: 4, At: 90_000, BusyBefore: 1000, BusyAfter: 500, RelievedAt: 130_000}
	for _, tc := range []struct {
		name     string
		write    []incident.Incident
		wantOpen []string
	}{
		{"followed, open", rows, []string{"a", "b", "s"}},
		{"followed, closed by the rescale", []incident.Incident{closed}, []string{"b", "s"}},
	} {
		if err := s.Writer().WriteIncidents(ctx, tc.write); err != nil {
			t.Fatal(err)
		}
		open, seen, refused, err := s.Writer().LoadIncidents(ctx)
		if err != nil || len(refused) > 0 {
			t.Fatal(err, refused)
		}
		want := map[string]int64{oldRun: 120_000, newRun: 120_000, other: 30_000}
		if !reflect.DeepEqual(seen, want) {
			t.Errorf("%s: seen %v, want %v", tc.name, seen, want)
		}
		var ids []string
		for _, in := range open {
			ids = append(ids, in.ID)
			if in.ID == "a" && (in.RunJobID != newRun || in.RunSince != 80_000 || in.LastSeen != 110_000) {
				t.Errorf("%s: restored %+v, want the followed run and its latest window", tc.name, in)
			}
			if in.ID == "s" && !reflect.DeepEqual(in, skewed) {
				t.Errorf("%s: restored %+v, want %+v", tc.name, in, skewed)
			}
		}
		if !reflect.DeepEqual(ids, tc.wantOpen) {
			t.Errorf("%s: open %v, want %v", tc.name, ids, tc.wantOpen)
		}
	}
	// A row whose body does not decode (corruption, or a body another
	// build wrote) costs its job only.
	bad, err := incidentRow(&incident.Incident{ID: "z", JobID: "broken", State: incident.StateOpen, UpdatedAt: 5}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	bad[slices.Index(incidentColumns(), "body")] = `{"id": "z", "start": "not a number"}`
	s.mu.Lock()
	err = s.insertRows(ctx, tableIncidents, incidentColumns(), []row{bad})
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	open, _, refused, err := s.Writer().LoadIncidents(ctx)
	if err != nil || len(refused) != 1 || refused[0].JobID != "broken" || !strings.Contains(refused[0].Error(), `incident "z" does not decode`) {
		t.Fatalf("LoadIncidents = %v, refused %v: want job broken refused", err, refused)
	}
	if len(open) != 2 {
		t.Errorf("open %d incidents, want the other jobs' 2", len(open))
	}
	// The receipt survives the store.
	got, err := s.Incidents().Incidents(ctx, servestore.IncidentsQuery{JobID: oldRun, State: incident.StateClosed})
	if err != nil {
		t.Fatal(err)
	}
	var in incident.Incident
	if len(got) != 1 || json.Unmarshal(got[0], &in) != nil || !reflect.DeepEqual(in.Rescale, closed.Rescale) || in.Why() != closed.Why() {
		t.Errorf("closed incidents of the old run: %s, want the closed one with its receipt", got)
	}
}
