package kafkasrc

import (
	"cmp"
	"errors"
	"fmt"
	"time"
)

// Defaults, used by DefaultConfig and named for the flags (cmd/skewlens)
// and the simulator feed (internal/simfeed).
const (
	DefaultGroupID            = "skewlens"
	DefaultMetricsTopic       = "flink-metrics"
	DefaultSamplesTopic       = "flink-key-samples"
	DefaultMinBytes           = 64 << 10
	DefaultMaxBytes           = 8 << 20
	DefaultMaxWait            = 250 * time.Millisecond
	DefaultQueueCapacity      = 1000
	DefaultStartupTimeout     = 30 * time.Second
	DefaultBrokerWait         = time.Minute
	DefaultDeadLetterTopic    = "skewlens-dead-letters"
	DefaultDeadLetterInFlight = 16
	DefaultWriteTimeout       = 10 * time.Second
	DefaultRevokeTimeout      = 8 * time.Second
)

// DefaultTopics returns the topics read by default: the metrics topic and
// the key-samples topic.
func DefaultTopics() []string { return []string{DefaultMetricsTopic, DefaultSamplesTopic} }

// Config configures a Source and its DeadLetters. DefaultConfig returns
// it with the defaults given in the field comments; New and
// NewDeadLetters also read a zero field as its default.
type Config struct {
	// Brokers are the bootstrap brokers, host:port (required).
	Brokers []string
	// GroupID is the consumer group (default "skewlens"). Offsets are
	// committed for this group only by Source.Commit.
	GroupID string
	// Topics are the topics to read (default ["flink-metrics",
	// "flink-key-samples"]). They must exist: see kafkaclient.EnsureTopics.
	Topics []string
	// MinBytes is the least data a fetch waits for (default 64 KiB), up to
	// MaxWait.
	MinBytes int
	// MaxBytes is the most data one fetch returns (default 8 MiB).
	MaxBytes int
	// MaxWait is how long a fetch waits for MinBytes (default 250ms); it is
	// the added latency when the topics are quiet.
	MaxWait time.Duration
	// QueueCapacity bounds kafka-go's internal queue of fetched messages
	// (default 1000 messages). When it is full the fetchers block, so the
	// broker keeps the rest: the overflow policy is back-pressure, seen as
	// consumer lag (metric skewlens_kafka_consumer_lag) and queue length
	// (skewlens_kafka_reader_queue_length).
	QueueCapacity int
	// StartFromLatest makes a group without committed offsets start at the
	// end of each partition instead of the beginning (default false:
	// earliest, so nothing already in the topic is skipped).
	StartFromLatest bool
	// StartupTimeout bounds New's check that the topics exist (default
	// 30s).
	StartupTimeout time.Duration
	// BrokerWait bounds kafkaclient.WaitBrokers: how long a pipeline that starts
	// before its brokers waits for one of them to answer (default 1m,
	// about what a broker takes to start after a reboot, with room).
	BrokerWait time.Duration
	// DeadLetterTopic receives records that cannot be decoded (default
	// "skewlens-dead-letters"). It must exist: see kafkaclient.EnsureTopics.
	DeadLetterTopic string
	// DeadLetterInFlight bounds the dead letters being written at once
	// (default 16). Further Send calls wait for a slot (or their context):
	// the overflow policy is blocking, seen as
	// skewlens_kafka_dead_letters_in_flight.
	DeadLetterInFlight int
	// WriteTimeout bounds one dead-letter write attempt (default 10s).
	WriteTimeout time.Duration
	// RevokeTimeout bounds how long the member waits, when its
	// partitions are revoked (a rebalance), for the pipeline to stop
	// writing what depends on them before it rejoins the group (default
	// 8s; at most the group's 10s rebalance timeout, or the member would
	// be dropped from the next generation).
	RevokeTimeout time.Duration
}

// DefaultConfig returns a Config with every default filled in (Brokers,
// required, stays empty): the values named by the constants above, which
// the field comments state in words. Callers start from it and override
// what they configure.
func DefaultConfig() Config {
	return Config{
		GroupID:            DefaultGroupID,
		Topics:             DefaultTopics(),
		MinBytes:           DefaultMinBytes,
		MaxBytes:           DefaultMaxBytes,
		MaxWait:            DefaultMaxWait,
		QueueCapacity:      DefaultQueueCapacity,
		StartupTimeout:     DefaultStartupTimeout,
		BrokerWait:         DefaultBrokerWait,
		DeadLetterTopic:    DefaultDeadLetterTopic,
		DeadLetterInFlight: DefaultDeadLetterInFlight,
		WriteTimeout:       DefaultWriteTimeout,
		RevokeTimeout:      DefaultRevokeTimeout,
	}
}

// withDefaults returns c with every zero field (an empty Topics
// included) set to its value in DefaultConfig. New and NewDeadLetters
// apply it, so a zero field means its default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.GroupID = cmp.Or(c.GroupID, d.GroupID)
	if len(c.Topics) == 0 {
		c.Topics = d.Topics
	}
	c.MinBytes = cmp.Or(c.MinBytes, d.MinBytes)
	c.MaxBytes = cmp.Or(c.MaxBytes, d.MaxBytes)
	c.MaxWait = cmp.Or(c.MaxWait, d.MaxWait)
	c.QueueCapacity = cmp.Or(c.QueueCapacity, d.QueueCapacity)
	c.StartupTimeout = cmp.Or(c.StartupTimeout, d.StartupTimeout)
	c.BrokerWait = cmp.Or(c.BrokerWait, d.BrokerWait)
	c.DeadLetterTopic = cmp.Or(c.DeadLetterTopic, d.DeadLetterTopic)
	c.DeadLetterInFlight = cmp.Or(c.DeadLetterInFlight, d.DeadLetterInFlight)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, d.WriteTimeout)
	c.RevokeTimeout = cmp.Or(c.RevokeTimeout, d.RevokeTimeout)
	return c
}

// Validate reports every invalid field. It changes nothing: zero fields
// are invalid here, New and NewDeadLetters fill them in first.
func (c Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("brokers: at least one is required"))
	}
	for _, b := range c.Brokers {
		if b == "" {
			errs = append(errs, errors.New("brokers: empty address"))
		}
	}
	if c.GroupID == "" {
		errs = append(errs, errors.New("group id: empty"))
	}
	if len(c.Topics) == 0 {
		errs = append(errs, errors.New("topics: none"))
	}
	if c.DeadLetterTopic == "" {
		errs = append(errs, errors.New("dead-letter topic: empty"))
	}
	seen := make(map[string]bool, len(c.Topics))
	for _, t := range c.Topics {
		switch {
		case t == "":
			errs = append(errs, errors.New("topics: empty name"))
		case seen[t]:
			errs = append(errs, fmt.Errorf("topics: %q listed twice", t))
		case t == c.DeadLetterTopic:
			errs = append(errs, fmt.Errorf("topics: %q is also the dead-letter topic", t))
		}
		seen[t] = true
	}
	if c.MinBytes < 1 {
		errs = append(errs, fmt.Errorf("min bytes %d: must be positive", c.MinBytes))
	}
	if c.MaxBytes < c.MinBytes {
		errs = append(errs, fmt.Errorf("max bytes %d: must be >= min bytes %d", c.MaxBytes, c.MinBytes))
	}
	if c.MaxWait <= 0 {
		errs = append(errs, fmt.Errorf("max wait %s: must be positive", c.MaxWait))
	}
	if c.QueueCapacity < 1 {
		errs = append(errs, fmt.Errorf("queue capacity %d: must be positive", c.QueueCapacity))
	}
	if c.StartupTimeout <= 0 {
		errs = append(errs, fmt.Errorf("startup timeout %s: must be positive", c.StartupTimeout))
	}
	if c.BrokerWait <= 0 {
		errs = append(errs, fmt.Errorf("broker wait %s: must be positive", c.BrokerWait))
	}
	if c.DeadLetterInFlight < 1 {
		errs = append(errs, fmt.Errorf("dead-letter in-flight %d: must be positive", c.DeadLetterInFlight))
	}
	if c.WriteTimeout <= 0 {
		errs = append(errs, fmt.Errorf("write timeout %s: must be positive", c.WriteTimeout))
	}
	if c.RevokeTimeout <= 0 || c.RevokeTimeout > rebalanceTimeout {
		errs = append(errs, fmt.Errorf("revoke timeout %s: must be positive and at most the rebalance timeout %s", c.RevokeTimeout, rebalanceTimeout))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kafkasrc config: %w", err)
	}
	return nil
}
