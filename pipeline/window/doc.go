// Package window is the windowing stage between the decoders and the
// engine: it feeds events to the engine's tumbling windows and closes
// windows as the event-time watermark passes them. Events that arrive for
// an already closed window are counted as late and dropped.
//
// The watermark always comes from a Watermarks: per input partition, the
// highest event time seen; combined, the lowest of those over the active
// partitions, minus a bounded out-of-orderness and the allowed lateness.
// A partition idle longer than a timeout stops holding it back; an
// expected partition holds it until it delivers, for a short start-up
// grace, or for the idle timeout when it has a backlog; time paused (the
// owner consuming nothing while it writes or waits) counts toward no
// partition's idleness. Idleness follows an injected clock, so it is
// tested without Kafka.
//
// `skewlens analyze` (replaying files merged by event time) uses a Feeder
// from New: one partition, no clock, every event's time marked by the
// Feeder itself. `skewlens run` uses NewPartitioned: the streaming runner
// marks each Kafka partition's events. Both close the same windows for
// the same input. A Feeder and a Watermarks are not safe for concurrent
// use: one goroutine owns them.
package window
