// Package stream runs the streaming pipeline: messages from a source are
// decoded, windowed and diagnosed by the engine, findings go to a sink, and
// source offsets are committed only after the sink has acknowledged every
// finding that depends on them.
//
// A Runner is an actor: one goroutine (Run) owns the decoder, the window
// feeder and its watermarks, the engine and the offset ledger, so none of
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
// cancellation does not end and Config.DrainTimeout does;
// failed writes are retried meanwhile. What the drain could not write is
// logged and not committed, so a durable broker delivers it again after a
// restart.
//
// # Rebalances
//
// With a GroupSource (kafkasrc: a member of a Kafka consumer group), the
// partitions an instance reads change whenever an instance joins, leaves
// or dies. The results stay those of one uninterrupted instance because
// the runner treats each consumer-group generation as a run of its own:
//
//   - Revoked (the generation ended; the source holds back rejoining
//     the group until the runner is done, for up to RevokeTimeout): the
//     runner writes nothing more of it. Findings not yet handed to the
//     writer are dropped: they may come from windows that closed only
//     because the revoked partitions stopped delivering. Jobs handed
//     before hold windows that closed while every partition was still
//     read, so the writer may finish them (then they are abandoned; a
//     commit for an ended generation fails with ErrGenerationEnded, which
//     is no error). Then the open windows, the engine's state, the
//     watermarks and the offset ledger are dropped.
//   - Assigned (a new generation): before any of its records is
//     processed, the runner loads the group's saved engine state
//     (StateLoader) and has the sink resume its own (Resumer: open
//     incidents, alerts, salting plans), as a restarted instance does, and reading
//     starts again from the committed offsets. Records of a generation
//     that ended are not processed.
//
// A replay is safe: the findings of a window are the same whoever computes
// them from the same records and state, their rows replace each other
// (ReplacingMergeTree), and events of windows that a saved state has closed
// are Replayed, not counted again. The engine state is saved after the
// findings and before the commit, so the state a new owner loads is never
// behind the offsets it starts from; and since the old owner stops writing
// before it rejoins, and the new one loads only once the new generation has
// formed, no stale save can land after the load. Jobs the engine (or the
// incident tracker, the alert state machine, or the plan manager) restored
// but never sees a record of stay out of what it saves or publishes:
// another instance reads them.
//
// Its API has its own Message and Partition types, so no Kafka client is
// part of it (kafkasrc.ForStream adapts kafka-go).
//
// The files follow the concerns: runner.go (the interfaces, Run and the
// retry of sink writes), config.go, group.go (rebalances), fetch.go (the fetcher goroutine and
// its bounded batch queue), process.go (decoding into the feeder, the
// watermark), flush.go (what a flush hands over, and the pauses),
// writer.go (the writer goroutine), ledger.go (which
// offsets are safe to commit) and metrics.go.
package stream
