package kafkasrc

import (
	"context"
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/kafkaclient"
)

// checkTopics waits until the topics exist (retrying transient errors)
// but does not create them; a topic that is still missing when ctx ends
// is reported by name.
func checkTopics(ctx context.Context, brokers []string, names []string) error {
	err := kafkaclient.WaitTopics(ctx, kafkaclient.AdminConfig{Brokers: brokers}, names...)
	if errors.Is(err, kafka.UnknownTopicOrPartition) {
		return fmt.Errorf("%w (create the topics first, e.g. with kafkaclient.EnsureTopics)", err)
	}
	return err
}
