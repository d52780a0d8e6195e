// Package kafkanotify is an alert notifier that writes alerts to a Kafka
// topic with segmentio/kafka-go: one message per alert state change, the
// key the alert's id ("job_id/task_name/subtask/cause", so one alert's
// messages stay in order on one partition), the value the alert.Alert
// JSON (docs/alerts.md), and a header skewlens-alert-status (firing or
// resolved).
//
// The topic must exist: the broker's automatic topic creation is not
// relied on. EnsureTopic creates it (an existing topic is fine).
//
// Notify blocks until the broker acknowledged every message (acks=all),
// a message is refused for good (too large, not authorised, an invalid
// topic: *alert.NotifyError with Fatal() true), the retries are used up,
// or ctx ends. Connection errors, including the EOF of the first request
// after a broker restart, and leader changes are retried with
// exponential backoff. A Notifier is safe for concurrent use; Close is
// safe to call twice.
package kafkanotify
