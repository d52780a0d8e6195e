package plans

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestLineage(t *testing.T) {
	t.Parallel()
	plan := func(job, name, task string, par, maxPar int, updated time.Time) *Plan {
		return &Plan{JobID: job, JobName: name, TaskName: task, Parallelism: par, MaxParallelism: maxPar,
			Version: 1, UpdatedAt: updated}
	}
	const (
		old, older, fresh = "00000000000000000000000000000001", "00000000000000000000000000000002", "00000000000000000000000000000003"
	)
	run := Run{JobID: fresh, JobName: "orders", Parallelism: 4, MaxParallelism: 128}
	current := []*Plan{
		plan(older, "orders", "Agg", 4, 128, at(10)),
		plan(old, "orders", "Agg", 4, 128, at(50)),
		plan(old, "orders", "Rescaled", 8, 128, at(40)),
		plan(older, "orders", "OnlyOlder", 4, 128, at(5)),
		plan("00000000000000000000000000000009", "payments", "Agg", 4, 128, at(90)),
	}
	tests := []struct {
		name    string
		current []*Plan
		run     Run
		task    string
		want    string // job id of the answer, "" for none
	}{
		{"the newest run's plan", current, run, "Agg", old},
		{"order does not matter", []*Plan{current[1], current[0], current[4], current[2]}, run, "Agg", old},
		{"another parallelism: none", current, run, "Rescaled", ""},
		{"not the newest run's task: none", current, run, "OnlyOlder", ""},
		{"no such task", current, run, "Nope", ""},
		{"another name", current, Run{JobID: fresh, JobName: "clicks", Parallelism: 4, MaxParallelism: 128}, "Agg", ""},
		{"no name", current, Run{JobID: fresh, Parallelism: 4, MaxParallelism: 128}, "Agg", ""},
		{"another max parallelism", current, Run{JobID: fresh, JobName: "orders", Parallelism: 4, MaxParallelism: 256}, "Agg", ""},
		{"no parallelism", current, Run{JobID: fresh, JobName: "orders"}, "Agg", ""},
		{"the run itself is not its lineage", current, Run{JobID: old, JobName: "orders", Parallelism: 4, MaxParallelism: 128}, "Agg", older},
		{"a tie goes to the greater job id", []*Plan{plan(older, "orders", "Agg", 4, 128, at(50)), current[1]}, run, "Agg", older},
		{"nothing current", nil, run, "Agg", ""},
		{"nil entries are skipped", []*Plan{nil, current[1]}, run, "Agg", old},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Lineage(tt.current, tt.run, tt.task)
			switch {
			case tt.want == "" && got != nil:
				t.Errorf("Lineage = plan of %s/%s, want none", got.JobID, got.TaskName)
			case tt.want != "" && (got == nil || got.JobID != tt.want || got.TaskName != tt.task):
				t.Errorf("Lineage = %+v, want the plan of %s/%s", got, tt.want, tt.task)
			}
		})
	}
}

// TestNewestRunsIsLineage checks NewestRuns against Lineage on random
// sets of plans: for a run that is none of the plans' (a new submission),
// Lineage answers each task with the NewestRuns plan of its name and task
// when the parallelism pair is the run's, and with nothing otherwise.
func TestNewestRunsIsLineage(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(32, 4))
	names := []string{"orders", "clicks", ""}
	tasks := []string{"Agg", "Sink", "Join"}
	pairs := [][2]int{{4, 128}, {8, 128}, {4, 256}}
	for i := range 500 {
		var current []*Plan
		for range rng.IntN(8) {
			job := fmt.Sprintf("%032x", rng.IntN(4)) // runs share job ids, and so names and times
			name := names[int(job[31]-'0')%len(names)]
			pr := pairs[rng.IntN(len(pairs))]
			current = append(current, &Plan{JobID: job, JobName: name, TaskName: tasks[rng.IntN(len(tasks))],
				Parallelism: pr[0], MaxParallelism: pr[1], Version: 1, UpdatedAt: at(rng.IntN(3))})
		}
		// One plan per job and task, as a Manager serves them.
		current = dedupe(current)
		newest := NewestRuns(current)
		for _, name := range names[:2] {
			for _, task := range tasks {
				for _, pr := range pairs {
					run := Run{JobID: "fresh", JobName: name, Parallelism: pr[0], MaxParallelism: pr[1]}
					want := (*Plan)(nil)
					for _, p := range newest {
						if p.JobName == name && p.TaskName == task && p.Parallelism == pr[0] && p.MaxParallelism == pr[1] {
							want = p
						}
					}
					if got := Lineage(current, run, task); got != want {
						t.Fatalf("case %d: %s/%s at %v: Lineage = %+v, NewestRuns gives %+v\ncurrent: %s", i, name, task, pr, got, want, dump(current))
					}
				}
			}
		}
		for _, p := range newest {
			if p.JobName == "" {
				t.Fatalf("case %d: NewestRuns gave a plan without a job name: %+v", i, p)
			}
		}
	}
}

func dedupe(ps []*Plan) []*Plan {
	seen := map[string]bool{}
	var out []*Plan
	for _, p := range ps {
		if k := Key(p.JobID, p.TaskName); !seen[k] {
			seen[k] = true
			out = append(out, p)
		}
	}
	return out
}

func dump(ps []*Plan) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&b, "\n  %s %q %s %d/%d at %s", p.JobID, p.JobName, p.TaskName, p.Parallelism, p.MaxParallelism, p.UpdatedAt.Format(time.TimeOnly))
	}
	return b.String()
}
