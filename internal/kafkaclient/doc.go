// Package kafkaclient holds what every Kafka client of skewlens does the
// same way: telling the errors a retry can fix from those it cannot
// (Retryable, Classify), creating topics (EnsureTopics, WaitTopics) and
// building a producer (NewWriter).
//
// It knows nothing of the topics' meaning: the Kafka source, the plan
// publisher, the Kafka alert notifier, the simulated feed and the test
// broker harness call it with their own topics and settings.
//
// Retries follow package retry: the classifier marks errors no retry can
// fix with retry.Permanent, and the writer NewWriter builds never retries
// by itself (MaxAttempts 1), so the caller's retry.Do is the one retry
// loop of a write. EnsureTopics and WaitTopics block, retrying with
// retry.Do, until the topics are ready, a permanent error, or ctx's end.
// Everything here is safe for concurrent use.
package kafkaclient
