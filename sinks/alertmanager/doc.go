// Package alertmanager is an alert notifier for Prometheus Alertmanager:
// it POSTs alerts to Alertmanager's v2 API (/api/v2/alerts) the way
// Prometheus does.
//
// Alertmanager considers an alert firing until its endsAt, so a firing
// alert is posted with an endsAt Config.EndsAfter in the future and
// posted again every Config.ResendInterval while it fires
// (a goroutine started by New does that); a resolved alert is posted once
// with its endsAt. If skewlens stops, its alerts therefore resolve in
// Alertmanager EndsAfter later rather than firing forever. Times are
// clamped to the wall clock: startsAt is never in the future and a
// resolved alert's endsAt never is either, because Alertmanager would
// otherwise treat a resolved alert as firing until then (event time runs
// ahead of the wall clock in simulations).
//
// Notify makes one attempt: it blocks until Alertmanager accepted every
// alert, a POST failed, or ctx ends. Alerts refused for good (a 4xx) are
// a *alertdeliver.NotifyError marked with retry.Permanent; other failures are
// retryable, and the caller (alertdeliver.Fanout) retries them. A Notifier is
// safe for concurrent use; posts are serialised, so a re-post never
// overtakes a resolution. Close stops the re-posting goroutine (it does
// not resolve anything) and is safe to call twice.
package alertmanager
