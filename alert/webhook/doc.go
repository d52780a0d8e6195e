// Package webhook is an alert notifier that POSTs alerts as JSON to any
// HTTP endpoint (a chat bridge, an incident tool, a script). The body is
// a Message: {"version":"1","sender":"skewlens","alerts":[...]}, each
// alert in the alert.Alert JSON form (docs/alerts.md).
//
// Notify blocks until every batch is accepted (a 2xx answer), a batch is
// refused for good (a 4xx other than 408/425/429: *alert.NotifyError with
// Fatal() true), the retries are used up, or ctx ends. Retryable failures
// (5xx, network errors, timeouts) are retried with exponential backoff.
// A Notifier is safe for concurrent use.
package webhook
