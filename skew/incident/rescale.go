package incident

import (
	"fmt"
	"math"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// RescaleEffect is what a higher parallelism did for an under_provisioned
// incident's task: the receipt of the fix, or the note that it has not
// worked yet. skewlens does not rescale jobs; it sees the change in the
// task's subtask_stats findings, whoever made it: a resubmit with
// pipeline.jobvertex-parallelism-overrides (a new run, which the incident
// follows, see Incident.RunJobID), or the adaptive scheduler rescaling
// the run in place (PUT /jobs/:id/resource-requirements).
type RescaleEffect struct {
	// ParallelismBefore is the incident's Parallelism; ParallelismAfter
	// the most subtasks the task has reported with in one window since.
	ParallelismBefore int `json:"parallelism_before"`
	ParallelismAfter  int `json:"parallelism_after"`
	// At is the start (epoch ms) of the first window in which every
	// subtask of the task reported at the higher parallelism: when the
	// change was seen to be in effect.
	At int64 `json:"at"`
	// BusyBefore is the task's mean busy time (ms/s) over the incident's
	// windows before the change; BusyAfter the mean over its subtasks,
	// and BusyAfterPeak the busiest subtask's, in the window that
	// relieved it.
	BusyBefore    float64 `json:"busy_before_ms_per_s"`
	BusyAfter     float64 `json:"busy_after_ms_per_s,omitempty"`
	BusyAfterPeak float64 `json:"busy_after_peak_ms_per_s,omitempty"`
	// RelievedAt is the end (epoch ms) of the first window after the one
	// the change was seen in in which every subtask reported and none was
	// saturated; 0 while that has not happened.
	RelievedAt int64 `json:"relieved_at,omitempty"`
	// Overdue is set once the change has been in effect for
	// Config.ReliefWithin without relief; the incident stays open.
	Overdue bool `json:"overdue,omitempty"`
}

// Took returns how long the task took to be relieved after the change
// was seen (0 while it is not).
func (r *RescaleEffect) Took() time.Duration {
	if r.RelievedAt == 0 {
		return 0
	}
	return time.Duration(r.RelievedAt-r.At) * time.Millisecond
}

// taskWindow is what the subtask_stats findings of one window say of one
// task.
type taskWindow struct {
	job, task  string
	start, end int64
	// n counts the subtasks that reported, top is the highest index + 1:
	// equal when every subtask up to top reported.
	n, top    int
	last      int
	saturated int
	busy      float64 // summed
	peak      float64
}

// addStats adds a subtask_stats finding to the task windows of one
// window. The findings come sorted by job, task and subtask, so a task's
// are consecutive and a repeated subtask is the previous one.
func addStats(tws []taskWindow, f *skew.Finding) []taskWindow {
	if n := len(tws); n == 0 || tws[n-1].job != f.JobID || tws[n-1].task != f.TaskName {
		tws = append(tws, taskWindow{job: f.JobID, task: f.TaskName, start: f.WindowStart, end: f.WindowEnd, last: -1})
	}
	tw := &tws[len(tws)-1]
	i := *f.SubtaskIndex
	if i == tw.last {
		return tws
	}
	tw.last = i
	tw.n++
	tw.top = max(tw.top, i+1)
	busy := finite(f.Stats.BusyMsPerSecond)
	tw.busy += busy
	tw.peak = max(tw.peak, busy)
	if f.Stats.Saturated {
		tw.saturated++
	}
	return tws
}

// rescaleEffect follows the parallelism of an under_provisioned
// incident's task through one window of its subtasks' statistics (tw):
// the first window in which every subtask reported and there are more of
// them than the incident's Parallelism starts the receipt (Rescale); a
// later such window, at that parallelism, with no saturated subtask
// closes the incident, resolved by the rescale; a change in effect for
// ReliefWithin without that marks it Overdue. The windows of a run the
// incident followed that ended before it followed are not its. Folding
// in a window again (a replay after a restore) changes nothing: the
// receipt starts once, relief needs a window after its start, and
// Overdue is set once.
func (t *Tracker) rescaleEffect(tw *taskWindow, out []Change) []Change {
	c := condition{id: Identity{JobID: tw.job, TaskName: tw.task, Subtask: -1, Cause: skew.CauseUnderProvisioned}}
	in := t.open[c]
	if in == nil || in.Parallelism < 1 || tw.end < in.RunSince || tw.n != tw.top {
		return out
	}
	r := in.Rescale
	changed := false
	switch {
	case tw.top <= in.Parallelism:
		return out
	case r == nil:
		r = &RescaleEffect{ParallelismBefore: in.Parallelism, ParallelismAfter: tw.top, At: tw.start, BusyBefore: in.Busy.Mean}
		in.Rescale, changed = r, true
	case tw.top > r.ParallelismAfter:
		r.ParallelismAfter, changed = tw.top, true
	}
	switch {
	case tw.start > r.At && tw.top == r.ParallelismAfter && tw.saturated == 0:
		r.RelievedAt = tw.end
		r.BusyAfter, r.BusyAfterPeak = finite(round1(tw.busy/float64(tw.n))), tw.peak
		delete(t.open, c)
		in.State, in.End, in.Resolution = StateClosed, in.LastSeen, fmt.Sprintf("resolved by rescale to %d", r.ParallelismAfter)
		in.UpdatedAt = max(tw.end, in.UpdatedAt+1)
		return append(out, Change{Kind: Closed, Incident: clone(in), Lasted: t.lasted(in), Reason: ReasonResolvedByRescale})
	case !r.Overdue && tw.end-r.At >= t.cfg.ReliefWithin.Milliseconds():
		r.Overdue, changed = true, true
	}
	if !changed {
		return out
	}
	in.UpdatedAt = max(tw.end, in.UpdatedAt+1)
	return append(out, Change{Kind: Updated, Incident: clone(in), Lasted: t.lasted(in)})
}

// round1 rounds to one decimal, as the engine rounds its evidence.
func round1(v float64) float64 { return math.Round(v*10) / 10 }
