// Package webhook is an alert notifier that POSTs alerts as JSON to any
// HTTP endpoint (a chat bridge, an incident tool, a script). The body is
// a Message: {"version":"1","sender":"skewlens","alerts":[...]}, each
// alert in the alert.Alert JSON form (docs/alerts.md).
//
// Notify makes one attempt: it blocks until every batch is accepted (a
// 2xx answer), a request fails, or ctx ends. A batch refused for good (a
// 4xx other than 408/425/429) is a *alertdeliver.NotifyError marked with
// retry.Permanent; other failures (5xx, network errors, timeouts) are
// retryable, and the caller (alertdeliver.Fanout) retries them. A Notifier is
// safe for concurrent use. New registers skewlens_webhook_requests_total
// (POSTs by result) on the injected prometheus.Registerer.
package webhook
