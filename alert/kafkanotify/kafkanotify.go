package kafkanotify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/alert"
)

// Name is the notifier's name in errors and the default Target name.
const Name = "kafka"

// StatusHeader is the message header with the alert's status.
const StatusHeader = "skewlens-alert-status"

// Config configures a Notifier. The zero value of every field except
// Brokers means its default, given in the field's comment; Validate (New
// calls it) fills them in.
type Config struct {
	// Brokers are the bootstrap brokers (host:port). Required.
	Brokers []string
	// Topic receives the alerts. Default "skewlens-alerts".
	Topic string
	// Partitions and ReplicationFactor are what EnsureTopic creates the
	// topic with. Defaults 1 and the broker's default.
	Partitions        int
	ReplicationFactor int
	// WriteTimeout bounds one write attempt. Default 10s.
	WriteTimeout time.Duration
	// DialTimeout bounds connecting to a broker. Default 5s.
	DialTimeout time.Duration
	// Retry bounds the retries of one Notify call (alert.RetryPolicy
	// defaults: 5 retries, 100ms to 5s).
	Retry alert.RetryPolicy
}

// Defaults.
const (
	DefaultTopic        = "skewlens-alerts"
	DefaultWriteTimeout = 10 * time.Second
	DefaultDialTimeout  = 5 * time.Second
)

// Validate fills in the defaults of c and reports every invalid field.
func (c *Config) Validate() error {
	if c.Topic == "" {
		c.Topic = DefaultTopic
	}
	if c.Partitions == 0 {
		c.Partitions = 1
	}
	if c.ReplicationFactor == 0 {
		c.ReplicationFactor = -1
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("brokers: none"))
	}
	for _, b := range c.Brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			errs = append(errs, fmt.Errorf("broker %q: %w", b, err))
		}
	}
	if c.Partitions < 0 {
		errs = append(errs, fmt.Errorf("partitions %d: must be positive", c.Partitions))
	}
	if c.WriteTimeout < 0 || c.DialTimeout < 0 {
		errs = append(errs, fmt.Errorf("timeouts %s, %s: must be positive", c.WriteTimeout, c.DialTimeout))
	}
	if err := c.Retry.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kafka alert notifier config: %w", err)
	}
	return nil
}

// Notifier writes alerts to a Kafka topic.
type Notifier struct {
	cfg     Config
	w       *kafka.Writer
	tr      *kafka.Transport
	log     *slog.Logger
	retries prometheus.Counter

	closeOnce sync.Once
	closeErr  error
}

// New returns a Notifier. It does no I/O; call EnsureTopic before the
// first Notify.
func New(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Notifier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tr := &kafka.Transport{DialTimeout: cfg.DialTimeout, MetadataTTL: 10 * time.Second}
	n := &Notifier{
		cfg: cfg,
		tr:  tr,
		w: &kafka.Writer{
			Addr:         kafka.TCP(cfg.Brokers...),
			Topic:        cfg.Topic,
			Balancer:     &kafka.Hash{}, // by key: one alert's messages stay in order
			RequiredAcks: kafka.RequireAll,
			// Retries are ours, with our error classification.
			MaxAttempts:  1,
			BatchTimeout: 5 * time.Millisecond,
			WriteTimeout: cfg.WriteTimeout,
			Transport:    tr,
		},
		log: log,
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skewlens_alert_kafka_retries_total",
			Help: "Alert writes to Kafka retried after a retryable failure.",
		}),
	}
	if reg != nil {
		if err := reg.Register(n.retries); err != nil {
			return nil, fmt.Errorf("register kafka alert notifier metrics: %w", err)
		}
	}
	return n, nil
}

// EnsureTopic creates the topic when it does not exist (an existing one is
// left as it is) and waits until every partition has a leader, retrying
// transient errors until ctx ends.
func (n *Notifier) EnsureTopic(ctx context.Context, entries ...kafka.ConfigEntry) error {
	cl := &kafka.Client{Addr: kafka.TCP(n.cfg.Brokers...), Timeout: n.cfg.WriteTimeout, Transport: n.tr}
	topic := kafka.TopicConfig{Topic: n.cfg.Topic, NumPartitions: n.cfg.Partitions, ReplicationFactor: n.cfg.ReplicationFactor, ConfigEntries: entries}
	policy := n.cfg.Retry
	policy.MaxRetries = 1 << 20 // until ctx ends: a broker may still be starting
	err := alert.Retry(ctx, policy, nil, func(ctx context.Context) error {
		res, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{topic}})
		if err != nil {
			return n.classify("create topic", err)
		}
		if err := res.Errors[topic.Topic]; err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
			return n.classify("create topic", err)
		}
		md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic.Topic}})
		if err != nil {
			return n.classify("metadata", err)
		}
		for _, t := range md.Topics {
			if t.Error != nil {
				return n.classify("metadata", t.Error)
			}
			if len(t.Partitions) == 0 {
				return n.classify("metadata", errors.New("no partitions yet"))
			}
			for _, p := range t.Partitions {
				if p.Error != nil || p.Leader.Host == "" {
					return n.classify("metadata", fmt.Errorf("partition %d has no leader yet", p.ID))
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("kafka alert notifier: ensure topic %s: %w", n.cfg.Topic, err)
	}
	return nil
}

// Message returns the Kafka message of an alert.
func Message(a *alert.Alert) (kafka.Message, error) {
	v, err := json.Marshal(a)
	if err != nil {
		return kafka.Message{}, err
	}
	return kafka.Message{
		Key:     []byte(a.ID),
		Value:   v,
		Headers: []kafka.Header{{Key: StatusHeader, Value: []byte(a.Status)}},
	}, nil
}

// Notify writes one message per alert, in order.
func (n *Notifier) Notify(ctx context.Context, alerts []alert.Alert) error {
	msgs := make([]kafka.Message, 0, len(alerts))
	for i := range alerts {
		m, err := Message(&alerts[i])
		if err != nil {
			return &alert.NotifyError{Notifier: Name, Op: "encode " + alerts[i].ID, Permanent: true, Err: err}
		}
		msgs = append(msgs, m)
	}
	err := alert.Retry(ctx, n.cfg.Retry, func(attempt int, wait time.Duration, err error) {
		n.retries.Inc()
		n.log.Warn("kafka alert notifier: retrying", "topic", n.cfg.Topic, "attempt", attempt, "in", wait, "err", err)
	}, func(ctx context.Context) error {
		err := n.w.WriteMessages(ctx, msgs...)
		if err == nil {
			return nil
		}
		// Write what failed again, not what the broker already has.
		var werrs kafka.WriteErrors
		if errors.As(err, &werrs) && len(werrs) == len(msgs) {
			var left []kafka.Message
			for i, e := range werrs {
				if e != nil {
					left = append(left, msgs[i])
				}
			}
			msgs = left
		}
		return n.classify("write to "+n.cfg.Topic, err)
	})
	if err != nil {
		return fmt.Errorf("kafka alert notifier: %d alerts: %w", len(alerts), err)
	}
	return nil
}

// Close flushes and closes the writer. Safe to call twice.
func (n *Notifier) Close() error {
	n.closeOnce.Do(func() {
		n.closeErr = n.w.Close()
		n.tr.CloseIdleConnections()
	})
	return n.closeErr
}

// classify wraps err in an *alert.NotifyError, permanent when a retry
// cannot fix it.
func (n *Notifier) classify(op string, err error) error {
	return &alert.NotifyError{Notifier: Name, Op: op, Permanent: permanent(err), Err: err}
}

// permanent reports whether a Kafka error is one a retry cannot fix: a
// broker error code that is not temporary (message too large, not
// authorised, invalid topic or record) or a message too large for the
// writer. Connection errors, EOFs (the first request after a broker
// restart), timeouts, temporary codes (leader changes, unknown topic while
// it is created) and unknown errors are retryable; the retries are
// bounded.
func permanent(err error) bool {
	var tooLarge kafka.MessageTooLargeError
	if errors.As(err, &tooLarge) {
		return true
	}
	var werrs kafka.WriteErrors
	if errors.As(err, &werrs) {
		for _, e := range werrs {
			if e != nil && permanent(e) {
				return true
			}
		}
		return false
	}
	var kerr kafka.Error
	if errors.As(err, &kerr) {
		return !kerr.Temporary() && kerr != kafka.RequestTimedOut && kerr != kafka.NetworkException
	}
	// Network errors, EOFs, timeouts and anything unknown: a transient
	// failure wrongly called fatal would lose alerts, a fatal one wrongly
	// retried only costs the bounded retries.
	return false
}
