// Package clickhouse is the skewlens ClickHouse store: it stores findings
// (skew.Finding) in ClickHouse tables that people query with SQL, and
// everything else skewlens keeps there.
//
// # Tables
//
// Every finding becomes one row of the findings table and, for the kinds
// hot_key and salting_plan, one row of the table of that kind (hot_keys,
// salting_plans). Statistics (kind subtask_stats, one per subtask and
// window, about ten times as many as the findings) go to the
// subtask_stats table only, so that the findings table and what is read
// from it hold findings alone. The schema is versioned in
// schema/NNNN_name.sql, embedded in the binary, and applied by
// Store.Migrate; schema_migrations records the applied versions. docs/
// queries.md shows how to query the tables.
//
// Besides findings the store keeps, for the rest of skewlens:
//   - job_state: the state per consumer group, job and part, saved
//     between the findings write and the offset commit so that a
//     restarted pipeline resumes it (jobstate.go): the engine's
//     cross-window state (SaveState, LoadState) and the alert state
//     machine's (SaveAlertState, LoadAlertState; alert.StateMachine.Snapshot),
//     so that a restart does not fire ongoing alerts again. It replaced
//     engine_state and alert_state (migration 0008, which copies their
//     rows where an older release created them: its upgrade section);
//   - plans, plan_overrides and plan_audit (WritePlans, CurrentPlans, RestorablePlans, Plan,
//     Overrides, PutOverride, DeleteOverride, Audit): the salting plans'
//     versions and retirements, operators' overrides, and who changed what;
//   - incidents (WriteIncidents, LoadIncidents, IncidentReader): one row
//     per change of an incident (package incident), versioned by its event
//     time, so replays collapse; the stored open incidents are also the
//     incident tracker's state after a restart.
//
// # Parts
//
// A Store is the connection and the schema (New, Migrate, Ping, Close).
// Each consumer takes only its part: the Writer (Write, SaveState,
// LoadState, WritePlans, PutOverride, DeleteOverride) for the pipeline
// and the API's changes, and the readers PlanReader, FindingReader,
// StatsReader and AuditReader (skewlens serve) and TopReader (skewlens
// top). A Connector is a Store that connects and migrates in the
// background, retrying until the server answers, for skewlens serve,
// which must start and answer /readyz while ClickHouse is down; its
// calls fail at once with a retryable *NotConnectedError until then.
// The readers
// implement the contracts their consumers declare, with the consumers'
// types: package servestore of serve (servestore.PlanReader, ...) and
// package topstore of top (topstore.Reader). This package imports those
// two contracts, never serve's HTTP server or top's terminal view
// (internal/app's TestLayers checks), and neither view's code imports it.
//
// # Dialects
//
// Each schema file holds the statements of two dialects side by side:
// legacy for ClickHouse 18.16 to 20.2 (Debian bookworm ships 18.16) and
// modern for 20.3 and later, which adds LowCardinality columns, codecs and
// a TTL. New reads SELECT version() and picks the dialect; Config.Dialect
// can force one. Both dialects have the same column names and types as
// seen by queries, so queries and the insert code are shared.
//
// # Exactly-once results from at-least-once writes
//
// The tables are ReplacingMergeTree(version) keyed by job, task, window
// start, subtask and (where it applies) kind, cause and key. Write takes a
// version from the caller, which should grow with the input (for example
// the highest Kafka offset the findings were computed from). Writing the
// same findings again, after a crash or a retried insert whose answer was
// lost, stores rows with the same key that merges collapse; readers use
// FINAL or argMax(column, version) to see each finding once. Insert
// deduplication is not relied on: it does nothing on non-replicated
// tables.
//
// # Blocking and safety
//
// A Store and its parts are safe for concurrent use; writes and Migrate
// are serialised. Write blocks until the server has acknowledged every row
// (so the caller may then commit its input offsets), pacing inserts to
// about one per Config.FlushInterval per table; pass a whole window's
// findings (or more) per call. Every blocking call returns promptly when
// its context ends. An acknowledged insert is in the server's parts;
// ClickHouse does not fsync them by default.
//
// # Errors and retries
//
// Errors are classified once, here, in the vocabulary of internal/retry:
// an error retrying cannot fix is permanent (retry.IsPermanent): a
// finding that cannot be stored, a missing table or column, a syntax
// error, failed authentication, a closed Store. Server exceptions are
// retryable only for a list of codes (overload, timeouts, network);
// everything else the server or the network says is a plain, retryable
// error.
//
// The caller retries, once. Reads and writes make one attempt: the
// pipeline's runner retries Write, SaveState and (through planpub.PlanObserver)
// WritePlans without bound while it stops consuming; skewlens serve
// retries its store calls within its timeout; start-up reads are retried
// where skewlens starts; skewlens top's refresh is its own retry. Migrate,
// which only start-up calls, retries each step itself with
// Config.Retry (metric skewlens_clickhouse_retries_total{table=
// "migrate"}).
//
// Values are always sent in the native format through batches with an
// explicit column list, never spliced into SQL; the only identifier in SQL
// text is Config.Database, which Validate restricts to a plain identifier.
package clickhouse
