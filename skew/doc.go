// Package skew is the skewlens engine: a pure library that turns Flink
// metric observations and sampled record keys into findings.
//
// Events (KeySample, Metric) and watermarks go in; findings come out. The
// engine does no I/O, reads no clock, logs nothing and keeps no metrics of
// its own, so the same input always gives the same findings, whether it is
// replayed from files by `skewlens analyze` or streamed from Kafka by
// `skewlens run`.
//
// The detection rules the engine applies (when a subtask is saturated and
// sustained, which cause it is given, when a key is hot, when checkpoints
// are at risk) are stated once, with their thresholds, in
// docs/detection.md; the comments here and in the files that apply them
// describe the code.
//
// # Which task an event is of
//
// Events of a job meet their task on Flink's task_id, else by name
// through an alias learned from events that carry both, names compared in
// the form PrometheusReporter's default label filter gives them (names.go).
// The rule, with what happens to key samples that come before any metric
// named their task_id: docs/detection.md#which-task.
//
// # Busy time
//
// Busy, back-pressured and idle time come from the differences of
// Flink's accumulate*TimeMs counters when a subtask reports them, else
// from the *TimeMsPerSecond gauges (timeMs and taskStats, diagnose.go);
// Config.BusyFromGauges ignores the counters. The rule, with when a
// subtask is not observed in a window: docs/detection.md#busy-time.
//
// # Causes
//
// saturation (diagnose.go) gives each saturated subtask of a task its
// cause, or the task as a whole under_provisioned (underProvisioned
// recommends its parallelism); the rules: docs/detection.md#saturated and
// the sections after it.
//
// # Hot keys
//
// The unit of evidence is the sampled record (a key sample's Weight). Two
// rules name keys, the task rule and the subtask rule (hotkey.go); their
// statement: docs/detection.md#hot-keys. Hot keys of a task that is not
// saturated are still reported, labelled (HotKey.Saturated,
// HotKey.SkewsSubtask); HotKey.Actionable says which may alert. The
// candidate keys' evidence is part of the saved state.
//
// # Checkpoints
//
// checkpoint_risk is a saturation finding on the subtask that holds up the
// checkpoint barrier (checkpointCulprit; none without one), raised by the
// forecast of forecast.go or by a slow last checkpoint
// (Config.CheckpointRiskFraction); the rules:
// docs/detection.md#checkpoint_risk and
// docs/detection.md#checkpoint-timeouts-predicted. The job's recent
// checkpoints are part of its saved state, so a restored engine forecasts
// as one that ran through. A job that has never completed a checkpoint
// (Flink reports -1, Metric.NoValue, before the first and with
// checkpointing off) has no duration and no forecast; its saturation
// findings say so (Evidence.NoCheckpointYet, and the summary when
// checkpoints fail).
//
// An Engine is not safe for concurrent use: one goroutine owns it.
package skew
