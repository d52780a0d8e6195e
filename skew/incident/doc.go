// Package incident folds the findings of consecutive windows of one
// condition into one incident, so that a condition that lasts five
// minutes is one record with a start, an end and its worst numbers, not
// thirty identical rows.
//
// A condition is an Identity (job, task, subtask or the whole task, and
// cause), and for hot keys the key too. Tracker opens an incident at the
// first finding of a condition, extends it with every later one, and
// closes it with the Hysteresis: once no finding of it arrived for
// ResolveAfter, its end being the end of its last window (or earlier: its
// run ended, or a fix relieved it). This is the one fold of
// findings: alerts are made from the changes it returns (package alert:
// an alert fires once an incident has lasted Hysteresis.For, and
// resolves when its last incident closes), and carry the incident's id
// (IncidentID: a hash of the condition and the start of its first
// window).
//
// Design: Tracker is pure. It does no I/O, reads no clock, and its
// output depends only on the findings and watermarks it is given, in
// event time; every change it returns carries a version (the event time
// of the change) that grows for each incident, so storing the changes in
// a table that keeps the highest version per id (the ClickHouse incidents
// table, ReplacingMergeTree) is idempotent. For crash safety the stored
// incidents are the state: Restore takes the open incidents and, per job,
// the end of the latest window an incident saw, and Observe ignores
// findings of windows it has already folded in. A pipeline that crashed
// after storing some incident changes replays windows whose findings the
// table already holds; they change nothing, so the table ends up as an
// uninterrupted run leaves it. Each instance of a consumer group restores
// the incidents of the jobs it owns only (see Tracker.Restore), so that
// instances do not close each other's incidents.
//
// Two fixes close incidents with a receipt, both seen in the
// subtask_stats findings rather than taken on trust: a salting plan
// relieving a data_skew incident's subtask (Config.Plan, PlanEffect),
// and a higher parallelism relieving an under_provisioned incident's
// task (RescaleEffect). skewlens does not restart jobs; an operator
// rescales with the override the finding carries and a resubmit, which
// gives the job a new id, so an under_provisioned incident is not closed
// with its run: it follows the job name into the run that replaced it
// (Incident.RunJobID) and closes "resolved by rescale" there, or stays
// open while the new run is still saturated. A rescale in place (Flink's
// adaptive scheduler) is the same receipt within one run. A data_skew,
// rotating_hot_key or hot_key incident follows the new run the same way
// when its task's salting plan carried over to it (the plan manager
// carries a plan to a successor running the task at the same
// parallelism): the same incident and alert go on, and close resolved by
// the plan in the new run, or stay open while it is saturated.
//
// Package sinks/incidentsink wires a Tracker into the pipeline between the
// findings writer and the alerts (its OnChanges hands the stored changes
// to alertdeliver.Alerter.Apply); skewlens analyze -o text runs the same
// stages over the findings of a replay.
package incident
