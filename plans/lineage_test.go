package plans

import (
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
