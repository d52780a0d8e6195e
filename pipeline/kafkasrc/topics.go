package kafkasrc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"
)

// EnsureTopics creates the topics that do not exist yet and waits until
// every one of them has a leader for each partition, so that readers and
// writers started afterwards find them. A topic that already exists counts
// as success; its partition count and configuration are left as they are.
// NumPartitions and ReplicationFactor of -1 (or 0) take the broker's
// defaults.
//
// Transient errors (a broker still starting or just restarted) are retried
// with backoff until ctx is done; when ctx has no deadline,
// DefaultStartupTimeout applies. EnsureTopics blocks until then.
func EnsureTopics(ctx context.Context, brokers []string, topics []kafka.TopicConfig) error {
	if len(brokers) == 0 {
		return errors.New("kafkasrc: ensure topics: no brokers")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultStartupTimeout)
		defer cancel()
	}
	tr := &kafka.Transport{DialTimeout: 5 * time.Second, MetadataTTL: time.Second}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: tr}

	req := make([]kafka.TopicConfig, len(topics))
	names := make([]string, len(topics))
	for i, t := range topics {
		if t.NumPartitions == 0 {
			t.NumPartitions = -1
		}
		if t.ReplicationFactor == 0 {
			t.ReplicationFactor = -1
		}
		req[i], names[i] = t, t.Topic
	}

	var b backoff
	pending := req
	for {
		err := createTopics(ctx, cl, &pending)
		if err == nil {
			err = topicsReady(ctx, cl, names)
			if err == nil {
				return nil
			}
		}
		if ctx.Err() != nil || !transient(err) {
			return fmt.Errorf("kafkasrc: ensure topics %v: %w", names, err)
		}
		if serr := sleep(ctx, b.delay()); serr != nil {
			return fmt.Errorf("kafkasrc: ensure topics %v: %w (last error: %v)", names, serr, err)
		}
	}
}

// createTopics creates *pending and leaves in it the topics that failed
// with a transient error.
func createTopics(ctx context.Context, cl *kafka.Client, pending *[]kafka.TopicConfig) error {
	if len(*pending) == 0 {
		return nil
	}
	res, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: *pending})
	if err != nil {
		return err
	}
	var retry []kafka.TopicConfig
	var errs []error
	for _, t := range *pending {
		err := res.Errors[t.Topic]
		switch {
		case err == nil, errors.Is(err, kafka.TopicAlreadyExists):
		case transient(err):
			retry = append(retry, t)
			errs = append(errs, fmt.Errorf("create %s: %w", t.Topic, err))
		default:
			return fmt.Errorf("create %s: %w", t.Topic, err)
		}
	}
	*pending = retry
	return errors.Join(errs...)
}

// topicsReady checks that every topic exists and each partition has a
// leader. A missing topic is reported as UnknownTopicOrPartition, which
// transient treats as worth a retry (creation propagates asynchronously).
func topicsReady(ctx context.Context, cl *kafka.Client, names []string) error {
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: names})
	if err != nil {
		return err
	}
	for _, n := range names {
		i := slices.IndexFunc(md.Topics, func(t kafka.Topic) bool { return t.Name == n })
		if i < 0 {
			return fmt.Errorf("topic %s: %w", n, kafka.UnknownTopicOrPartition)
		}
		t := md.Topics[i]
		if t.Error != nil {
			return fmt.Errorf("topic %s: %w", n, t.Error)
		}
		if len(t.Partitions) == 0 {
			return fmt.Errorf("topic %s: no partitions: %w", n, kafka.LeaderNotAvailable)
		}
		for _, p := range t.Partitions {
			if p.Error != nil {
				return fmt.Errorf("topic %s partition %d: %w", n, p.ID, p.Error)
			}
			if p.Leader.Host == "" {
				return fmt.Errorf("topic %s partition %d: no leader: %w", n, p.ID, kafka.LeaderNotAvailable)
			}
		}
	}
	return nil
}

// checkTopics waits until the topics exist (retrying transient errors)
// but does not create them; a topic that is still missing when ctx ends
// is reported by name.
func checkTopics(ctx context.Context, brokers []string, names []string) error {
	tr := &kafka.Transport{DialTimeout: 5 * time.Second, MetadataTTL: time.Second}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: tr}
	var b backoff
	for {
		err := topicsReady(ctx, cl, names)
		if err == nil {
			return nil
		}
		if !transient(err) {
			return err
		}
		if serr := sleep(ctx, b.delay()); serr != nil {
			if errors.Is(err, kafka.UnknownTopicOrPartition) {
				return fmt.Errorf("%w (create the topics first, e.g. with EnsureTopics)", err)
			}
			return fmt.Errorf("%w (last error: %v)", serr, err)
		}
	}
}
