package kafkaclient

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/skewlens/skewlens/internal/knob"
)

// WriterConfig is what differs between skewlens' producers. Every writer
// NewWriter builds waits for all in-sync replicas (RequireAll), never
// creates topics (EnsureTopics does), and makes one attempt per write
// (MaxAttempts 1): its caller retries with retry.Do and Classify, so a
// write's retries do not nest.
type WriterConfig struct {
	// Brokers are the bootstrap brokers (host:port). Required.
	Brokers []string
	// Topic is written to. Default "": each message names its topic.
	Topic string
	// Balancer picks a message's partition. Default &kafka.Hash{} (by
	// key, so one key's messages stay in order).
	Balancer kafka.Balancer
	// BatchSize and BatchBytes bound one batch. Defaults kafka-go's (100
	// messages, 1 MiB).
	BatchSize  int
	BatchBytes int64
	// BatchTimeout is how long a write waits for a batch to fill: the
	// writes here are synchronous, and kafka-go's 1 s would add a second
	// to each.
	BatchTimeout time.Duration `default:"5ms" range:"(0s,]"`
	// WriteTimeout bounds one write and the wait for its acknowledgement.
	WriteTimeout time.Duration `default:"10s" range:"(0s,]"`
	// Transport carries the requests. Default nil: kafka-go's shared
	// default transport.
	Transport *kafka.Transport
	// Log gets kafka-go's error log as warnings. Default nil: discarded.
	Log *slog.Logger
}

// NewWriter returns a writer configured by c. It does no I/O; close it
// when done.
func NewWriter(c WriterConfig) *kafka.Writer {
	balancer := c.Balancer
	if balancer == nil {
		balancer = &kafka.Hash{}
	}
	// A timeout that is not positive is its default.
	c.BatchTimeout, c.WriteTimeout = max(c.BatchTimeout, 0), max(c.WriteTimeout, 0)
	knob.FillZero(&c)
	batchTimeout, timeout := c.BatchTimeout, c.WriteTimeout
	w := &kafka.Writer{
		Addr:                   kafka.TCP(c.Brokers...),
		Topic:                  c.Topic,
		Balancer:               balancer,
		BatchSize:              c.BatchSize,
		BatchBytes:             c.BatchBytes,
		BatchTimeout:           batchTimeout,
		RequiredAcks:           kafka.RequireAll,
		MaxAttempts:            1,
		WriteTimeout:           timeout,
		ReadTimeout:            timeout,
		AllowAutoTopicCreation: false,
	}
	if c.Transport != nil {
		w.Transport = c.Transport
	}
	if log := c.Log; log != nil {
		w.ErrorLogger = kafka.LoggerFunc(func(msg string, args ...any) {
			log.Warn("kafka-go: " + fmt.Sprintf(msg, args...))
		})
	}
	return w
}
