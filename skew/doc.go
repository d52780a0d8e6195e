// Package skew is the skewlens engine: a pure library that turns Flink
// metric observations and sampled record keys into findings.
//
// Events (KeySample, Metric) and watermarks go in; findings come out. The
// engine does no I/O, reads no clock, logs nothing and keeps no metrics of
// its own, so the same input always gives the same findings, whether it is
// replayed from files by `skewlens analyze` or streamed from Kafka by
// `skewlens run`.
//
// An Engine is not safe for concurrent use: one goroutine owns it.
package skew
