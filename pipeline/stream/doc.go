// Package stream runs the streaming pipeline: messages from Kafka are
// decoded, windowed and diagnosed by the engine, findings go to a sink, and
// Kafka offsets are committed only after the sink has acknowledged every
// finding (and the engine state) that depends on them.
//
// A Runner is an actor: one goroutine (Run) owns the decoder, the window
// stage, the engine, the watermarks and the offset ledger, so none of them
// needs locks. Three goroutines serve it: the fetcher fills a bounded
// queue of message batches (a full queue blocks it: back-pressure, never
// dropping); the writer does the actor's flush jobs in order (write the
// findings, save the engine state, advance the sink, commit the offsets);
// and the actor hands the writer at most one job ahead, then waits. So
// consumption goes on while ClickHouse takes an insert, and stops, with
// memory bounded, while ClickHouse is away. The Sink, StateStore and the
// Source's Commit are called from the writer goroutine only, one call at a
// time. Bad messages go to a dead-letter sink with a reason and never stop
// the runner.
package stream
