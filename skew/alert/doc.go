// Package alert makes alerts from incidents: incident changes in, alert
// transitions out. Findings are folded once, into incidents, by package
// skew/incident, which owns the hysteresis; a StateMachine here turns the
// changes of those incidents into alerts (pending, firing, renotify,
// resolved) and renders each alert's labels and annotations (the content
// of docs/alerts.md). Delivering the transitions (queues, goroutines,
// retries, metrics, logging) is package sinks/alertdeliver's job, and the
// notifiers (Alertmanager, a JSON webhook, a Kafka topic) are its
// siblings sinks/alertmanager, sinks/webhook and sinks/kafkanotify; they
// import this package, never the other way round.
//
// # The state machine
//
// An alert covers the open incidents of one incident.Identity: job_id,
// task_name, subtask (-1 for task-wide conditions) and cause ("hot_key"
// for hot keys, whose incidents are per key). It is pending from its first
// incident's opening, fires once one of its incidents has lasted
// (incident.Change.Lasted, the hysteresis' For), and resolves when its
// last incident closes, with that incident's reason (absent, resolved by
// the plan, the run restarted or stopped). Time is event time only (the
// changes' windows), never a clock, so equal inputs give equal outputs,
// and a replay alerts exactly like the live run did.
//
// StateMachine.Snapshot encodes the alerts per job, versioned and
// deterministically, and StateMachine.Restore resumes them beside the restored
// open incidents, so that the pipeline (which stores both: the I/O is
// outside this package) does not fire an ongoing condition again after a
// restart.
//
// # Blocking and safety
//
// The package is pure: it does no I/O, reads no clock, starts no
// goroutine, keeps no metrics and logs nothing (TestPure checks its
// imports, and skew/incident's). No function of it blocks. A StateMachine is
// not safe for concurrent use: one goroutine owns it (alertdeliver.Alerter
// serialises its calls on a mutex), and Config.PlanVersion is
// called on that goroutine. A StateMachine's memory is bounded by the open
// incidents (incident.Config.MaxOpen): every alert has one. Nothing here
// panics on bad input: an invalid Config is an error of
// NewStateMachine, and a saved state that does not validate one of Restore.
package alert
