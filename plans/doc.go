// Package plans keeps the lifecycle of salting plans: which hot keys of a
// task are salted, with which buckets, under which version, and until when.
//
// A Flink job re-keys its state when its salting changes, so plans must not
// flap. The Manager turns the engine's per-window salting_plan findings into
// plan changes: a hot key stays salted for a cooldown after it cools down, a
// plan gets a new version only when its set of hot keys or bucket counts
// changes materially, and a plan is retired after it expires. Operators can
// pin or override a plan, or exclude a key (see Override and Apply).
//
// The package is pure: time is the event time of the findings (window
// ends), so the same findings give the same plans. It does no I/O.
//
// Plan is the one JSON contract used by the HTTP API (skewlens serve), the
// compacted Kafka plans topic and the plans table in ClickHouse.
package plans
