// Package ops serves the operational endpoints of a skewlens process:
// /metrics in the Prometheus text format, /healthz (the process is alive:
// {"status":"ok"}, the same JSON as skewlens serve's /healthz) and /readyz
// (every registered readiness check passes: {"status":"ready"} as serve
// answers, with each check's result under "checks"; 503 and
// "not ready" otherwise).
//
// A Server is safe for concurrent use. Checks run on each /readyz request
// with the request's context, so they must be quick and must not block
// past it.
package ops
