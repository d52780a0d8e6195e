// Package serve is the HTTP service of skewlens serve: it serves the
// current salting plans (with the operators' overrides applied), recent
// findings, the per-subtask statistics (apart from the findings: GET
// /v1/stats), the incidents, each job's changes ready to apply (GET
// /v1/actions/{job_id}, derived per request from its open incidents,
// their latest findings and the plans served now) and the audit log from
// ClickHouse, and lets operators pin, override or exclude keys from a
// plan. docs/api.md shows how to use it;
// docs/openapi.yaml describes every endpoint. It also serves the web view
// (package webui) at GET /, a page that reads these same endpoints.
//
// # State
//
// The Server keeps no state of its own beyond a short-lived cache: every
// answer comes from its store (a servestore.Store: the contract serve
// declares and storage implements, the ClickHouse store in production),
// so any number of servers can run side by side. GET /v1/salting and GET
// /v1/salting/{job_id}/{task_name} are built from one snapshot (current
// plans plus overrides) that is reused for Config.CacheTTL, so many
// pollers cost one pair of queries per TTL; one refresh runs at a time
// and concurrent requests wait for it. A write through this server drops
// the snapshot, so its own next read sees the change. While the store is
// unavailable (a refresh failed with an error that is not permanent),
// those two endpoints answer at once from the last good snapshot, marked
// with Warning 110 and X-Skewlens-Stale-Since, and one refresh at a time
// keeps trying in the background; before any good snapshot they answer
// 503. Every JSON answer carries a strong ETag over its exact bytes; a
// client that sends it back in If-None-Match gets 304 Not Modified.
//
// GET /metrics, /healthz and /readyz are package ops's Endpoints, the
// same as on skewlens run's ops port. The Server registers one readiness
// check, store: /readyz answers 503 while the store does not answer, with
// the store's NotReadyError reason when it has one.
//
// # Writes and authentication
//
// Writes (POST, DELETE) and GET /v1/audit need `Authorization: Bearer
// <token>` with one of Config.Tokens; the token's name is recorded as who
// made the change. Without any configured token they answer 403. Tokens
// are compared in constant time. Each change is recorded in the audit log
// before it is stored. Writes through one Server are serialised.
//
// # Bounds
//
// Request bodies are capped at Config.MaxBodyBytes, headers at
// Config.MaxHeaderBytes, and store queries not served from the snapshot
// at Config.MaxConcurrentQueries in flight: a request beyond that is
// refused at once with 503 and Retry-After (counted in
// skewlens_serve_rejected_total{reason="busy"}), so nothing queues behind
// a slow ClickHouse. Each store call is bounded by Config.StoreTimeout;
// within it the Server retries retryable store errors with Config.Retry
// (the store itself makes one attempt), and answers 500 for a permanent
// error (retry.IsPermanent), 503 with Retry-After for a store that stays
// unavailable and 504 for one that does not answer in time (but the plan
// endpoints answer stale, see State).
//
// # Blocking and concurrency
//
// A Server is safe for concurrent use. New listens at once (so Addr is
// known) but serves nothing until Run, which blocks until its context
// ends or Stop is called, then shuts down gracefully within
// Config.ShutdownTimeout. Stop is safe to call more than once, before Run
// and concurrently with it; it returns when Run has finished. Handler
// returns the routes for use without Run (tests, another server).
package serve
