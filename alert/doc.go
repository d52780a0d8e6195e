// Package alert turns skewlens findings into alerts for the people on
// call: a deterministic state machine (Tracker) decides when a condition
// fires and when it is over, and a fan-out (Fanout) delivers the changes
// to notifiers (Alertmanager, a JSON webhook, a Kafka topic; see the
// subpackages). Alerter combines the two with metrics and is what the
// pipeline wires in. docs/alerts.md describes the behaviour and the
// message formats.
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
// # Blocking and concurrency
//
// Tracker does no I/O and never blocks; it is not safe for concurrent use
// (one goroutine owns it). Alerter is safe for concurrent use; its Observe
// and Advance never wait for a notifier: deliveries are queued in the
// Fanout, one bounded queue and one goroutine per notifier, so a slow or
// unreachable notifier delays neither the pipeline nor the other
// notifiers. A queue keeps the latest state of each alert (a newer state
// replaces an older one still waiting) and, when full, drops its oldest
// alert (skewlens_alert_queue_dropped_total{reason="overflow"}). Stop
// lets the queues drain for FanoutConfig.DrainTimeout, then closes the
// notifiers; it blocks until then and is safe to call twice.
//
// One layer retries: the Fanout, with retry.Do and context-aware
// exponential backoff, keeping the failed alerts queued between attempts.
// Notifiers make one attempt per Notify call and only classify: errors a
// retry cannot fix (an HTTP 4xx, a message Kafka refuses) are marked with
// retry.Permanent, and the Fanout drops their alerts instead of retrying.
package alert
