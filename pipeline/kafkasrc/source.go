package kafkasrc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/pipeline/kafkaclient"
	"github.com/skewlens/skewlens/pipeline/promreg"
	"github.com/skewlens/skewlens/pipeline/retry"
)

// ErrClosed is returned by the methods of a closed Source or DeadLetters.
var ErrClosed = errors.New("kafkasrc: closed")

// Source reads the configured topics as one consumer-group member. See
// the package documentation for its blocking and safety rules.
type Source struct {
	cfg    Config
	log    *slog.Logger
	reader *kafka.Reader
	m      *sourceMetrics
	unreg  func()

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	lagMu sync.Mutex
	lag   map[string]map[int]int64 // topic -> partition -> records behind
}

// New checks that the topics exist (waiting up to cfg.StartupTimeout for
// them, so that a missing topic fails here instead of blocking Fetch
// forever) and returns a Source reading them. Its metrics are registered
// on reg (nil: not registered) until Close.
func New(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Source, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		return nil, errors.New("kafkasrc: nil logger")
	}
	log = log.With("component", "kafkasrc")
	ctx, cancel := context.WithTimeout(context.Background(), cfg.StartupTimeout)
	defer cancel()
	if err := checkTopics(ctx, cfg.Brokers, cfg.Topics); err != nil {
		return nil, fmt.Errorf("kafkasrc: topics %v on %v: %w", cfg.Topics, cfg.Brokers, err)
	}

	start := kafka.FirstOffset
	if cfg.StartFromLatest {
		start = kafka.LastOffset
	}
	rc := kafka.ReaderConfig{
		Brokers:     cfg.Brokers,
		GroupID:     cfg.GroupID,
		GroupTopics: cfg.Topics,
		MinBytes:    cfg.MinBytes,
		MaxBytes:    cfg.MaxBytes,
		MaxWait:     cfg.MaxWait,
		// Below MaxWait kafka-go would cut fetches short; above it a dead
		// connection is noticed late. MaxWait + 10 s is kafka-go's own rule.
		ReadBatchTimeout: cfg.MaxWait + 10*time.Second,
		QueueCapacity:    cfg.QueueCapacity,
		// Range assignment gives partition i of every topic to the same
		// member when the topics have equal partition counts. Producers key
		// by job_id, so a job's metrics and key samples (two topics) meet on
		// one instance, which the diagnosis needs. Round-robin would split
		// them.
		GroupBalancers:    []kafka.GroupBalancer{kafka.RangeGroupBalancer{}},
		CommitInterval:    0, // synchronous: Commit returns when the broker has the offsets
		StartOffset:       start,
		HeartbeatInterval: time.Second,
		SessionTimeout:    10 * time.Second,
		RebalanceTimeout:  10 * time.Second,
		JoinGroupBackoff:  time.Second,
		ReadBackoffMin:    100 * time.Millisecond,
		ReadBackoffMax:    time.Second,
		MaxAttempts:       3,
		ErrorLogger:       errorLogger(log),
	}
	if log.Enabled(context.Background(), slog.LevelDebug) {
		rc.Logger = kafka.LoggerFunc(func(msg string, args ...any) {
			log.Debug("kafka-go: " + fmt.Sprintf(msg, args...))
		})
	}
	if err := rc.Validate(); err != nil {
		return nil, fmt.Errorf("kafkasrc: reader config: %w", err)
	}
	r := kafka.NewReader(rc)
	m := newSourceMetrics(cfg.Topics, r)
	unreg, err := promreg.Register(reg, "kafka source", m.collectors()...)
	if err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("kafkasrc: %w", err)
	}
	s := &Source{cfg: cfg, log: log, reader: r, m: m, unreg: unreg, lag: make(map[string]map[int]int64, len(cfg.Topics))}
	log.Info("kafka source ready", "brokers", cfg.Brokers, "group", cfg.GroupID, "topics", cfg.Topics)
	return s, nil
}

// errorLogger returns the logger for what kafka-go calls errors. kafka-go
// retries all of them itself; most are worth a warning (a lost leader, a
// refused connection), but a read that timed out is what an idle
// partition looks like on some brokers (make run's embedded one logs a
// dozen of them a minute, on empty partitions and between bursts), and
// the reader reconnects and goes on from the same offset, so those go to
// Debug: a healthy run logs no warning.
func errorLogger(log *slog.Logger) kafka.Logger {
	return kafka.LoggerFunc(func(msg string, args ...any) {
		log.Log(context.Background(), kafkaErrorLevel(args), "kafka-go: "+fmt.Sprintf(msg, args...))
	})
}

// kafkaErrorLevel is the level of a kafka-go error log line with these
// arguments: Debug when one of them is an error that is a timeout, Warn
// otherwise. It looks at the error values, not at kafka-go's wording,
// which is not an API.
func kafkaErrorLevel(args []any) slog.Level {
	for _, a := range args {
		err, ok := a.(error)
		if !ok {
			continue
		}
		var te interface{ Timeout() bool }
		if errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &te) && te.Timeout()) {
			return slog.LevelDebug
		}
	}
	return slog.LevelWarn
}

// Fetch returns the next record of any of the topics, blocking until one
// arrives or ctx is done. It does not commit: call Commit once the record
// is processed. Transient errors (a broker restart, refused or broken
// connections, timeouts) are logged, counted and retried with exponential
// backoff capped at 5 s until ctx is done; other errors are returned.
// After Close, Fetch returns ErrClosed.
func (s *Source) Fetch(ctx context.Context) (kafka.Message, error) {
	var msg kafka.Message
	err := retry.Do(ctx, retryPolicy(), func(_ int, wait time.Duration, err error) {
		s.m.fetchErrors.WithLabelValues("transient").Inc()
		s.log.Warn("kafka fetch failed; retrying", "err", err, "backoff", wait)
	}, func(ctx context.Context) error {
		if s.closed.Load() {
			return retry.Permanent("", ErrClosed)
		}
		var err error
		msg, err = s.reader.FetchMessage(ctx)
		switch {
		case err == nil, ctx.Err() != nil:
			return err
		case errors.Is(err, io.EOF): // kafka-go's word for "reader closed"
			return retry.Permanent("", ErrClosed)
		}
		return kafkaclient.Classify(fmt.Sprintf("fetch from %v", s.cfg.Topics), err)
	})
	switch {
	case err == nil:
		s.observe(&msg)
		return msg, nil
	case errors.Is(err, ErrClosed):
		return kafka.Message{}, ErrClosed
	case ctx.Err() != nil:
		return kafka.Message{}, fmt.Errorf("kafkasrc: fetch: %w", ctx.Err())
	}
	s.m.fetchErrors.WithLabelValues("fatal").Inc()
	return kafka.Message{}, fmt.Errorf("kafkasrc: %w", err)
}

// observe counts msg and updates its topic's lag.
func (s *Source) observe(msg *kafka.Message) {
	if c := s.m.consumedBy[msg.Topic]; c != nil {
		c.Inc()
	}
	lag := max(msg.HighWaterMark-msg.Offset-1, 0)
	s.lagMu.Lock()
	parts := s.lag[msg.Topic]
	if parts == nil {
		parts = make(map[int]int64)
		s.lag[msg.Topic] = parts
	}
	parts[msg.Partition] = lag
	var sum int64
	for _, l := range parts {
		sum += l
	}
	s.lagMu.Unlock()
	if g := s.m.lagBy[msg.Topic]; g != nil {
		g.Set(float64(sum))
	}
}

// Commit commits the offsets after msgs (per partition, the highest one
// given wins) and returns when the broker has stored them. Transient
// errors, including a rebalance or a broker restart in between, are
// retried with backoff until ctx is done. A commit retried after a
// rebalance may store an offset for a partition that another member now
// reads; Kafka's at-least-once semantics make that a possible duplicate,
// never a loss. After Close, Commit returns ErrClosed.
func (s *Source) Commit(ctx context.Context, msgs ...kafka.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	if s.closed.Load() {
		return ErrClosed
	}
	start := time.Now()
	err := retry.Do(ctx, retryPolicy(), func(_ int, wait time.Duration, err error) {
		s.m.commitRetries.Inc()
		s.log.Warn("kafka commit failed; retrying", "err", err, "backoff", wait)
	}, func(ctx context.Context) error {
		err := s.reader.CommitMessages(ctx, msgs...)
		if errors.Is(err, io.ErrClosedPipe) || err != nil && s.closed.Load() { // reader closed meanwhile
			return retry.Permanent("", ErrClosed)
		}
		return kafkaclient.Classify("commit", err)
	})
	s.m.commitLatency.Observe(time.Since(start).Seconds())
	if err == nil {
		s.m.commits.WithLabelValues("ok").Inc()
		return nil
	}
	s.m.commits.WithLabelValues("error").Inc()
	switch {
	case errors.Is(err, ErrClosed):
		err = ErrClosed
	case ctx.Err() != nil:
		err = ctx.Err()
	}
	return fmt.Errorf("kafkasrc: commit %d records: %w", len(msgs), err)
}

// Ready is a readiness check (ops.Check): it asks the brokers for the
// topics' metadata.
func (s *Source) Ready(ctx context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	tr := &kafka.Transport{DialTimeout: 2 * time.Second}
	defer tr.CloseIdleConnections()
	if err := kafkaclient.TopicsReady(ctx, kafkaclient.AdminConfig{Brokers: s.cfg.Brokers, Transport: tr}, s.cfg.Topics...); err != nil {
		return fmt.Errorf("kafkasrc: %w", err)
	}
	return nil
}

// Close leaves the consumer group and stops the fetchers; records fetched
// but not committed are read again by the group's next member. Close
// unregisters the metrics. It is safe to call more than once and
// concurrently with Fetch and Commit, which then return ErrClosed.
func (s *Source) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if err := s.reader.Close(); err != nil {
			s.closeErr = fmt.Errorf("kafkasrc: close reader: %w", err)
		}
		s.unreg()
		s.log.Info("kafka source closed")
	})
	return s.closeErr
}
