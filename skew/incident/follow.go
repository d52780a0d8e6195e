package incident

import (
	"slices"

	"github.com/skewlens/skewlens/skew"
)

// follow moves the open incidents of a run that a new run of the same job
// replaced (f, its job_end finding) to the new run's task, instead of
// closing them with the old run, when the fix they wait for goes on in
// the new run:
//
//   - under_provisioned, always: the new run is what an operator applying
//     the recommendation starts (a stop with a savepoint and a resubmit
//     give a new job id), and whether it relieves the task is the
//     incident's answer (rescaleEffect);
//   - data_skew, rotating_hot_key and hot_key, when the task's salting
//     plan carried over to the new run (Config.Plan serves one for the
//     new run's task, made at or before the end of f's window: the plan
//     manager carries an engine plan to a successor that runs the task at
//     the same parallelism): the skew is the same keys on the same
//     subtasks, and the plan in force in the new run relieves it
//     (planEffect) or not.
//
// A followed incident keeps its id and JobID, so its alert and rows stay
// the same (Incident.RunJobID). An incident whose condition the new run
// already has an incident of does not move; it closes with its run.
// Called before the window's findings of conditions, so that the new
// run's finding in the same window extends the incident it follows.
func (t *Tracker) follow(f *skew.Finding, out []Change) []Change {
	next := f.JobEnd.Successor
	if next == "" || next == f.JobID {
		return out
	}
	planned := map[string]bool{} // by task: its plan carried over
	carries := func(task string) bool {
		ok, known := planned[task]
		if !known && t.cfg.Plan != nil {
			_, at, served := t.cfg.Plan(next, task)
			ok = served && at <= f.WindowEnd
			planned[task] = ok
		}
		return ok
	}
	var moved []condition
	for c := range t.open {
		if c.id.JobID != f.JobID {
			continue
		}
		switch c.id.Cause {
		case skew.CauseUnderProvisioned:
			moved = append(moved, c)
		case skew.CauseDataSkew, skew.CauseRotatingHotKey, CauseHotKey:
			if carries(c.id.TaskName) {
				moved = append(moved, c)
			}
		}
	}
	slices.SortFunc(moved, condition.compare)
	for _, c := range moved {
		to := c
		to.id.JobID = next
		if t.open[to] != nil {
			continue
		}
		in := t.open[c]
		delete(t.open, c)
		in.RunJobID, in.RunSince = next, f.WindowEnd
		in.UpdatedAt = max(f.WindowEnd, in.UpdatedAt+1)
		t.open[to] = in
		out = append(out, Change{Kind: Updated, Incident: clone(in), Lasted: t.lasted(in)})
	}
	return out
}
