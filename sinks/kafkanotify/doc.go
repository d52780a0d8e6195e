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
// Notify makes one attempt: it blocks until the broker acknowledged every
// message (acks=all), the write failed, or ctx ends. Errors are
// *alertdeliver.NotifyError, classified by kafkaclient.Classify: a message
// refused for good (too large, not authorised, an invalid topic) is marked
// with retry.Permanent; connection errors, including the EOF of the first
// request after a broker restart, and leader changes are retryable, and
// the caller (alertdeliver.Fanout) retries them. A Notifier is safe for
// concurrent use; Close is safe to call twice.
//
// New registers skewlens_kafkanotify_writes_total (writes by result) and
// skewlens_kafkanotify_messages_total (messages acknowledged) on the
// injected prometheus.Registerer.
package kafkanotify
