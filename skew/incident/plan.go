package incident

import (
	"fmt"
	"slices"

	"github.com/skewlens/skewlens/skew"
)

// spread records, on the open data_skew incidents of a task with a plan,
// that a hot key of theirs is seen salted: a hot_key finding f whose
// samples arrived at several subtasks. Each incident it changes is a
// change (what is not stored is not restored).
func (t *Tracker) spread(f *skew.Finding, out []Change) []Change {
	var changed []condition
	for c, in := range t.open {
		if c.id.Cause == skew.CauseDataSkew && c.id.JobID == f.JobID && c.id.TaskName == f.TaskName &&
			in.Plan != nil && slices.Contains(in.HotKeys, f.HotKey.Key) && len(f.HotKey.Subtasks) > in.Plan.KeySubtasks {
			in.Plan.KeySubtasks = len(f.HotKey.Subtasks)
			changed = append(changed, c)
		}
	}
	slices.SortFunc(changed, condition.compare)
	for _, c := range changed {
		in := t.open[c]
		in.UpdatedAt = max(f.WindowEnd, in.UpdatedAt+1)
		out = append(out, Change{Kind: Updated, Incident: clone(in), Lasted: t.lasted(in)})
	}
	return out
}

// planEffect follows the plan of a data_skew incident's task with the
// subtask's statistics of one window (r, a subtask_stats finding of the
// incident's subtask): the first window that starts at or after the
// plan's version and shows the subtask not saturated closes the incident,
// resolved by the plan, with the receipt; a plan served for ReliefWithin
// without that marks the incident Overdue.
func (t *Tracker) planEffect(r record, out []Change) []Change {
	in := t.open[r.c]
	if in == nil {
		return out
	}
	v, at, ok := t.cfg.Plan(r.c.id.JobID, r.c.id.TaskName)
	if !ok || at > r.f.WindowStart {
		return out // no plan, or made after this window began: not applied in it
	}
	changed := in.Plan == nil || in.Plan.Version != v
	if changed {
		in.Plan = &PlanEffect{Version: v, At: at, BusyBefore: in.Busy.Mean}
	}
	p := in.Plan
	switch {
	case !r.f.Stats.Saturated:
		p.RelievedAt, p.BusyAfter = r.f.WindowEnd, finite(r.f.Stats.BusyMsPerSecond)
		delete(t.open, r.c)
		in.State, in.End, in.Resolution = StateClosed, in.LastSeen, fmt.Sprintf("resolved by plan v%d", v)
		in.UpdatedAt = max(r.f.WindowEnd, in.UpdatedAt+1)
		return append(out, Change{Kind: Closed, Incident: clone(in), Lasted: t.lasted(in), Reason: ReasonResolvedByPlan})
	case !p.Overdue && r.f.WindowEnd-at >= t.cfg.ReliefWithin.Milliseconds():
		p.Overdue, changed = true, true
	}
	if !changed {
		return out
	}
	// The receipt started, or is overdue: a change, so that it is stored
	// (a restored incident goes on with it).
	in.UpdatedAt = max(r.f.WindowEnd, in.UpdatedAt+1)
	return append(out, Change{Kind: Updated, Incident: clone(in), Lasted: t.lasted(in)})
}
