// Package window is the windowing stage between the decoders and the
// engine: it tracks the event-time watermark (the highest event time seen
// minus a bounded out-of-orderness and the allowed lateness), feeds events
// to the engine's tumbling windows, and closes windows as the watermark
// passes them. Events that arrive for an already closed window are counted
// as late and dropped.
//
// The same Stage serves `skewlens analyze` (replaying files) and
// `skewlens run` (consuming Kafka), so both produce the same findings for
// the same input. A Stage is not safe for concurrent use.
package window
