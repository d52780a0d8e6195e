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

	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/internal/promreg"
	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/sinks/alertdeliver"
	"github.com/skewlens/skewlens/skew/alert"
)

// Name is the notifier's name in errors and the default Target name.
const Name = "kafka"

// StatusHeader is the message header with the alert's status.
const StatusHeader = "skewlens-alert-status"

// Config configures a Notifier. Its tags declare each setting once
// (internal/knob), and the command line can bind Topic as a flag. New
// also reads a zero field as its default.
type Config struct {
	// Brokers are the bootstrap brokers (host:port). Required.
	Brokers []string `kong:"-"`
	// Topic receives the alerts. Empty: DefaultConfig's. Its flag has no
	// default: a run publishes alerts to Kafka only when given a topic.
	Topic string `name:"alerts-topic" group:"Alerts" placeholder:"TOPIC" help:"Publish alerts to this Kafka topic (created if missing), e.g. skewlens-alerts."`
	// Partitions is what EnsureTopic creates the topic with.
	Partitions int `kong:"-" default:"1" range:"[1,]"`
	// ReplicationFactor is what EnsureTopic creates the topic with; -1 is
	// the broker's default.replication.factor.
	ReplicationFactor int `kong:"-" default:"-1" zero:"default" range:"[-1,32767]"`
	// WriteTimeout bounds one write attempt.
	WriteTimeout time.Duration `kong:"-" default:"10s" range:"(0s,]"`
	// DialTimeout bounds connecting to a broker.
	DialTimeout time.Duration `kong:"-" default:"5s" range:"(0s,]"`
}

// defaultTopic is the library's Topic when none is given; the flag that
// binds Topic defaults to none, which is why this is not a tag.
const defaultTopic = "skewlens-alerts"

// DefaultConfig returns the defaults the tags declare and defaultTopic
// (Brokers, required, stay empty). Callers start from it and override
// what they configure.
func DefaultConfig() Config {
	c := knob.Defaults[Config]()
	c.Topic = defaultTopic
	return c
}

// withDefaults returns c with every zero field set to its default. New
// applies it, so a zero field means its default.
func (c Config) withDefaults() Config {
	knob.FillZero(&c)
	if c.Topic == "" {
		c.Topic = defaultTopic
	}
	return c
}

// Validate reports every invalid field. It changes nothing: zero fields
// are invalid here, New fills them in first.
func (c Config) Validate() error {
	errs := []error{knob.Check(c)}
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("brokers: none"))
	}
	for _, b := range c.Brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			errs = append(errs, fmt.Errorf("broker %q: %w", b, err))
		}
	}
	if c.Topic == "" {
		errs = append(errs, errors.New("topic: empty"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kafka alert notifier config: %w", err)
	}
	return nil
}

// Notifier writes alerts to a Kafka topic.
type Notifier struct {
	cfg Config
	w   *kafka.Writer
	tr  *kafka.Transport
	log *slog.Logger
	m   *metrics

	closeOnce sync.Once
	closeErr  error
}

// New returns a Notifier and registers its metrics with reg (nil: none).
// It does no I/O; call EnsureTopic before the first Notify. log (nil:
// discarded) gets EnsureTopic's retries.
func New(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Notifier, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	tr := &kafka.Transport{DialTimeout: cfg.DialTimeout, MetadataTTL: 10 * time.Second}
	w := kafkaclient.NewWriter(kafkaclient.WriterConfig{
		Brokers:      cfg.Brokers,
		Topic:        cfg.Topic,
		WriteTimeout: cfg.WriteTimeout,
		Transport:    tr,
	})
	return &Notifier{cfg: cfg, w: w, tr: tr, log: log, m: m}, nil
}

// EnsureTopic creates the topic when it does not exist (an existing one is
// left as it is) and waits until every partition has a leader, retrying
// transient errors until ctx ends.
func (n *Notifier) EnsureTopic(ctx context.Context, entries ...kafka.ConfigEntry) error {
	topic := kafka.TopicConfig{Topic: n.cfg.Topic, NumPartitions: n.cfg.Partitions, ReplicationFactor: n.cfg.ReplicationFactor, ConfigEntries: entries}
	_, err := kafkaclient.EnsureTopics(ctx, kafkaclient.AdminConfig{
		Brokers: n.cfg.Brokers, Transport: n.tr, Timeout: n.cfg.WriteTimeout, Log: n.log,
	}, topic)
	if err != nil {
		return fmt.Errorf("kafka alert notifier: %w", err)
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

// Notify writes one message per alert, in order, in one attempt: it does
// not retry (the Fanout does, and a retry writes every message again).
func (n *Notifier) Notify(ctx context.Context, alerts []alert.Alert) error {
	msgs := make([]kafka.Message, 0, len(alerts))
	for i := range alerts {
		m, err := Message(&alerts[i])
		if err != nil {
			return retry.Permanent("", &alertdeliver.NotifyError{Notifier: Name, Op: "encode " + alerts[i].ID, Err: err})
		}
		msgs = append(msgs, m)
	}
	if err := n.w.WriteMessages(ctx, msgs...); err != nil {
		n.m.writes.WithLabelValues("error").Inc()
		err = kafkaclient.Classify("", &alertdeliver.NotifyError{Notifier: Name, Op: "write to " + n.cfg.Topic, Err: err})
		return fmt.Errorf("kafka alert notifier: %d alerts: %w", len(alerts), err)
	}
	n.m.writes.WithLabelValues("ok").Inc()
	n.m.messages.Add(float64(len(msgs)))
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

// metrics are a Notifier's metrics.
type metrics struct {
	writes   *prometheus.CounterVec // result: ok, error
	messages prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skewlens_kafkanotify_writes_total",
			Help: "Writes of alert messages to the alerts topic, one per Notify call, by result (ok, error).",
		}, []string{"result"}),
		messages: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skewlens_kafkanotify_messages_total",
			Help: "Alert messages the alerts topic acknowledged.",
		}),
	}
	m.writes.WithLabelValues("ok")
	m.writes.WithLabelValues("error")
	if _, err := promreg.Register(reg, "kafka alert notifier", m.writes, m.messages); err != nil {
		return nil, err
	}
	return m, nil
}
