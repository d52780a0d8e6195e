// Package simfeed plays simulated Flink jobs into Kafka, the way the
// jobs' metric reporters and key samplers would: metric lines go to the
// metrics topic and key samples to the samples topic, keyed by job_id so
// that one job's records stay in one partition (and on one skewlens
// instance).
//
// Event time is the simulator's; wall-clock pacing is the reporting
// interval divided by Speed, so a demo can show ten minutes of an incident
// in one; interval n is written n intervals after Run began, in batches of
// at most 10000 messages, so a fleet of 100k subtasks (1.5 M lines per
// interval) is never held whole. A Feed is run by one goroutine; Stop is safe to call any number
// of times.
package simfeed
