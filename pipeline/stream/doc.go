// Package stream runs the streaming pipeline: messages from a source are
// decoded, windowed and diagnosed by the engine, findings go to a sink, and
// source offsets are committed only after the sink has acknowledged every
// finding that depends on them.
//
// A Runner is an actor: one goroutine (Run) owns the decoder, the window
// stage and its watermarks, the engine and the offset ledger, so none of
// them needs locks. Bad messages go to a dead-letter sink with a reason
// and never stop it. Its API has its own Message and Partition types, so
// no Kafka client is part of it (kafkasrc.ForStream adapts kafka-go).
//
// The files follow the concerns: runner.go (the interfaces, Run and the
// retry of sink writes), config.go, fetch.go (the fetcher goroutine and
// its bounded batch queue), process.go (decoding into the stage, the
// watermark), flush.go (what a flush hands over), ledger.go (which
// offsets are safe to commit) and metrics.go.
package stream
