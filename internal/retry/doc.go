// Package retry is the one retry loop of skewlens, its policies and its
// one error vocabulary.
//
// Every component that talks to a server (the Kafka source, the ClickHouse
// sink, the plan publisher, the alert notifiers) tells errors a retry can
// fix from errors it cannot in one way: a component wraps an error that no
// retry can fix with Permanent, and callers ask IsPermanent. Everything
// else is retryable; a transient failure wrongly called permanent would
// stop the pipeline, while a permanent one wrongly retried only costs the
// bounded retries.
//
// One layer retries: the caller of an operation, once, with Do. A
// component that only performs an operation (a sink's Write, a notifier's
// Notify) classifies its errors and returns; it does not loop. That keeps
// the retries of one write from nesting, so the waits a log or a metric
// reports are the waits that happened.
//
// The presets (Pipeline, Setup, Request, Delivery) are the policies,
// named for what they pace; this package is the one place that states
// backoff numbers.
//
// Do blocks until the operation succeeds, fails permanently, its retries
// are used up, or the context ends. Policy values are plain data, safe to
// copy and to share between goroutines.
package retry
