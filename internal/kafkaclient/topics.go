package kafkaclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/internal/retry"
)

// AdminConfig says how EnsureTopics and WaitTopics reach the brokers.
type AdminConfig struct {
	// Brokers are the bootstrap brokers (host:port). Required.
	Brokers []string
	// Transport carries the requests. Default nil: one of their own (5 s
	// dial timeout), closed when they return. Pass a writer's transport
	// so that a topic created through it refreshes the writer's metadata.
	Transport *kafka.Transport
	// Timeout bounds one request.
	Timeout time.Duration `default:"10s" range:"(0s,]"`
	// Retry paces the attempts. Default (the zero value): retry.Pipeline(),
	// until ctx ends (a broker may still be starting).
	Retry retry.Policy
	// Log gets a warning per retry. Default nil: none.
	Log *slog.Logger
}

// client returns the admin client of c and a function that releases it.
func (c AdminConfig) client() (*kafka.Client, retry.Policy, func()) {
	tr, done := c.Transport, func() {}
	if tr == nil {
		tr = &kafka.Transport{DialTimeout: 5 * time.Second, MetadataTTL: time.Second}
		done = tr.CloseIdleConnections
	}
	c.Timeout = max(c.Timeout, 0) // not positive: the default
	knob.FillZero(&c)
	timeout := c.Timeout
	p := c.Retry
	if p == (retry.Policy{}) {
		p = retry.Pipeline()
	}
	return &kafka.Client{Addr: kafka.TCP(c.Brokers...), Timeout: timeout, Transport: tr}, p, done
}

// notify returns the retry notification that logs to c.Log.
func (c AdminConfig) notify(what string, names []string) retry.Notify {
	if c.Log == nil {
		return nil
	}
	return func(attempt int, wait time.Duration, err error) {
		c.Log.Warn("kafka: "+what+" failed; retrying", "topics", names, "attempt", attempt, "in", wait, "err", err)
	}
}

// EnsureTopics creates the topics that do not exist yet and waits until
// every partition of each has a leader, so that readers and writers
// started afterwards find them. It is idempotent: a topic that exists
// (TopicAlreadyExists) counts as success and is left as it is; its
// partition count and configuration are not checked. NumPartitions and
// ReplicationFactor of 0 take the broker's defaults.
//
// It returns the topics this call created. Retryable errors are retried
// with retry.Do as c.Retry says; errors no retry can fix (an invalid
// topic, a refused authorization) are returned at once, marked
// permanent. It blocks until then or ctx's end.
func EnsureTopics(ctx context.Context, c AdminConfig, topics ...kafka.TopicConfig) (created []string, err error) {
	if len(c.Brokers) == 0 {
		return nil, retry.Permanent("ensure topics", errors.New("no brokers"))
	}
	cl, policy, done := c.client()
	defer done()
	pending := make([]kafka.TopicConfig, len(topics))
	names := make([]string, len(topics))
	for i, t := range topics {
		if t.NumPartitions == 0 {
			t.NumPartitions = -1
		}
		if t.ReplicationFactor == 0 {
			t.ReplicationFactor = -1
		}
		pending[i], names[i] = t, t.Topic
	}
	err = retry.Do(ctx, policy, c.notify("creating topics", names), func(ctx context.Context) error {
		var err error
		if pending, err = createTopics(ctx, cl, pending, &created); err != nil {
			return err
		}
		return topicsReady(ctx, cl, names)
	})
	if err != nil {
		return created, fmt.Errorf("ensure topics %v: %w", names, err)
	}
	return created, nil
}

// createTopics creates pending, adds the topics it created to *created
// and returns the topics that failed with a retryable error, still to be
// created.
func createTopics(ctx context.Context, cl *kafka.Client, pending []kafka.TopicConfig, created *[]string) ([]kafka.TopicConfig, error) {
	if len(pending) == 0 {
		return nil, nil
	}
	res, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: pending})
	if err != nil {
		return pending, Classify("create topics", err)
	}
	var again []kafka.TopicConfig
	var errs []error
	for _, t := range pending {
		err := res.Errors[t.Topic]
		switch {
		case err == nil:
			*created = append(*created, t.Topic)
		case errors.Is(err, kafka.TopicAlreadyExists):
		case Retryable(err):
			again = append(again, t)
			errs = append(errs, fmt.Errorf("create %s: %w", t.Topic, err))
		default:
			return again, retry.Permanent("create "+t.Topic, err)
		}
	}
	return again, errors.Join(errs...)
}

// WaitTopics waits until every topic exists and each of its partitions
// has a leader, without creating any, retrying as c.Retry says. A topic
// still missing when ctx ends is reported by name.
func WaitTopics(ctx context.Context, c AdminConfig, names ...string) error {
	cl, policy, done := c.client()
	defer done()
	err := retry.Do(ctx, policy, c.notify("waiting for topics", names), func(ctx context.Context) error {
		return topicsReady(ctx, cl, names)
	})
	if err != nil {
		return fmt.Errorf("wait for topics %v: %w", names, err)
	}
	return nil
}

// TopicsReady checks once, without retries, that every topic exists and
// each of its partitions has a leader: a readiness check.
func TopicsReady(ctx context.Context, c AdminConfig, names ...string) error {
	cl, _, done := c.client()
	defer done()
	return topicsReady(ctx, cl, names)
}

// topicsReady checks that every topic exists and each partition has a
// leader. A missing topic is UnknownTopicOrPartition, which is retryable:
// a topic's creation reaches every broker's metadata a little later.
func topicsReady(ctx context.Context, cl *kafka.Client, names []string) error {
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: names})
	if err != nil {
		return Classify("metadata", err)
	}
	for _, n := range names {
		i := slices.IndexFunc(md.Topics, func(t kafka.Topic) bool { return t.Name == n })
		if i < 0 {
			return fmt.Errorf("topic %s: %w", n, kafka.UnknownTopicOrPartition)
		}
		t := md.Topics[i]
		if t.Error != nil {
			return Classify("topic "+n, t.Error)
		}
		if len(t.Partitions) == 0 {
			return fmt.Errorf("topic %s: no partitions: %w", n, kafka.LeaderNotAvailable)
		}
		for _, p := range t.Partitions {
			if p.Error != nil {
				return Classify(fmt.Sprintf("topic %s partition %d", n, p.ID), p.Error)
			}
			if p.Leader.Host == "" {
				return fmt.Errorf("topic %s partition %d: no leader: %w", n, p.ID, kafka.LeaderNotAvailable)
			}
		}
	}
	return nil
}

// TopicPartitions returns the partition count of every topic the brokers
// have (one metadata request for all topics, so that a broker that
// creates topics on demand creates none), retrying transient errors
// with c's policy.
func TopicPartitions(ctx context.Context, c AdminConfig) (map[string]int, error) {
	cl, policy, done := c.client()
	defer done()
	var out map[string]int
	err := retry.Do(ctx, policy, c.notify("listing topics", nil), func(ctx context.Context) error {
		md, err := cl.Metadata(ctx, &kafka.MetadataRequest{})
		if err != nil {
			return Classify("metadata", err)
		}
		out = make(map[string]int, len(md.Topics))
		for _, t := range md.Topics {
			if t.Error == nil {
				out[t.Name] = len(t.Partitions)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list topics: %w", err)
	}
	return out, nil
}
