package stream

import (
	"errors"
	"time"

	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/internal/retry"
)

// Config configures a Runner.
type Config struct {
	// QueueCapacity bounds the messages fetched but not yet processed
	// (handed over in batches of up to 256). When it is full the fetcher
	// waits: the overflow policy is back-pressure on Kafka, never
	// dropping.
	QueueCapacity int `default:"4096" range:"[1,]"`
	// FlushInterval is how often pending findings are written and offsets
	// committed: about one insert per second per table.
	FlushInterval time.Duration `default:"1s" range:"(0s,]"`
	// MaxPending writes findings at once when this many are pending,
	// bounding memory while ClickHouse is slow: at most three such batches
	// exist, one being written, one waiting for the writer, and the one
	// the actor collects.
	MaxPending int `default:"50000" range:"[1,]"`
	// Partitions lists the partitions of the consumed topics
	// (kafkasrc.Backlog). Each holds the watermark back from the start
	// until it delivers a message, or for the feeder's
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
	// StateStore).
	Group string `default:"skewlens" range:"[1,]"`
	// DrainTimeout bounds the drain when Run is asked to end (Stop, or its
	// context ending): from that moment, the writer has this long to
	// write the findings of the windows that closed, save the engine state
	// and commit the offsets they free, retrying failed writes meanwhile.
	// The caller's cancellation does not cut it short. With the sink away
	// for longer, what is not written is logged, its offsets are not
	// committed, and a restart reads it again.
	DrainTimeout time.Duration `default:"10s" range:"(0s,]"`
	// RevokeTimeout bounds how long a revocation of the consumer group's
	// partitions (GroupSource) waits for the writer to finish the jobs
	// handed to it before (below the group's rebalance timeout, so the
	// instance rejoins in time); then they are abandoned and their offsets
	// stay uncommitted.
	RevokeTimeout time.Duration `default:"5s" range:"(0s,]"`
	// Afresh makes the first assignment of a GroupSource load no saved
	// state (the engine's, and the sink's with a Resumer): the embedded
	// broker starts empty, and what an earlier run saved belongs to
	// records that are gone. Later assignments load what is saved.
	Afresh bool
	// Retry spaces the attempts of a write to the sink, without a bound on
	// the attempts: a write is retried until it succeeds, fails
	// permanently, or the drain's DrainTimeout runs out. The wait is short
	// because consumption is paused meanwhile: once the sink is back, the
	// pipeline resumes within MaxBackoff.
	Retry retry.Policy `default:"pipeline"`
}

// DefaultConfig returns the defaults the tags declare (no partitions or
// backlog: those come from Kafka).
func DefaultConfig() Config { return knob.Defaults[Config]() }

// withDefaults returns c with every zero field set to its default: New
// applies it, as the Config literals of callers rely on.
func (c Config) withDefaults() Config {
	knob.FillZero(&c)
	c.Retry = c.Retry.OrDefault(DefaultConfig().Retry)
	return c
}

// Validate reports every invalid field. It changes nothing; a zero
// duration stands for its default.
func (c Config) Validate() error {
	return errors.Join(c.Retry.Validate(), knob.CheckFilled(c))
}
