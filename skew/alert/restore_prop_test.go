package alert

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv/alerttest"
	"github.com/skewlens/skewlens/skew/incident"
)

// propPipe is the pipeline's fold as run configures it: incidents with
// RequireReports and a plan for every task "agg" (carried over to each
// new run), alerts that renotify.
func propPipe(t *testing.T) *pipe {
	t.Helper()
	plan := func(_, task string) (uint64, int64, bool) { return 1, 0, task == "agg" }
	return newPipe(t, Config{RenotifyInterval: 30 * time.Second, SaltingURL: "http://skewlens:8080",
		PlanVersion: func(_, task string) (uint64, bool) { v, _, ok := plan("", task); return v, ok }},
		func(c *incident.Config) {
			c.Hysteresis = incident.Hysteresis{For: 20 * time.Second, ResolveAfter: 30 * time.Second}
			c.RequireReports = true
			c.Plan = plan
		})
}

// stored is what the pipeline has stored after a step: the alert state
// (Snapshot, as job_state keeps it) and the incidents' rows (their
// JSON, the latest version of each).
type stored struct {
	snaps map[string][]byte
	rows  map[string][]byte
	vers  map[string]int64
}

// save stores what the step changed, as the sinks do: the incident
// changes (each must encode), then the alert state of every job (each
// must encode too: Snapshot's error would keep an old state), an empty
// state for a job that dropped out.
func (s *stored) save(t *testing.T, p *pipe, cs []incident.Change) {
	t.Helper()
	for _, c := range cs {
		b, err := json.Marshal(c.Incident)
		if err != nil {
			t.Fatalf("incident %s cannot be stored: %v", c.Incident.ID, err)
		}
		if v, ok := s.vers[c.Incident.ID]; !ok || c.Incident.UpdatedAt >= v {
			s.rows[c.Incident.ID], s.vers[c.Incident.ID] = b, c.Incident.UpdatedAt
		}
	}
	snaps, err := p.Snapshot()
	if err != nil {
		t.Fatalf("alert state cannot be saved: %v", err)
	}
	clear(s.snaps)
	for _, sn := range snaps {
		s.snaps[sn.JobID] = sn.State
	}
}

// restore builds a new pipe from what is stored, as Resume does.
func (s *stored) restore(t *testing.T) *pipe {
	t.Helper()
	var open []incident.Incident
	seen := map[string]int64{}
	for _, id := range slices.Sorted(maps.Keys(s.rows)) {
		var in incident.Incident
		if err := json.Unmarshal(s.rows[id], &in); err != nil {
			t.Fatal(err)
		}
		if in.State == incident.StateOpen {
			open = append(open, in)
		}
		seen[in.JobID] = max(seen[in.JobID], in.LastSeen)
		if in.RunJobID != "" {
			seen[in.RunJobID] = max(seen[in.RunJobID], in.LastSeen)
		}
	}
	p := propPipe(t)
	if refused := p.inc.Restore(open, seen); len(refused) > 0 {
		t.Fatalf("incidents refused: %v", refused)
	}
	var snaps []JobSnapshot
	for j, st := range s.snaps {
		snaps = append(snaps, JobSnapshot{JobID: j, State: st})
	}
	slices.SortFunc(snaps, func(a, b JobSnapshot) int { return strings.Compare(a.JobID, b.JobID) })
	events, refused, err := p.Restore(snaps, p.inc.Open())
	if err != nil || len(refused) > 0 || len(events) > 0 {
		t.Fatalf("alert restore: %v, refused %v, events %v", err, refused, evs(events))
	}
	return p
}

// step runs one step of the stream through p as the runner does and
// returns the incident changes and the alert events as JSON.
func (p *pipe) step(t *testing.T, s alerttest.Step) ([]incident.Change, string) {
	t.Helper()
	cs := p.inc.Observe(s.Findings)
	cs = append(cs, p.inc.Advance(s.Watermark)...)
	b, err := json.Marshal(p.Apply(cs))
	if err != nil {
		t.Fatalf("an alert cannot be sent: %v", err)
	}
	return cs, string(b)
}

// TestRestoreArbitraryStreams: for arbitrary finding streams (what Flink
// really sends included: -1 for "none yet", NaN, infinities, huge
// numbers, odd ids, repeated windows, runs that restart), the alert state
// and the incidents can be saved after every step, a pipe restored from
// them refuses nothing and resolves nothing, and it then gives exactly
// the alert events (the notifications' JSON) of the uninterrupted pipe.
func TestRestoreArbitraryStreams(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 30
	}
	var fired, continued int
	for seed := range uint64(seeds) {
		steps := alerttest.Stream(rand.New(rand.NewPCG(seed, 33)), 24)
		whole := propPipe(t)
		saved := make([]stored, len(steps)) // what is stored after each step
		want := make([]string, len(steps))
		acc := stored{snaps: map[string][]byte{}, rows: map[string][]byte{}, vers: map[string]int64{}}
		for i, s := range steps {
			var cs []incident.Change
			cs, want[i] = whole.step(t, s)
			acc.save(t, whole, cs)
			saved[i] = acc.clone()
			for _, c := range cs {
				if c.Incident.RunJobID != "" && c.Incident.Cause != "under_provisioned" && c.Finding != nil {
					continued++ // a skew incident of a new run's finding, in its old run's alert
				}
			}
		}
		for _, e := range want {
			if e != "null" {
				fired++
			}
		}
		for cut := 1; cut < len(steps); cut++ {
			p := saved[cut-1].restore(t)
			for i := cut; i < len(steps); i++ {
				if _, got := p.step(t, steps[i]); got != want[i] {
					t.Fatalf("seed %d, restored after step %d, step %d:\n got %s\nwant %s", seed, cut, i, got, want[i])
				}
			}
		}
	}
	if fired == 0 || continued == 0 {
		t.Fatalf("%d steps with alert events, %d findings of a new run in a continued incident: the streams do not test it", fired, continued)
	}
}

func (s *stored) clone() stored {
	return stored{snaps: maps.Clone(s.snaps), rows: maps.Clone(s.rows), vers: maps.Clone(s.vers)}
}
