package stream

import (
	"errors"
	"fmt"
	"time"
)

// Config configures a Runner.
type Config struct {
	// QueueCapacity bounds the messages fetched but not yet processed
	// (default 4096, handed over in batches of up to 256). When it is full
	// the fetcher waits: the overflow policy is back-pressure on Kafka,
	// never dropping.
	QueueCapacity int
	// FlushInterval is how often pending findings are written and offsets
	// committed (default 1s: about one insert per second per table).
	FlushInterval time.Duration
	// MaxPending writes findings at once when this many are pending
	// (default 50000), bounding memory while ClickHouse is slow: at most
	// three such batches exist, one being written, one waiting for the
	// writer, and the one the actor collects.
	MaxPending int
	// Partitions lists the partitions of the consumed topics
	// (kafkasrc.Backlog). Each holds the watermark back from the start
	// until it delivers a message, or for the stage's
	// WatermarkConfig.StartupGrace (of deliveries by others) if it does
	// not: it is empty, or another instance of the group reads it. Without
	// it, the partition whose reader starts first would move the watermark
	// past the records of the others, which kafka-go starts reading a
	// moment later, and make them late.
	Partitions []Partition
	// Backlog lists the partitions that hold unread records at startup
	// (kafkasrc.Backlog too). They hold the watermark for up to the
	// WatermarkConfig.IdleTimeout instead: a restart after a crash drains
	// them partition by partition.
	Backlog []Partition
	// Group names the consumer group whose engine state is saved (with a
	// StateStore; default "skewlens").
	Group string
	// FinalFlushTimeout bounds the last write and commit when Run ends
	// (default 30s): with the sink away, what is not written then is read
	// again after a restart.
	FinalFlushTimeout time.Duration
}

// Validate fills defaults and checks values.
func (c *Config) Validate() error {
	if c.QueueCapacity == 0 {
		c.QueueCapacity = 4096
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = time.Second
	}
	if c.MaxPending == 0 {
		c.MaxPending = 50000
	}
	if c.Group == "" {
		c.Group = "skewlens"
	}
	if c.FinalFlushTimeout == 0 {
		c.FinalFlushTimeout = 30 * time.Second
	}
	var errs []error
	if c.QueueCapacity < 1 {
		errs = append(errs, fmt.Errorf("queue capacity %d: must be positive", c.QueueCapacity))
	}
	if c.FlushInterval < 0 {
		errs = append(errs, fmt.Errorf("flush interval %s: must not be negative", c.FlushInterval))
	}
	if c.MaxPending < 1 {
		errs = append(errs, fmt.Errorf("max pending %d: must be positive", c.MaxPending))
	}
	return errors.Join(errs...)
}
