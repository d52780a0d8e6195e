package kafkasrc

import (
	"errors"
	"fmt"
	"time"

	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/knob"
)

// Config configures a Source and its DeadLetters. Its tags declare each
// setting once (internal/knob); New and NewDeadLetters also read a zero
// field as its default.
type Config struct {
	// Brokers are the bootstrap brokers, host:port (required).
	Brokers []string `name:"brokers" placeholder:"HOST:PORT" help:"Kafka bootstrap brokers. ${brokers_note}"`
	// GroupID: offsets are committed for this group only by
	// Source.Commit.
	GroupID string `name:"group" default:"skewlens" range:"[1,]" help:"Kafka consumer group; instances in one group split the partitions."`
	// Topics must exist (kafkaclient.EnsureTopics creates them).
	Topics []string `name:"topics" default:"flink-metrics,flink-key-samples" range:"[1,]" help:"Topics to consume (metrics and key samples, any format)."`
	// MinBytes is the least data a fetch waits for, up to MaxWait.
	MinBytes int `kong:"-" default:"65536" range:"[1,]"`
	// MaxBytes is the most data one fetch returns.
	MaxBytes int `kong:"-" default:"8388608" range:"[1,]"`
	// MaxWait is how long a fetch waits for MinBytes: the added latency
	// when the topics are quiet.
	MaxWait time.Duration `kong:"-" default:"250ms" range:"(0s,]"`
	// QueueCapacity bounds kafka-go's internal queue of fetched messages.
	// When it is full the fetchers block, so the broker keeps the rest:
	// the overflow policy is back-pressure, seen as consumer lag (metric
	// skewlens_kafka_consumer_lag) and queue length
	// (skewlens_kafka_reader_queue_length).
	QueueCapacity int `kong:"-" default:"1000" range:"[1,]"`
	// StartFromLatest makes a group without committed offsets start at the
	// end of each partition instead of the beginning (false: earliest, so
	// nothing already in the topic is skipped).
	StartFromLatest bool `kong:"-"`
	// StartupTimeout bounds New's check that the topics exist.
	StartupTimeout time.Duration `kong:"-" default:"30s" range:"(0s,]"`
	// BrokerWait bounds kafkaclient.WaitBrokers: how long a pipeline that
	// starts before its brokers waits for one of them to answer (about
	// what a broker takes to start after a reboot, with room).
	BrokerWait time.Duration `name:"broker-wait" default:"1m" range:"(0s,]" help:"How long to wait at start for one of --brokers to answer (brokers that start after skewlens)."`
	// DeadLetterTopic receives records that cannot be decoded. It must
	// exist.
	DeadLetterTopic string `name:"dead-letter-topic" default:"skewlens-dead-letters" range:"[1,]" help:"Where bad records go, with the reason in a header."`
	// DeadLetterInFlight bounds the dead letters being written at once.
	// Further Send calls wait for a slot (or their context): the overflow
	// policy is blocking, seen as skewlens_kafka_dead_letters_in_flight.
	DeadLetterInFlight int `kong:"-" default:"16" range:"[1,]"`
	// WriteTimeout bounds one dead-letter write attempt.
	WriteTimeout time.Duration `kong:"-" default:"10s" range:"(0s,]"`
	// RevokeTimeout bounds how long the member waits, when its partitions
	// are revoked (a rebalance), for the pipeline to stop writing what
	// depends on them before it rejoins the group: at most the group's
	// rebalance timeout, or the member would be dropped from the next
	// generation.
	RevokeTimeout time.Duration `kong:"-" default:"8s" range:"(0s,${rebalance_timeout}]"`
}

// KnobVars gives the range bounds the tags name.
func (Config) KnobVars() map[string]string {
	return map[string]string{"rebalance_timeout": rebalanceTimeout.String()}
}

// DefaultConfig returns the defaults the tags declare (Brokers, required,
// stays empty).
func DefaultConfig() Config { return knob.Defaults[Config]() }

// withDefaults returns c with every zero field (an empty Topics
// included) set to its default. New and NewDeadLetters apply it, so a
// zero field means its default.
func (c Config) withDefaults() Config {
	knob.FillZero(&c)
	return c
}

// ready is Validate and what New needs besides: the brokers (a command
// line checks its settings before it has them).
func (c Config) ready() error {
	if len(c.Brokers) == 0 {
		return errors.Join(c.Validate(), errors.New("kafkasrc config: brokers: at least one is required"))
	}
	return c.Validate()
}

// Validate reports every invalid field. It changes nothing: zero fields
// are invalid here, New and NewDeadLetters fill them in first.
func (c Config) Validate() error {
	errs := []error{knob.Check(c)}
	// A broker without a port would be dialled and retried for
	// BrokerWait before failing: refuse it now.
	for _, b := range c.Brokers {
		if err := kafkaclient.CheckBroker(b); err != nil {
			errs = append(errs, fmt.Errorf("brokers: %w", err))
		}
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
	if c.MaxBytes < c.MinBytes {
		errs = append(errs, fmt.Errorf("max bytes %d: must be >= min bytes %d", c.MaxBytes, c.MinBytes))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kafkasrc config: %w", err)
	}
	return nil
}
