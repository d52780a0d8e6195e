package plans

import (
	"testing"

	"github.com/skewlens/skewlens/skew"
)

// jobEnd is the job_end finding of job j's run for the window ending
// sec seconds after t0.
func jobEnd(sec int, successor string, tasks ...skew.TaskShape) *skew.Finding {
	e := &skew.JobEnd{Reason: skew.EndStopped}
	if successor != "" {
		e.Reason, e.Successor, e.SuccessorTasks = skew.EndRestarted, successor, tasks
	}
	end := at(sec).UnixMilli()
	return &skew.Finding{Kind: skew.KindJobEnd, JobID: "j", WindowStart: end - 10000, WindowEnd: end, JobEnd: e}
}

// TestJobEndPlans: a run's end retires its plans and forgets them; a
// restart carries the engine's plan to the next run when its task runs
// at the same parallelism (a max parallelism not known yet counts as the
// same), and not otherwise.
func TestJobEndPlans(t *testing.T) {
	tests := []struct {
		name string
		end  *skew.Finding
		want []string
	}{
		{"stopped", jobEnd(60, ""), []string{"retired"}},
		{"restarted at the same parallelism", jobEnd(60, "k", skew.TaskShape{Name: "agg", Parallelism: 4, MaxParallelism: 128}),
			[]string{"k/agg v1 p4 a:2", "retired"}},
		{"restarted, max parallelism not known yet", jobEnd(60, "k", skew.TaskShape{Name: "agg", Parallelism: 4}),
			[]string{"k/agg v1 p4 a:2", "retired"}},
		{"restarted at another parallelism", jobEnd(60, "k", skew.TaskShape{Name: "agg", Parallelism: 8, MaxParallelism: 128}),
			[]string{"retired"}},
		{"restarted without the task", jobEnd(60, "k", skew.TaskShape{Name: "other", Parallelism: 4}),
			[]string{"retired"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newManager(t, Config{})
			if got := describe(m.Observe(finding(t, 10, 4, hk{key: "a", buckets: 2}))); !eq(got, []string{"v1 p4 a:2"}) {
				t.Fatalf("first plan %q", got)
			}
			if got := describe(m.Observe(tt.end)); !eq(got, tt.want) {
				t.Fatalf("changes %q, want %q", got, tt.want)
			}
			if m.Plan("j", "agg") != nil || m.Stats().Tasks != len(tt.want)-1 {
				t.Fatalf("after the end: plan %+v, tasks %d", m.Plan("j", "agg"), m.Stats().Tasks)
			}
			if len(tt.want) == 2 {
				p := m.Plan("k", "agg")
				if p == nil || p.Version != 1 || p.HotKeys[0].Key != "a" || len(p.HotKeys[0].Salted) != 2 {
					t.Fatalf("carried plan %+v", p)
				}
			}
		})
	}
}
