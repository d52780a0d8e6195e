package plans

import "cmp"

// Run is a run of a Flink job as a plan client describes itself when it
// asks for a task's plan: its job id (a new one per submission), its job
// name, and the parallelism pair the keyed task runs at.
type Run struct {
	JobID, JobName              string
	Parallelism, MaxParallelism int
}

// Lineage returns the plan served to run for task when run has no plan
// of its own for the task, or nil: the plan for task of the newest other
// run of the same job name, when its parallelism pair is run's (the
// salted keys route as planned only there). current holds the plans
// served now (overrides applied), in any order; they are not modified,
// and the result is one of them.
//
// Why: Flink gives a resubmitted job a new id, and skewlens links the
// runs (the job_end finding, which carries the plans over) only once the
// new run has reported for a window or two. Until then the new run would
// run unsalted and its hot subtask saturate again; with its job's newest
// plan it is salted from its first record.
//
// The rule, in full (docs/salting-plans.md, "A resubmitted job"):
//
//   - run must have a job name and a parallelism pair with 1 <= parallelism
//     <= max parallelism; a plan matches when its JobName is run's and its
//     JobID is not run's.
//   - The newest run of the name is the job id whose matching plans were
//     confirmed last: the greatest UpdatedAt over its plans (any task),
//     ties to the greater job id, so the answer does not depend on order.
//   - Its plan for task is the answer if its Parallelism and
//     MaxParallelism equal run's; otherwise, and when it has no plan for
//     task, there is none (an older run's plan is not served: the newest
//     run's plans are what skewlens carries over).
//
// Lineage is pure and safe for concurrent use.
func Lineage(current []*Plan, run Run, task string) *Plan {
	if run.JobName == "" || run.Parallelism < 1 || run.MaxParallelism < run.Parallelism {
		return nil
	}
	newest, last := "", (*Plan)(nil)
	for _, p := range current {
		if p == nil || p.JobName != run.JobName || p.JobID == run.JobID {
			continue
		}
		if last == nil || newer(p, last) {
			newest, last = p.JobID, p
		}
	}
	if last == nil {
		return nil
	}
	for _, p := range current {
		if p != nil && p.JobID == newest && p.TaskName == task && p.JobName == run.JobName {
			if p.Parallelism == run.Parallelism && p.MaxParallelism == run.MaxParallelism {
				return p
			}
			return nil
		}
	}
	return nil
}

// newer reports whether the run of plan a is newer than the run of plan
// b by Lineage's rule: a was confirmed later, or at the same time and
// its job id is the greater.
func newer(a, b *Plan) bool {
	return cmp.Or(a.UpdatedAt.Compare(b.UpdatedAt), cmp.Compare(a.JobID, b.JobID)) > 0
}

// NewestRuns returns the plans of the newest run of each job name in
// current (by Lineage's rule, with no run left out), in current's order;
// plans without a job name are not among them. They are what Lineage
// serves a run of the name that is not the newest: for any such run,
// Lineage(current, run, task) is the one for task when its parallelism
// pair is run's, and nil otherwise. The newest run itself is served by
// Lineage the plans of the run before it, which NewestRuns does not
// give. current is not modified; the result holds its pointers.
//
// Why: the plans topic cannot answer per asking run, so planpub
// publishes these under each name's lineage key (docs/salting-plans.md,
// "A resubmitted job"), and the Flink client applies one at its
// parallelism pair when its run has no plan of its own.
//
// NewestRuns is pure and safe for concurrent use.
func NewestRuns(current []*Plan) []*Plan {
	last := map[string]*Plan{}
	for _, p := range current {
		if p == nil || p.JobName == "" {
			continue
		}
		if b := last[p.JobName]; b == nil || newer(p, b) {
			last[p.JobName] = p
		}
	}
	var out []*Plan
	for _, p := range current {
		if p != nil && p.JobName != "" && p.JobID == last[p.JobName].JobID {
			out = append(out, p)
		}
	}
	return out
}
