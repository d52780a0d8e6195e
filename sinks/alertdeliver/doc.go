// Package deliver runs the alert state machine of package alert and
// delivers its notifications: Alerter feeds an alert.StateMachine with the
// incident changes the incident observer stored (Apply) and counts its
// transitions in metrics; Fanout hands the notifications to the notifiers
// (Notifier; the implementations are sinks/alertmanager, sinks/webhook
// and sinks/kafkanotify); StateObserver, a stage of the pipeline, stores the
// Alerter's state (alert.StateMachine.Snapshot) in a StateStore at every
// window close and restores it, beside the open incidents, at each
// assignment. This package holds the goroutines, queues, retries,
// metrics and logging that package alert must not. Imports go one way:
// alert <- deliver <- the notifiers (they return NotifyError) <-
// cmd/skewlens.
//
// # Blocking and safety
//
// Alerter is safe for concurrent use; its Apply never waits for a notifier:
// deliveries are queued in the Fanout, one bounded queue and one goroutine
// per notifier, so a slow or unreachable notifier delays neither the
// pipeline nor the other notifiers. A queue keeps the latest state of each
// alert (a newer state replaces an older one still waiting) and, when full,
// drops its oldest alert
// (skewlens_alert_queue_dropped_total{reason="overflow"}). Stop lets the
// queues drain for FanoutConfig.DrainTimeout, then closes the notifiers; it
// blocks until then and is safe to call twice. A StateObserver blocks as
// long as its StateStore, never on a notifier.
//
// One layer retries: the Fanout, with retry.Do and context-aware
// exponential backoff (FanoutConfig.Retry), keeping the failed alerts
// queued between attempts.
// Notifiers make one attempt per Notify call and only classify: errors a
// retry cannot fix (an HTTP 4xx, a message Kafka refuses) are marked with
// retry.Permanent, and the Fanout drops their alerts instead of retrying.
//
// # Metrics
//
// Registered on the injected prometheus.Registerer by New (the Alerter:
// skewlens_alerts_firing, skewlens_alerts_pending,
// skewlens_alert_transitions_total) and
// NewFanout (by notifier: skewlens_alert_notifications_total,
// skewlens_alert_queue_dropped_total, skewlens_alert_queue_length,
// skewlens_alert_notify_seconds, skewlens_alert_retries_total). A nil
// Registerer registers nothing.
package alertdeliver
