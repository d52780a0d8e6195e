package kafkasrc

import (
	"context"
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/kafkaclient"
)

// EnsureTopics creates the topics that do not exist yet and waits until
// every one of them has a leader for each partition, so that readers and
// writers started afterwards find them. A topic that already exists counts
// as success; its partition count and configuration are left as they are.
// NumPartitions and ReplicationFactor of -1 (or 0) take the broker's
// defaults. It is kafkaclient.EnsureTopics with this package's retries.
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
	if _, err := kafkaclient.EnsureTopics(ctx, kafkaclient.AdminConfig{Brokers: brokers}, topics...); err != nil {
		return fmt.Errorf("kafkasrc: %w", err)
	}
	return nil
}

// checkTopics waits until the topics exist (retrying transient errors)
// but does not create them; a topic that is still missing when ctx ends
// is reported by name.
func checkTopics(ctx context.Context, brokers []string, names []string) error {
	err := kafkaclient.WaitTopics(ctx, kafkaclient.AdminConfig{Brokers: brokers}, names...)
	if errors.Is(err, kafka.UnknownTopicOrPartition) {
		return fmt.Errorf("%w (create the topics first, e.g. with EnsureTopics)", err)
	}
	return err
}
