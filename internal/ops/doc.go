// Package ops owns the operational endpoints of a skewlens process, one
// implementation of each: GET /metrics in the Prometheus text format,
// GET /healthz (the process is alive: {"status":"ok"}) and GET /readyz
// (every registered readiness check passes: {"status":"ready"} with each
// check's result under "checks"; 503 and "not ready" otherwise).
//
// Endpoints holds them and the readiness checks. A Server serves them on
// a listener of its own, with Go's profiles under /debug/pprof/ (skewlens
// run's --listen); skewlens serve's API mounts the same Endpoints' Routes
// beside its own and registers its store as a check, so both ports
// answer alike and one probe configuration fits both.
//
// Endpoints and Server are safe for concurrent use. Checks run on each
// /readyz request with the request's context, so they must be quick and
// must not block past it.
package ops
