package kafkasrc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/promreg"
	"github.com/skewlens/skewlens/pipeline/stream"
)

// ErrClosed is returned by the methods of a closed Source or DeadLetters.
var ErrClosed = errors.New("kafkasrc: closed")

// Source reads the configured topics as one consumer-group member. See
// the package documentation for its blocking and safety rules.
type Source struct {
	cfg   Config
	log   *slog.Logger
	m     *sourceMetrics
	unreg func()

	// The consumer group, joined on first use (start), and what its
	// goroutine (run) shares: the current generation, the bounded queue
	// of fetched records, and the rebalances for the runner (sent only
	// once it listens).
	startOnce sync.Once
	startErr  error
	group     *kafka.ConsumerGroup
	runCtx    context.Context
	runCancel context.CancelFunc
	runDone   chan struct{}
	current   atomic.Pointer[generation]
	msgs      chan fetched
	events    chan stream.Rebalance
	listening atomic.Bool

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error

	lagMu sync.Mutex
	lag   map[string]map[int]int64 // topic -> partition -> records behind

	// failures counts the reads that failed and were retried: the
	// readers' and the group's (stream.ReadFailures).
	failures atomic.Uint64
}

// ReadFailures counts the reads of records or of the group that failed
// and were retried (kafka-go's own retries that it reports as errors,
// and the readers' and the group's), but not the read timeouts of idle
// partitions: while it grows, the broker may be away, and silence is no
// sign that the jobs stopped (see stream.ReadFailures). It is safe for
// concurrent use.
func (s *Source) ReadFailures() uint64 { return s.failures.Load() }

// New checks that the topics exist (waiting up to cfg.StartupTimeout for
// them, or until ctx ends, so that a missing topic fails here instead of
// blocking Fetch forever) and returns a Source reading them. It joins the
// consumer group on the first Fetch; ctx bounds only New, not the
// Source's life (Close ends that). Its metrics are registered on reg
// (nil: not registered) until Close.
func New(ctx context.Context, cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Source, error) {
	cfg = cfg.withDefaults()
	if err := cfg.ready(); err != nil {
		return nil, err
	}
	if log == nil {
		return nil, errors.New("kafkasrc: nil logger")
	}
	log = log.With("component", "kafkasrc")
	ctx, cancel := context.WithTimeout(ctx, cfg.StartupTimeout)
	defer cancel()
	if err := checkTopics(ctx, cfg.Brokers, cfg.Topics); err != nil {
		return nil, fmt.Errorf("kafkasrc: topics %v on %v: %w", cfg.Topics, cfg.Brokers, err)
	}
	s := &Source{cfg: cfg, log: log, lag: make(map[string]map[int]int64, len(cfg.Topics)),
		runDone: make(chan struct{}), msgs: make(chan fetched, cfg.QueueCapacity), events: make(chan stream.Rebalance, 4)}
	s.runCtx, s.runCancel = context.WithCancel(context.Background())
	gc := s.groupConfig()
	if err := gc.Validate(); err != nil {
		s.runCancel()
		return nil, fmt.Errorf("kafkasrc: consumer group config: %w", err)
	}
	s.m = newSourceMetrics(cfg.Topics, s.msgs)
	unreg, err := promreg.Register(reg, "kafka source", s.m.collectors()...)
	if err != nil {
		s.runCancel()
		return nil, fmt.Errorf("kafkasrc: %w", err)
	}
	s.unreg = unreg
	log.Info("kafka source ready", "brokers", cfg.Brokers, "group", cfg.GroupID, "topics", cfg.Topics)
	return s, nil
}

// debugLogger returns kafka-go's logger at Debug level, or nil when Debug
// is off (kafka-go logs a lot).
func (s *Source) debugLogger() kafka.Logger {
	if !s.log.Enabled(context.Background(), slog.LevelDebug) {
		return nil
	}
	return kafka.LoggerFunc(func(msg string, args ...any) {
		s.log.Debug("kafka-go: " + fmt.Sprintf(msg, args...))
	})
}

// errorLogger returns the logger for what kafka-go calls errors. kafka-go
// retries all of them itself; most are worth a warning (a lost leader, a
// refused connection), but a read that timed out is what an idle
// partition looks like on some brokers (make run's embedded one logs a
// dozen of them a minute, on empty partitions and between bursts), and
// the reader reconnects and goes on from the same offset, so those go to
// Debug: a healthy run logs no warning. So does a cancelled context: a
// partition's reader is closed when its generation ends or the source
// stops, and kafka-go logs the end of its background reads then.
func (s *Source) errorLogger() kafka.Logger {
	return kafka.LoggerFunc(func(msg string, args ...any) {
		level := kafkaErrorLevel(args)
		if level > slog.LevelDebug || dialFailed(args) {
			s.failures.Add(1)
		}
		s.log.Log(context.Background(), level, "kafka-go: "+fmt.Sprintf(msg, args...))
	})
}

// kafkaErrorLevel is the level of a kafka-go error log line with these
// arguments: Debug when one of them is an error that is a timeout or a
// cancelled context, Warn otherwise. It looks at the error values, not at
// kafka-go's wording, which is not an API.
func kafkaErrorLevel(args []any) slog.Level {
	for _, a := range args {
		err, ok := a.(error)
		if !ok {
			continue
		}
		var te interface{ Timeout() bool }
		if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.Canceled) || (errors.As(err, &te) && te.Timeout()) {
			return slog.LevelDebug
		}
	}
	return slog.LevelWarn
}

// dialFailed reports whether one of a kafka-go error log line's arguments
// is a failed connection attempt: a timeout too when the broker is out
// of reach, but never what an idle partition gives.
func dialFailed(args []any) bool {
	for _, a := range args {
		var op *net.OpError
		if err, ok := a.(error); ok && errors.As(err, &op) && op.Op == "dial" {
			return true
		}
	}
	return false
}

// Fetch returns the next record of any of the topics, blocking until one
// arrives or ctx is done. It does not commit: call Commit once the record
// is processed. Transient errors (a broker restart, refused or broken
// connections, timeouts) are logged, counted and retried with exponential
// backoff (retry.Pipeline()) by the partitions' readers; others are returned.
// After Close, Fetch returns ErrClosed.
func (s *Source) Fetch(ctx context.Context) (kafka.Message, error) {
	m, _, err := s.fetch(ctx)
	return m, err
}

// rebalances starts the consumer group, if it has not started, and from
// now on sends its assignments and revocations on the channel it returns
// (see stream.GroupSource): the caller must read it.
func (s *Source) rebalances() <-chan stream.Rebalance {
	s.listening.Store(true)
	_ = s.start() // an error is Fetch's to return
	return s.events
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
// given wins) in the current generation of the consumer group and returns
// when the broker has stored them. Transient errors are retried with
// backoff until ctx is done. Once the generation has ended (a rebalance:
// the partitions may belong to another member now), Commit returns an
// error wrapping ErrGenerationEnded at once, and the records are read
// again by the partitions' next owner. After Close, Commit returns
// ErrClosed.
func (s *Source) Commit(ctx context.Context, msgs ...kafka.Message) error {
	return s.commit(ctx, 0, msgs)
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

// Close leaves the consumer group and stops the readers; records fetched
// but not committed are read again by the group's next member. Close
// unregisters the metrics. It is safe to call more than once and
// concurrently with Fetch and Commit, which then return ErrClosed.
func (s *Source) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.startOnce.Do(func() { close(s.runDone) }) // never started: nothing to stop
		s.runCancel()
		if s.group != nil {
			if err := s.group.Close(); err != nil {
				s.closeErr = fmt.Errorf("kafkasrc: close consumer group: %w", err)
			}
		}
		<-s.runDone
		s.unreg()
		s.log.Info("kafka source closed")
	})
	return s.closeErr
}
