// Package kafkasrc is skewlens' Kafka input stage, built on
// github.com/segmentio/kafka-go: a Source that reads the Flink metric and
// key-sample topics as one consumer-group member with explicit commits,
// and a DeadLetters writer for records that cannot be decoded; both need
// their topics to exist (kafkaclient.EnsureTopics creates them).
// ForStream, DeadLettersForStream and StreamPartitions adapt them to the
// streaming runner's own types (package stream), converting each message.
//
// # Reading
//
// A Source is one member of the consumer group (kafka-go's
// ConsumerGroup, joined on the first Fetch) subscribed to all configured
// topics. It handles the group's generations itself, rather than through
// a kafka-go Reader with a GroupID, which hides them: for each generation
// it reads every assigned partition with a kafka-go Reader of its own,
// from the group's committed offset, into one bounded queue
// (Config.QueueCapacity). Through ForStream, the runner hears of each
// assignment before the generation's first record, and of each
// revocation before the member rejoins the group: the Source waits (up to
// Config.RevokeTimeout) until the runner has stopped writing what depends
// on the revoked partitions. Records of a generation that ended are not
// returned, and Commit refuses them (ErrGenerationEnded): their
// partitions' next owner reads them again. Consumer lag is computed per
// topic from each fetched record's partition high watermark.
//
// Nothing is committed until Commit is called with the processed
// records (at-least-once: records fetched but not committed are read
// again after a restart, a rebalance or a broker restart). Commit is
// synchronous.
//
// # Blocking and safety
//
// Fetch blocks until a record arrives or its context is done; Commit until
// the broker stored the offsets or its context is done; Send until the
// dead letter is acknowledged by all in-sync replicas or its context is
// done. All three retry transient errors (broker restarts, refused or
// broken connections, timeouts, rebalances) with exponential backoff
// (retry.Pipeline()), log them and count them; they never exit the process.
// New waits up to Config.StartupTimeout for the topics to exist and
// fails if they do not: a kafka-go Reader on a missing topic would
// block forever.
//
// A Source and a DeadLetters are safe for concurrent use. Records from one
// partition are returned in offset order; use one goroutine for Fetch to
// keep that order. Close is safe to call more than once and concurrently
// with the other methods, which then return ErrClosed.
//
// # Queues
//
// The Source's queue of fetched records holds at most QueueCapacity records;
// when full, the fetchers stop and the data stays in Kafka (back-pressure;
// metrics skewlens_kafka_reader_queue_length and
// skewlens_kafka_consumer_lag); each partition's reader holds up to 100
// more. At most DeadLetterInFlight dead letters are
// written at once; further Send calls wait (metric
// skewlens_kafka_dead_letters_in_flight).
//
// # Metrics
//
// Registered on the injected prometheus.Registerer in New and
// NewDeadLetters and unregistered by Close: records consumed and consumer
// lag by topic, fetch errors by kind, commits by result, commit retries
// and latency, kafka-go's internal reader errors, rebalances and queue
// length, dead-lettered records and failures by reason.
package kafkasrc
