package incident

import (
	"fmt"
	"math"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// Incident states.
const (
	StateOpen   = "open"
	StateClosed = "closed"
)

// Incident is one condition from its first window to its last. Its JSON
// form is the body of the incidents table and the element of GET
// /v1/incidents; field order is fixed. Times are event time in epoch
// milliseconds.
type Incident struct {
	// ID is IncidentID of the condition and Start.
	ID       string `json:"id"`
	JobID    string `json:"job_id"`
	JobName  string `json:"job_name,omitempty"`
	TaskName string `json:"task_name"`
	// Subtask is the subtask index, or -1 for a task-wide condition.
	Subtask int    `json:"subtask"`
	Cause   string `json:"cause"`
	// Key is the hot key of a hot_key incident, "" for the other causes.
	Key   string `json:"key,omitempty"`
	State string `json:"state"`
	// Start is the start of the first window with a finding.
	Start int64 `json:"start"`
	// End is the end of the last window with a finding once the incident
	// is closed; 0 while it is open.
	End int64 `json:"end"`
	// LastSeen is the end of the latest window with a finding.
	LastSeen int64 `json:"last_seen"`
	// Windows counts the windows with a finding.
	Windows int `json:"windows"`
	// Busy is the busy time in ms per second, InputRatio the input rate
	// over the peers' median, and Share the subtask's share of the task's
	// input (a hot key's share of the task's sampled weight for hot_key),
	// over the windows that reported them.
	Busy       Stat `json:"busy_ms_per_s"`
	InputRatio Stat `json:"input_ratio"`
	Share      Stat `json:"share"`
	// HotKeys lists the hot keys seen, in the order first seen, at most
	// Config.MaxHotKeys.
	HotKeys []string `json:"hot_keys,omitempty"`
	// Summary is the latest finding's summary.
	Summary string `json:"summary,omitempty"`
	// Resolution says why a closed incident closed when it was not its
	// condition's absence for the resolve-after time: its run of the job
	// ended ("job restarted as 9b7c1d2e", "job stopped reporting"), or a
	// fix relieved it ("resolved by plan v2", "resolved by rescale to 4").
	Resolution string `json:"resolution,omitempty"`
	// Plan is the effect of the salting plan served for a data_skew
	// incident's task while it was open: the fix's receipt once it
	// relieved the subtask (Resolution "resolved by plan vN").
	Plan *PlanEffect `json:"plan,omitempty"`
	// Parallelism is, for under_provisioned, the task's parallelism in
	// the incident's first finding: what its recommendation was made
	// against, and what a rescale is measured from.
	Parallelism int `json:"parallelism,omitempty"`
	// RunJobID is the job id of the run an incident follows once a new
	// run of its job replaced JobID's (a stop with a savepoint and a
	// resubmit, or a restart): an under_provisioned incident always, a
	// data_skew, rotating_hot_key or hot_key one when its task's salting
	// plan carried over to the new run (see Tracker.Observe). Its
	// condition is then that run's task, and JobID stays the run it
	// opened in, so its id, alert and rows stay the same. RunSince is the
	// end of the window in which it followed (the old run's job_end): its
	// absence counts from there, and the new run's earlier windows are
	// not its. Both are empty while the incident is JobID's.
	RunJobID string `json:"run_job_id,omitempty"`
	RunSince int64  `json:"run_since,omitempty"`
	// Rescale is what a higher parallelism of the task did for an
	// under_provisioned incident: the fix's receipt once its subtasks
	// were no longer saturated (Resolution "resolved by rescale to N"),
	// or the note that they still are.
	Rescale *RescaleEffect `json:"rescale,omitempty"`
	// UpdatedAt is the event time of this state of the incident: the end
	// of the window that opened or extended it, or for a closed incident
	// when the hysteresis ran out (LastSeen + ResolveAfter). It grows with
	// every change, and the incidents table keeps the row with the highest.
	UpdatedAt int64 `json:"updated_at"`
}

// Duration returns how long the incident has lasted: from its start to
// the end of its latest window.
func (in *Incident) Duration() time.Duration {
	return time.Duration(in.LastSeen-in.Start) * time.Millisecond
}

// Why says why a closed incident closed, with the fix's receipt when a
// plan or a rescale relieved it: "resolved by plan v2: busy 990 → 510
// ms/s, key on 4 subtasks, 40s after the plan"; "resolved by rescale to
// 4: parallelism 2 → 4 (run 3f2a1c9e), busy 1000 → 560 ms/s (busiest
// subtask 610), 20s after the change". It is empty when the incident
// closed only because its condition was absent (or is open).
func (in *Incident) Why() string {
	why := in.Resolution
	if p := in.Plan; why != "" && p != nil && p.RelievedAt > 0 {
		why += fmt.Sprintf(": busy %.0f → %.0f ms/s", p.BusyBefore, p.BusyAfter)
		if p.KeySubtasks > 1 {
			why += fmt.Sprintf(", key on %d subtasks", p.KeySubtasks)
		}
		why += fmt.Sprintf(", %s after the plan", time.Duration(p.RelievedAt-p.At)*time.Millisecond)
	}
	if r := in.Rescale; why != "" && r != nil && r.RelievedAt > 0 {
		why += fmt.Sprintf(": parallelism %d → %d", r.ParallelismBefore, r.ParallelismAfter)
		if in.RunJobID != "" {
			why += " (run " + skew.ShortID(in.RunJobID) + ")"
		}
		why += fmt.Sprintf(", busy %.0f → %.0f ms/s (busiest subtask %.0f), %s after the change",
			r.BusyBefore, r.BusyAfter, r.BusyAfterPeak, r.Took())
	}
	return why
}

// run returns the job id of the run the incident's condition is in now.
func (in *Incident) run() string {
	if in.RunJobID != "" {
		return in.RunJobID
	}
	return in.JobID
}

// absentFrom is when the incident's condition was last known present,
// for the hysteresis: its latest window, or the window it followed a
// new run in, whichever is later (the new run starts its own count).
func (in *Incident) absentFrom() int64 {
	return max(in.LastSeen, in.RunSince)
}

// PlanEffect is what a salting plan did for a data_skew incident: the
// receipt of a fix, or the note that it has not worked yet.
type PlanEffect struct {
	// Version is the plan's version, At the event time (epoch ms) it was
	// made at.
	Version uint64 `json:"version"`
	At      int64  `json:"at"`
	// BusyBefore is the subtask's mean busy time (ms/s) over the
	// incident's windows before the plan; BusyAfter its busy time in the
	// window that relieved it.
	BusyBefore float64 `json:"busy_before_ms_per_s"`
	BusyAfter  float64 `json:"busy_after_ms_per_s,omitempty"`
	// KeySubtasks is the most subtasks a hot key of the incident was seen
	// at since the plan (the key's samples, see skew.HotKey.Subtasks); 0
	// when no salted key was seen. Before the plan a key is at one.
	KeySubtasks int `json:"key_subtasks,omitempty"`
	// RelievedAt is the end (epoch ms) of the first window after the plan
	// in which the subtask was not saturated; 0 while it is.
	RelievedAt int64 `json:"relieved_at,omitempty"`
	// Overdue is set once the plan has been served for
	// Config.ReliefWithin without relief; the incident stays open.
	Overdue bool `json:"overdue,omitempty"`
}

// Stat is the peak and mean of one number over an incident's windows.
// Sum and N are kept so that the mean of a restored incident continues
// exactly.
type Stat struct {
	Peak float64 `json:"peak"`
	Mean float64 `json:"mean"`
	Sum  float64 `json:"sum"`
	N    int     `json:"n"`
}

// add folds in one window's value; values not above 0 mean "not
// reported" and are skipped, and so are those that would make the sum
// infinite (see finite).
func (s *Stat) add(v float64) {
	if !(v > 0) || math.IsInf(s.Sum+v, 1) {
		return
	}
	s.N++
	s.Sum += v
	s.Peak = max(s.Peak, v)
	s.Mean = s.Sum / float64(s.N)
}

// ChangeKind says what happened to an incident.
type ChangeKind string

// Change kinds.
const (
	Opened  ChangeKind = "opened"
	Updated ChangeKind = "updated"
	Closed  ChangeKind = "closed"
)

// Reasons an incident closed (Change.Reason): the reason its alert
// resolves with too.
const (
	// ReasonAbsent: no finding of the condition for
	// Hysteresis.ResolveAfter.
	ReasonAbsent = "absent"
	// ReasonJobRestarted: the job's run ended and a new run of the same
	// job name took its place (a job_end finding).
	ReasonJobRestarted = "job_restarted"
	// ReasonJobStopped: the job's run ended, silent for the engine's
	// job-end-after time (a job_end finding).
	ReasonJobStopped = "job_stopped"
	// ReasonResolvedByPlan: the salting plan relieved the subtask of a
	// data_skew incident (Incident.Plan has the receipt).
	ReasonResolvedByPlan = "resolved_by_plan"
	// ReasonResolvedByRescale: the task of an under_provisioned incident
	// runs at a higher parallelism and none of its subtasks is saturated
	// (Incident.Rescale has the receipt).
	ReasonResolvedByRescale = "resolved_by_rescale"
)

// Change is one new state of one incident: what the incidents table
// stores, and what alerts are made from (package alert).
type Change struct {
	Kind     ChangeKind
	Incident Incident
	// Finding is the finding that opened or extended the incident (a
	// copy the Tracker keeps no reference to), nil for the changes that no
	// finding of the condition made: closing, and a plan's effect.
	Finding *skew.Finding
	// Lasted reports whether the incident has lasted Hysteresis.For: its
	// alert fires.
	Lasted bool
	// Reason says why a Closed incident closed (Reason* constants).
	Reason string
}
