// Package stream runs the streaming pipeline: messages from a source are
// decoded, windowed and diagnosed by the engine, findings go to a sink, and
// source offsets are committed only after the sink has acknowledged every
// finding that depends on them.
//
// A Runner is an actor: one goroutine (Run) owns the decoder, the window
// stage and its watermarks, the engine and the offset ledger, so none of
// them needs locks. Bad messages go to a dead-letter sink with a reason
// and never stop it. A fetcher goroutine feeds it through a bounded queue
// of batches; a writer goroutine does its flushes (write the findings,
// save the engine state, advance the sink's event time, commit the
// offsets), in order and one job behind, so decoding and windowing the
// next messages overlap the ClickHouse insert. The actor blocks when the
// writer has a job waiting already: back-pressure, never dropping. The
// time the writer is busy counts toward no partition's idleness, as the
// time the actor wrote itself did: a commit waiting across a broker
// restart stalls the fetcher too, and must not make partitions idle.
//
// Stopping (Stop, or Run's context ending) drains: the findings of the
// windows that closed are written, the engine state saved and the offsets
// they free committed, on the writer's own context, which the caller's
// cancellation does not end and Config.DrainTimeout (default 10s) does;
// failed writes are retried meanwhile. What the drain could not write is
// logged and not committed, so a durable broker delivers it again after a
// restart.
//
// Its API has its own Message and Partition types, so no Kafka client is
// part of it (kafkasrc.ForStream adapts kafka-go).
//
// The files follow the concerns: runner.go (the interfaces, Run and the
// retry of sink writes), config.go, fetch.go (the fetcher goroutine and
// its bounded batch queue), process.go (decoding into the stage, the
// watermark), flush.go (what a flush hands over, and the pauses),
// writer.go (the writer goroutine), ledger.go (which
// offsets are safe to commit) and metrics.go.
package stream
