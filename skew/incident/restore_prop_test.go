package incident_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv/alerttest"
	"github.com/skewlens/skewlens/skew/incident"
)

// propTracker is a tracker as the pipeline configures it (RequireReports,
// a plan for every task "agg", carried over to each new run), with a
// 30 s resolve-after time.
func propTracker(t *testing.T) *incident.Tracker {
	t.Helper()
	cfg := incident.DefaultConfig()
	cfg.Hysteresis = incident.Hysteresis{For: 20 * time.Second, ResolveAfter: 30 * time.Second}
	cfg.RequireReports = true
	cfg.ReliefWithin = time.Minute
	cfg.Plan = func(_, task string) (uint64, int64, bool) { return 1, 0, task == "agg" }
	tr, err := incident.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// rows is the incidents table as sinks/clickhouse keeps it: per id the
// body (the incident's JSON) with the highest version (UpdatedAt), and
// the job_id column, which keeps the job id's exact bytes.
type rows map[string]row

type row struct {
	job     string
	version int64
	body    []byte
}

// write stores changes as WriteIncidents does, failing the test where it
// would refuse them (a permanent error: the pipeline could not go on).
func (rs rows) write(t *testing.T, cs []incident.Change) {
	t.Helper()
	for _, c := range cs {
		in := &c.Incident
		if in.ID == "" || in.JobID == "" || in.UpdatedAt < 0 {
			t.Fatalf("an incident the store refuses: %+v", in)
		}
		body, err := json.Marshal(in)
		if err != nil {
			t.Fatalf("incident %s cannot be stored: %v", in.ID, err)
		}
		if old, ok := rs[in.ID]; !ok || in.UpdatedAt >= old.version {
			rs[in.ID] = row{job: in.JobID, version: in.UpdatedAt, body: body}
		}
	}
}

// load reads the table back as LoadIncidents does: the open incidents,
// and each job's latest window by job_id and by the run an incident
// followed.
func (rs rows) load(t *testing.T) ([]incident.Incident, map[string]int64) {
	t.Helper()
	var open []incident.Incident
	seen := map[string]int64{}
	ids := make([]string, 0, len(rs))
	for id := range rs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		var in incident.Incident
		if err := json.Unmarshal(rs[id].body, &in); err != nil {
			t.Fatalf("incident %s does not decode: %v", id, err)
		}
		if in.State == incident.StateOpen {
			open = append(open, in)
		}
		seen[rs[id].job] = max(seen[rs[id].job], in.LastSeen)
		if in.RunJobID != "" {
			seen[in.RunJobID] = max(seen[in.RunJobID], in.LastSeen)
		}
	}
	return open, seen
}

// diff describes the first difference between two tables.
func (rs rows) diff(want rows) string {
	for id, w := range want {
		if g, ok := rs[id]; !ok || g.job != w.job || !sameJSON(g.body, w.body) {
			return fmt.Sprintf("incident %s:\n got %s\nwant %s", id, g.body, w.body)
		}
	}
	for id, g := range rs {
		if _, ok := want[id]; !ok {
			return fmt.Sprintf("incident %s is not the uninterrupted run's: %s", id, g.body)
		}
	}
	return ""
}

// fold runs steps through tr as the runner does (Observe, then Advance)
// and returns the changes of each step, and how many of them Observe
// made (the sink stores those before Advance runs).
func fold(tr *incident.Tracker, steps []alerttest.Step) (changes [][]incident.Change, observed []int) {
	changes, observed = make([][]incident.Change, len(steps)), make([]int, len(steps))
	for i, s := range steps {
		changes[i] = tr.Observe(s.Findings)
		observed[i] = len(changes[i])
		changes[i] = append(changes[i], tr.Advance(s.Watermark)...)
	}
	return changes, observed
}

// changesJSON is the changes as JSON.
func changesJSON(t *testing.T, cs []incident.Change) []byte {
	t.Helper()
	b, err := json.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sameJSON reports whether two JSON texts are the same value.
func sameJSON(a, b []byte) bool { return string(a) == string(b) || canonical(a) == canonical(b) }

// canonical is JSON decoded and encoded again: a display string that is
// not valid UTF-8 is stored with U+FFFD (escaped) and read back as U+FFFD
// (which encodes unescaped), so what a restored tracker holds equals the
// uninterrupted one's as a JSON value, not byte for byte.
func canonical(b []byte) string {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "invalid JSON: " + err.Error()
	}
	b, _ = json.Marshal(v)
	return string(b)
}

// TestRestoreArbitraryStreams: for arbitrary finding streams (what Flink
// really sends included: -1 for "none yet", NaN, infinities, huge
// numbers, odd ids, repeated and late windows, runs that restart), every
// change can be stored, and a tracker restored from the stored rows
// after any step (where the runner commits) refuses nothing and then
// makes exactly the changes the uninterrupted tracker makes; a crash
// after some changes of a step were stored but before its commit (the
// step comes again) leaves the table the uninterrupted run leaves.
func TestRestoreArbitraryStreams(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 40
	}
	followed := 0
	for seed := range uint64(seeds) {
		steps := alerttest.Stream(rand.New(rand.NewPCG(seed, 32)), 24)
		whole, observed := fold(propTracker(t), steps)
		want := rows{}
		wantJSON := make([][]byte, len(whole))
		prefixes := make([]rows, len(whole)) // the table after each step
		for i, cs := range whole {
			wantJSON[i] = changesJSON(t, cs)
			want.write(t, cs)
			prefixes[i] = maps.Clone(want)
			for _, c := range cs {
				if c.Incident.RunJobID != "" && c.Incident.Cause != "under_provisioned" {
					followed++
				}
			}
		}
		for cut := 1; cut < len(steps); cut++ {
			stored := maps.Clone(prefixes[cut-1])
			open, seen := stored.load(t)
			tr := propTracker(t)
			if refused := tr.Restore(open, seen); len(refused) > 0 {
				t.Fatalf("seed %d, cut %d: restore refused %v", seed, cut, refused)
			}
			got, _ := fold(tr, steps[cut:])
			for i := range got {
				if g, w := changesJSON(t, got[i]), wantJSON[cut+i]; !sameJSON(g, w) {
					t.Fatalf("seed %d, restored after step %d, step %d:\n got %s\nwant %s", seed, cut, cut+i, g, w)
				}
			}
			// A crash after storing the changes of step cut's Observe,
			// before its Advance and commit: the step comes again.
			stored.write(t, whole[cut][:observed[cut]])
			open, seen = stored.load(t)
			replayed := propTracker(t)
			replayed.Restore(open, seen)
			again, _ := fold(replayed, steps[cut:])
			for _, cs := range again {
				stored.write(t, cs)
			}
			if diff := stored.diff(want); diff != "" {
				t.Fatalf("seed %d, replayed step %d: the table differs: %s", seed, cut, diff)
			}
		}
	}
	if followed == 0 {
		t.Fatal("no skew incident followed a new run: the streams do not test it")
	}
}

// TestRestoreRefusesOneJob: an open incident that does not validate
// costs its job its open incidents, and only its job.
func TestRestoreRefusesOneJob(t *testing.T) {
	good := incident.Incident{ID: "a1", JobID: "good", TaskName: "agg", Subtask: 1, Cause: "data_skew",
		State: incident.StateOpen, Start: 0, LastSeen: 10_000, UpdatedAt: 10_000}
	bad := good
	bad.ID, bad.JobID, bad.LastSeen = "b1", "bad", -5 // last seen before it started
	bad2 := good
	bad2.ID, bad2.JobID = "b2", "bad" // valid, but of the refused job
	tr := propTracker(t)
	refused := tr.Restore([]incident.Incident{good, bad, bad2}, map[string]int64{"good": 10_000, "bad": 10_000})
	if len(refused) != 1 || refused[0].JobID != "bad" || refused[0].Err == nil {
		t.Fatalf("refused %v, want job bad", refused)
	}
	if open := tr.Open(); len(open) != 1 || open[0].ID != "a1" {
		t.Fatalf("open %+v, want good's incident only", open)
	}
}
