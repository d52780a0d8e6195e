// Package skew is the skewlens engine: a pure library that turns Flink
// metric observations and sampled record keys into findings.
//
// Events (KeySample, Metric) and watermarks go in; findings come out. The
// engine does no I/O, reads no clock, logs nothing and keeps no metrics of
// its own, so the same input always gives the same findings, whether it is
// replayed from files by `skewlens analyze` or streamed from Kafka by
// `skewlens run`.
//
// # Which task an event is of
//
// Within a job, events that carry Flink's task_id meet on it (every Flink
// metric reporter sends it; key samples may). Events without one resolve
// by name through an alias learned from events that carry both; names
// compare in the form PrometheusReporter's default label filter gives
// them (every code point outside [A-Za-z0-9:_] becomes '_'), so
// "KeyedProcess____enrich" is "KeyedProcess -> enrich". Findings show the
// unfiltered spelling once seen. A task's first key samples may come
// without task_id before any metric named its id: they start a task by
// name, which the first event with the task_id adopts. Two task_ids with
// one name stay two tasks, and later events of that name without task_id
// go to a shared task of their own.
//
// # Busy time
//
// Busy, back-pressured and idle time come from the differences of
// Flink's accumulate*TimeMs counters when a subtask reports them, and
// from the *TimeMsPerSecond gauges (60 s moving averages since Flink 2.x)
// only for subtasks that do not; Config.BusyFromGauges ignores the
// counters. A subtask that reports the counters but whose difference
// cannot be computed in a window (one reading and none before it, a
// restart inside the window) is not observed in that window: its sustain
// count neither counts nor resets, and the gauge is not used instead. A
// subtask judged by the gauge does not count its first window with busy
// time (per attempt) when it reads 1000 ms/s, Flink's reading for about
// 10 s after a deployment.
//
// # Hot keys
//
// The unit of evidence is the sampled record (a key sample's Weight).
// Two rules name keys (see hotkey.go). The task rule: the exact lower
// bound of a key's share of the task's sampled records, pooled over the
// last Config.HotKeyPoolWindows windows, at Config.HotKeyConfidence, is
// above max(HotKeyShare, HotKeyFairShare/P). The subtask rule: on a
// subtask saturated with skewed input, the lower bound of a key's share
// of that subtask's records (from the subtask's own small sketch) is above
// HotKeyExcessShare of the subtask's excess over its peers' median. Hot
// keys of a task that is not saturated are still reported, labelled
// (HotKey.Saturated, HotKey.SkewsSubtask); they are HotKey.Actionable, and
// may alert, only when the key alone pushes its subtask above the skew
// ratio. The candidate keys' evidence is part of the saved state.
//
// # Checkpoints
//
// A saturated or back-pressured subtask delays the checkpoint barrier; of
// those, the one with the largest checkpoint start delay or alignment
// (else the busiest saturated one) holds it up. checkpoint_risk, a
// saturation finding on that subtask (none without one), warns before
// checkpoints fail, in either of two ways. The forecast (forecast.go):
// each job keeps its last checkpoints (a completed one is seen when
// numberOfCompletedCheckpoints rises, or lastCheckpointDuration or
// lastCheckpointSize changes; a failure that came a timeout after the
// last one ended counts as one that took the whole timeout), fits two
// Theil–Sen trends of duration over trigger time through the last four, a
// line and an exponential (a line through the logarithms), keeps the one
// that fits them better, walks Flink's schedule forward from the latest
// (the next trigger an interval after the last, or when it ends) to the
// first checkpoint the trend makes reach Config.CheckpointTimeoutMs, and
// raises checkpoint_risk when that one fails within
// Config.CheckpointForecastHorizon checkpoint intervals; a trend whose
// latest checkpoint is quicker than the two before it forecasts nothing. The interval is measured from the gaps between the
// triggers of the job's checkpoints (Config.CheckpointIntervalMs until
// three gaps show it). The evidence carries the forecast, the interval,
// and the trends per interval of the duration, of the barrier wait of the
// subtask holding the barrier and of the checkpoint size. And, as before
// the forecast, a lastCheckpointDuration of Config.CheckpointRiskFraction
// of the timeout or more raises it too. The job's recent checkpoints are
// part of its saved state, so a restored engine forecasts as one that ran
// through. A job that has never completed a checkpoint (Flink reports -1,
// Metric.NoValue, before the first and with checkpointing off) has no
// duration and no forecast; its saturation findings say so
// (Evidence.NoCheckpointYet, and the summary when checkpoints fail).
//
// An Engine is not safe for concurrent use: one goroutine owns it.
package skew
