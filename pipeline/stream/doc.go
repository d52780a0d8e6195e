// Package stream runs the streaming pipeline: messages from Kafka are
// decoded, windowed and diagnosed by the engine, findings go to a sink, and
// Kafka offsets are committed only after the sink has acknowledged every
// finding that depends on them.
//
// A Runner is an actor: one goroutine (Run) owns the decoder, the window
// stage, the engine and the offset ledger, so none of them needs locks.
// Bad messages go to a dead-letter sink with a reason and never stop it.
package stream
