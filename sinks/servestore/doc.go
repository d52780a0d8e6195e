// Package servestore is the contract between the HTTP API of skewlens
// serve (package serve) and the storage it reads and writes through: one
// small interface per concern (Pinger, PlanReader, OverrideWriter,
// AuditReader, FindingReader, IncidentReader, StatsReader), the Store
// that bundles them, and the types they carry (AuditEntry, FindingsQuery,
// IncidentsQuery, StatsQuery, NotReadyError).
//
// The view declares it and storage implements it: the ClickHouse store
// (package sinks/clickhouse) in production, in-memory fakes in serve's
// tests. It lives apart from serve so that a store compiles without the
// HTTP server.
//
// Every method must return promptly when its context ends, and must
// classify its errors with internal/retry (a permanent error is one no
// retry can fix): the Server is the layer that retries a store call,
// within its Config.StoreTimeout.
//
// It imports the standard library and the plan types (package plans)
// only: nothing of serve's HTTP code, of the web view or of any store.
package servestore
