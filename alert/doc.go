// Package alert is the alert state machine of skewlens: findings in,
// alert transitions out. A Tracker decides when a condition fires and
// when it is over, and renders each alert's labels and annotations (the
// content of docs/alerts.md). Delivering the transitions (queues,
// goroutines, retries, metrics, logging) is package alert/deliver's job,
// and the notifiers (Alertmanager, a JSON webhook, a Kafka topic) are its
// siblings alert/alertmanager, alert/webhook and alert/kafkanotify; they
// import this package, never the other way round.
//
// # The state machine
//
// Saturation and hot_key findings (skew.Finding) are grouped by Identity:
// job_id, task_name, subtask (-1 for task-wide conditions) and cause
// ("hot_key" for hot keys). A condition is ongoing while its findings
// arrive with gaps shorter than TrackerConfig.ResolveAfter; its alert
// fires once the condition has been ongoing for TrackerConfig.For, and
// resolves once no finding has arrived for ResolveAfter. Time is event
// time only (the findings' window_end and the watermarks given to
// Advance), never a clock, so equal inputs give equal outputs, and a
// replay alerts exactly like the live run did.
//
// Tracker.Snapshot encodes the state per job, versioned and
// deterministically, and Tracker.Restore resumes it, so that the pipeline
// (which stores it: the I/O is outside this package) does not fire an
// ongoing condition again after a restart.
//
// # Blocking and safety
//
// The package is pure: it does no I/O, reads no clock, starts no
// goroutine, keeps no metrics and logs nothing (TestPure checks its
// imports). No function of it blocks. A Tracker is not safe for
// concurrent use: one goroutine owns it (deliver.Alerter serialises its
// calls on a mutex), and TrackerConfig.PlanVersion is called on that
// goroutine. The Tracker's memory is bounded by TrackerConfig.MaxTracked;
// findings of new conditions beyond it are refused and counted
// (Tracker.Refused). Nothing here panics on bad input: findings that make
// no alert (other kinds, missing fields) are ignored, and an invalid
// TrackerConfig is an error of NewTracker.
package alert
