package kafkasrc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/promreg"
	"github.com/skewlens/skewlens/internal/retry"
)

// Dead-letter header names.
const (
	HeaderReason          = "skewlens-reason"
	HeaderError           = "skewlens-error"
	HeaderSourceTopic     = "skewlens-source-topic"
	HeaderSourcePartition = "skewlens-source-partition"
	HeaderSourceOffset    = "skewlens-source-offset"
)

// maxReasonLen bounds a reason, which is a metric label value.
const maxReasonLen = 64

// DeadLetters writes records that could not be processed to the
// dead-letter topic. See the package documentation for its blocking and
// safety rules.
type DeadLetters struct {
	cfg   Config
	log   *slog.Logger
	w     *kafka.Writer
	tr    *kafka.Transport
	slots chan struct{}
	m     *deadLetterMetrics
	unreg func()
	sent  *deadLetterLog

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// NewDeadLetters returns a DeadLetters writing to cfg.DeadLetterTopic on
// cfg.Brokers. The topic must exist (kafkaclient.EnsureTopics); it is
// not created here. Its metrics are registered on reg (nil: not registered) until
// Close.
func NewDeadLetters(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*DeadLetters, error) {
	cfg = cfg.withDefaults()
	if err := cfg.ready(); err != nil {
		return nil, err
	}
	if log == nil {
		return nil, errors.New("kafkasrc: nil logger")
	}
	log = log.With("component", "kafkasrc.deadletters")
	tr := &kafka.Transport{DialTimeout: 5 * time.Second, MetadataTTL: 2 * time.Second}
	// One record per request: Send is synchronous and must not wait for
	// a batch to fill.
	w := kafkaclient.NewWriter(kafkaclient.WriterConfig{
		Brokers:      cfg.Brokers,
		Topic:        cfg.DeadLetterTopic,
		BatchSize:    1,
		BatchTimeout: time.Millisecond,
		WriteTimeout: cfg.WriteTimeout,
		Transport:    tr,
		Log:          log,
	})
	m := newDeadLetterMetrics()
	unreg, err := promreg.Register(reg, "dead-letter writer", m.collectors()...)
	if err != nil {
		return nil, fmt.Errorf("kafkasrc: dead letters: %w", err)
	}
	return &DeadLetters{cfg: cfg, log: log, w: w, tr: tr, slots: make(chan struct{}, cfg.DeadLetterInFlight), m: m, unreg: unreg,
		sent: newDeadLetterLog(log, cfg.DeadLetterTopic)}, nil
}

// validReason reports whether r is a stable snake_case name: [a-z] then
// [a-z0-9_], at most 64 bytes (decode.Reason.String() always is).
func validReason(r string) bool {
	if r == "" || len(r) > maxReasonLen || r[0] < 'a' || r[0] > 'z' {
		return false
	}
	for i := 0; i < len(r); i++ {
		c := r[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Send writes msg's key, value, time and headers to the dead-letter topic,
// adding the headers skewlens-reason (reason, a stable snake_case name
// such as decode.Reason.String() gives; it is also the metric label, so
// it must come from a small fixed set), skewlens-error (detail),
// skewlens-source-topic, -partition and -offset. It returns once all
// in-sync replicas have the record (RequiredAcks all), retrying transient
// errors with backoff until ctx is done; a retry after a lost
// acknowledgement can write the record twice. At most DeadLetterInFlight
// Sends write at once; the others wait for a slot or ctx. After Close,
// Send returns ErrClosed. The log says what was dead-lettered, per source
// topic and reason at most every 30 s with a count (deadLetterLog).
func (d *DeadLetters) Send(ctx context.Context, msg kafka.Message, reason, detail string) error {
	if !validReason(reason) {
		return fmt.Errorf("kafkasrc: dead letter: reason %q is not a snake_case name of at most %d bytes", reason, maxReasonLen)
	}
	if d.closed.Load() {
		return ErrClosed
	}
	select {
	case d.slots <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("kafkasrc: dead letter %s: waiting for a slot: %w", reason, ctx.Err())
	}
	d.m.inFlight.Inc()
	defer func() {
		<-d.slots
		d.m.inFlight.Dec()
	}()

	out := kafka.Message{
		Key:     msg.Key,
		Value:   msg.Value,
		Time:    msg.Time,
		Headers: make([]kafka.Header, 0, len(msg.Headers)+5),
	}
	out.Headers = append(out.Headers, msg.Headers...)
	out.Headers = append(out.Headers,
		kafka.Header{Key: HeaderReason, Value: []byte(reason)},
		kafka.Header{Key: HeaderError, Value: []byte(detail)},
		kafka.Header{Key: HeaderSourceTopic, Value: []byte(msg.Topic)},
		kafka.Header{Key: HeaderSourcePartition, Value: strconv.AppendInt(nil, int64(msg.Partition), 10)},
		kafka.Header{Key: HeaderSourceOffset, Value: strconv.AppendInt(nil, msg.Offset, 10)},
	)

	err := retry.DoWatched(ctx, retry.Pipeline(), retry.Watch{Log: d.log, Op: "dead-letter write", Notify: func(_ int, wait time.Duration, err error) {
		d.m.retries.Inc()
		d.log.Warn("dead-letter write failed; retrying", "err", err, "backoff", wait)
	}}, func(ctx context.Context) error {
		if d.closed.Load() {
			return retry.Permanent("", ErrClosed)
		}
		return kafkaclient.Classify("write", d.w.WriteMessages(ctx, out))
	})
	if errors.Is(err, ErrClosed) {
		return ErrClosed
	}
	if err != nil {
		d.m.failed.WithLabelValues(reason).Inc()
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("kafkasrc: dead letter %s from %s/%d@%d to %s: %w",
			reason, msg.Topic, msg.Partition, msg.Offset, d.cfg.DeadLetterTopic, err)
	}
	d.m.sent.WithLabelValues(reason).Inc()
	d.sent.sent(msg.Topic, msg.Partition, msg.Offset, reason, detail)
	return nil
}

// Close flushes and closes the writer and unregisters the metrics. Sends
// still running may fail with ErrClosed or a closed-writer error. Close is
// safe to call more than once.
func (d *DeadLetters) Close() error {
	d.closeOnce.Do(func() {
		d.closed.Store(true)
		d.sent.flush()
		if err := d.w.Close(); err != nil {
			d.closeErr = fmt.Errorf("kafkasrc: close dead-letter writer: %w", err)
		}
		d.tr.CloseIdleConnections()
		d.unreg()
	})
	return d.closeErr
}
