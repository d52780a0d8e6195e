// Package simfeed plays simulated Flink jobs into Kafka, the way the
// jobs' metric reporters and key samplers would: metric lines go to the
// metrics topic and key samples to the samples topic, keyed by job name
// (else job_id), as the reporter's LineSender.recordKey does, so that
// every run of one job stays in one partition (and on one skewlens
// instance, which links the runs).
//
// Event time is the simulator's, on one clock for all jobs from the
// earliest Start (a job whose Start is later, such as the next run of a
// restarted job, begins that much later, so every partition's records
// come in event-time order); wall-clock pacing is the reporting
// interval divided by Speed, so a demo can show ten minutes of an incident
// in one; interval n is written n intervals after Run began, in batches of
// at most 10000 messages, so a fleet of 100k subtasks (1.5 M lines per
// interval) is never held whole. A Feed is run by one goroutine; Stop is safe to call any number
// of times.
package simfeed
