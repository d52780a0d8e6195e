package planpub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/promreg"
	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/skew/plans"
)

// Header names of the messages on the plans topic. A tombstone carries
// HeaderRetired and, since skewlens stores retirements for a restart, the
// version retired (HeaderVersion) and when (HeaderRetiredAt, epoch ms of
// event time).
const (
	HeaderVersion   = "skewlens-plan-version"
	HeaderSource    = "skewlens-plan-source"
	HeaderRetired   = "skewlens-plan-retired"
	HeaderRetiredAt = "skewlens-plan-retired-at"
)

// Publisher writes plan changes to the plans topic. Create it with New;
// see the package documentation for its blocking and safety rules.
type Publisher struct {
	cfg   Config
	log   *slog.Logger
	m     *metrics
	unreg func()
	tr    *kafka.Transport
	cl    *kafka.Client
	w     *kafka.Writer

	// mu serialises Publish and EnsureTopic and guards closed and lineage.
	mu     sync.Mutex
	closed bool
	// lineage are the lineage messages with a plan the last Load read.
	lineage   map[string]lineageRun
	closeOnce sync.Once
	closeErr  error
}

// New validates cfg, whose zero fields mean their defaults
// (DefaultConfig), and returns a Publisher for cfg.Topic, registering
// its metrics on reg (nil: not registered) until Close. It does not
// connect; call EnsureTopic before the first Publish (the brokers do not
// create topics on their own, and the topic must be compacted). log may
// be nil to discard the Publisher's log records. Errors are permanent error (retry.IsPermanent).
func New(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Publisher, error) {
	cfg = cfg.withDefaults()
	if err := cfg.ready(); err != nil {
		return nil, permanent("new", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "planpub", "topic", cfg.Topic)
	m := newMetrics()
	unreg, err := promreg.Register(reg, "plan publisher", m.collectors()...)
	if err != nil {
		return nil, permanent("new", err)
	}
	// One transport for the admin client and the writer: a topic created
	// through it refreshes the metadata the writer uses, and a short TTL
	// bounds how long the writer can miss a topic created elsewhere
	// (kafka-go's default is 6 s).
	tr := &kafka.Transport{DialTimeout: cfg.DialTimeout, MetadataTTL: time.Second}
	w := kafkaclient.NewWriter(kafkaclient.WriterConfig{
		Brokers: cfg.Brokers,
		Topic:   cfg.Topic,
		// Kafka's Java default partitioner, so that any producer of these
		// keys picks the same partition and compaction sees one key once.
		Balancer: kafka.Murmur2Balancer{},
		// Publish is synchronous and retries itself (resending in order):
		// no waiting for batches to fill.
		BatchSize:    10000,
		BatchBytes:   int64(cfg.MaxMessageBytes),
		BatchTimeout: time.Millisecond,
		WriteTimeout: cfg.WriteTimeout,
		Transport:    tr,
		Log:          log,
	})
	cl := &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: cfg.WriteTimeout, Transport: tr}
	return &Publisher{cfg: cfg, log: log, m: m, unreg: unreg, tr: tr, cl: cl, w: w}, nil
}

// Topic returns the plans topic.
func (p *Publisher) Topic() string { return p.cfg.Topic }

// EnsureTopic creates the plans topic with cleanup.policy=compact (plus
// Config.TopicConfigs, Partitions and ReplicationFactor) if it does not
// exist, and waits until every partition has a leader. It is idempotent.
// A topic that exists is left as it is, but must be compacted: one with
// another cleanup.policy is a permanent error (retry.IsPermanent), since
// its plans would be deleted by age and a reader starting from the
// beginning could miss a task's plan. Retryable errors (a broker still starting) are retried.
func (p *Publisher) EnsureTopic(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return permanent("ensure topic", ErrClosed)
	}
	entries := []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"}}
	for k, v := range p.cfg.TopicConfigs {
		entries = append(entries, kafka.ConfigEntry{ConfigName: k, ConfigValue: v})
	}
	slices.SortFunc(entries[1:], func(a, b kafka.ConfigEntry) int { return strings.Compare(a.ConfigName, b.ConfigName) })
	tc := kafka.TopicConfig{
		Topic: p.cfg.Topic, NumPartitions: p.cfg.Partitions, ReplicationFactor: p.cfg.ReplicationFactor,
		ConfigEntries: entries,
	}
	op := "ensure topic " + p.cfg.Topic
	created, err := kafkaclient.EnsureTopics(ctx, kafkaclient.AdminConfig{
		Brokers: p.cfg.Brokers, Transport: p.tr, Timeout: p.cfg.WriteTimeout, Retry: p.cfg.Retry, Log: p.log,
	}, tc)
	switch {
	case retry.IsPermanent(err):
		return err
	case err != nil:
		return fmt.Errorf("planpub: %s: %w", op, err)
	case len(created) > 0:
		p.log.Info("plans topic created", "partitions", p.cfg.Partitions)
		return nil
	}
	return p.retry(ctx, op, p.checkCompacted)
}

// CleanupPolicy returns the plans topic's cleanup.policy as the broker
// reports it.
func (p *Publisher) CleanupPolicy(ctx context.Context) (string, error) {
	res, err := p.cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{
		Resources: []kafka.DescribeConfigRequestResource{{
			ResourceType: kafka.ResourceTypeTopic, ResourceName: p.cfg.Topic,
			ConfigNames: []string{"cleanup.policy"},
		}},
	})
	if err != nil {
		return "", fmt.Errorf("describe configs: %w", err)
	}
	for _, r := range res.Resources {
		if r.Error != nil {
			return "", fmt.Errorf("describe configs: %w", r.Error)
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName == "cleanup.policy" {
				return e.ConfigValue, nil
			}
		}
	}
	return "", errors.New("describe configs: no cleanup.policy")
}

// checkCompacted fails permanently when the existing topic is not compacted.
func (p *Publisher) checkCompacted(ctx context.Context) error {
	pol, err := p.CleanupPolicy(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(strings.Split(pol, ","), "compact") {
		return permanent("ensure topic "+p.cfg.Topic, fmt.Errorf("the topic exists with cleanup.policy=%s; a plans topic must be compacted", pol))
	}
	return nil
}

// Message returns the Kafka message of one change: key job_id/task_name,
// the plan's JSON and version and source headers, or a tombstone (nil
// value, header skewlens-plan-retired: true, and the version retired and
// when) for a retirement.
func Message(c plans.Change) (kafka.Message, error) {
	if c.JobID == "" || c.TaskName == "" {
		return kafka.Message{}, errors.New("change without job id or task name")
	}
	key := []byte(plans.Key(c.JobID, c.TaskName))
	if c.Retired {
		if c.Plan != nil {
			return kafka.Message{}, fmt.Errorf("change of %s: retired with a plan", key)
		}
		hs := []kafka.Header{{Key: HeaderRetired, Value: []byte("true")}}
		if c.Version > 0 {
			hs = append(hs, kafka.Header{Key: HeaderVersion, Value: strconv.AppendUint(nil, c.Version, 10)},
				kafka.Header{Key: HeaderRetiredAt, Value: strconv.AppendInt(nil, c.At.UnixMilli(), 10)})
		}
		return kafka.Message{Key: key, Headers: hs}, nil
	}
	if c.Plan == nil {
		return kafka.Message{}, fmt.Errorf("change of %s: neither a plan nor retired", key)
	}
	if c.Plan.JobID != c.JobID || c.Plan.TaskName != c.TaskName {
		return kafka.Message{}, fmt.Errorf("change of %s: plan of %s", key, plans.Key(c.Plan.JobID, c.Plan.TaskName))
	}
	v, err := json.Marshal(c.Plan)
	if err != nil {
		return kafka.Message{}, fmt.Errorf("change of %s: encode plan: %w", key, err)
	}
	return kafka.Message{Key: key, Value: v, Headers: []kafka.Header{
		{Key: HeaderVersion, Value: strconv.AppendUint(nil, c.Plan.Version, 10)},
		{Key: HeaderSource, Value: []byte(c.Plan.Source)},
	}}, nil
}

// size is the bytes a message takes in a record batch, roughly (kafka-go
// adds the same few bytes of framing to each).
func size(m *kafka.Message) int {
	n := len(m.Key) + len(m.Value) + 64
	for _, h := range m.Headers {
		n += len(h.Key) + len(h.Value) + 8
	}
	return n
}

// Publish writes changes to the plans topic, in order, and returns once
// the broker has acknowledged all of them. It makes one attempt and does
// not retry: its callers do (the stream runner retries the write a PlanObserver
// publishes from; the override poller tries again at its next tick), and
// a PlanObserver keeps the changes until one succeeds. See the package
// documentation for errors. A change that cannot be encoded, or whose
// message is larger than Config.MaxMessageBytes, fails the whole call
// with a permanent error (retry.IsPermanent) before anything is sent.
func (p *Publisher) Publish(ctx context.Context, changes []plans.Change) error {
	if len(changes) == 0 {
		return nil
	}
	op := fmt.Sprintf("publish %d changes", len(changes))
	msgs := make([]kafka.Message, len(changes))
	for i, c := range changes {
		m, err := Message(c)
		if err == nil && size(&m) > p.cfg.MaxMessageBytes {
			err = fmt.Errorf("change of %s: message of %d bytes, more than %d", m.Key, size(&m), p.cfg.MaxMessageBytes)
		}
		if err != nil {
			p.m.failures.WithLabelValues(string(classPermanent)).Inc()
			return permanent(fmt.Sprintf("%s: change %d", op, i), err)
		}
		// The timestamp is the wall clock: a zero one is sent as 1970,
		// which would keep segments from ever rolling by segment.ms, and
		// so from being compacted.
		m.Time = time.Now()
		msgs[i] = m
	}
	return p.write(ctx, op, msgs)
}

// publishLineage writes lineage messages like Publish writes changes:
// in order, one attempt. A message that cannot be encoded or is too large
// is left out, logged and counted as a permanent failure, rather than
// failing the call: lineage messages only bridge a resubmission, and
// must not stop the pipeline that publishes the plans themselves.
func (p *Publisher) publishLineage(ctx context.Context, ls []Lineage) error {
	msgs := make([]kafka.Message, 0, len(ls))
	for _, l := range ls {
		m, err := LineageMessage(l)
		if err == nil && size(&m) > p.cfg.MaxMessageBytes {
			err = fmt.Errorf("lineage message %s: %d bytes, more than %d", m.Key, size(&m), p.cfg.MaxMessageBytes)
		}
		if err != nil {
			p.m.failures.WithLabelValues(string(classPermanent)).Inc()
			p.log.Warn("planpub: lineage message left out", "err", err)
			continue
		}
		m.Time = time.Now()
		msgs = append(msgs, m)
	}
	if len(msgs) == 0 {
		return nil
	}
	return p.write(ctx, fmt.Sprintf("publish %d lineage messages", len(msgs)), msgs)
}

// write sends msgs, in order, and counts those acknowledged.
func (p *Publisher) write(ctx context.Context, op string, msgs []kafka.Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return permanent(op, ErrClosed)
	}
	start := time.Now()
	err := p.w.WriteMessages(ctx, msgs...)
	sent := len(msgs)
	var werrs kafka.WriteErrors
	if errors.As(err, &werrs) && len(werrs) == len(msgs) {
		sent = slices.IndexFunc(werrs, func(e error) bool { return e != nil })
	} else if err != nil {
		sent = 0
	}
	p.count(msgs[:max(sent, 0)])
	if err != nil {
		return p.failed(ctx, op, err)
	}
	p.m.seconds.Observe(time.Since(start).Seconds())
	return nil
}

// count counts messages acknowledged by the broker.
func (p *Publisher) count(ms []kafka.Message) {
	for i := range ms {
		switch {
		case IsLineageKey(ms[i].Key):
			p.m.lineage.Inc()
		case ms[i].Value == nil:
			p.m.tombstones.Inc()
		default:
			p.m.plans.Inc()
		}
	}
}

// Close closes the writer and its connections and unregisters the
// metrics. It waits for a running Publish or EnsureTopic, and is safe to
// call more than once; later calls fail with ErrClosed.
func (p *Publisher) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		if err := p.w.Close(); err != nil {
			p.closeErr = fmt.Errorf("planpub: close: %w", err)
		}
		p.tr.CloseIdleConnections()
		p.unreg()
	})
	return p.closeErr
}
