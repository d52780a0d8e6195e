package app

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/pipeline/kafkasrc"
)

// topics makes sure the consumed topics and the dead-letter topic exist.
// demo, or run with --create-topics, creates the missing ones; run
// otherwise stops with the command that creates them. An existing topic
// with fewer partitions than --topic-partitions gets a warning: the
// instances of a group share partitions, so it caps how many work.
func (c *RunConfig) topics(ctx context.Context, brokers []string, demo bool, log *slog.Logger) error {
	names := append(slices.Clone(c.Kafka.Topics), c.Kafka.DeadLetterTopic)
	topic := func(n string) kafka.TopicConfig {
		return kafka.TopicConfig{Topic: n, NumPartitions: c.TopicPartitions, ReplicationFactor: c.TopicReplicationFactor}
	}
	if demo {
		var cfgs []kafka.TopicConfig
		for _, n := range names {
			cfgs = append(cfgs, topic(n))
		}
		return ensureTopics(ctx, brokers, cfgs)
	}
	have, err := kafkaclient.TopicPartitions(ctx, kafkaclient.AdminConfig{Brokers: brokers})
	if err != nil {
		return err
	}
	var missing []kafka.TopicConfig
	for _, n := range names {
		p, ok := have[n]
		switch {
		case !ok:
			missing = append(missing, topic(n))
		case p < c.TopicPartitions:
			log.Warn("topic has fewer partitions than --topic-partitions: no more instances of the group than that share its work",
				"topic", n, "partitions", p, "topic_partitions", c.TopicPartitions)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if c.CreateTopics {
		log.Info("creating topics", "topics", len(missing), "partitions", c.TopicPartitions, "replication_factor", c.TopicReplicationFactor)
		return ensureTopics(ctx, brokers, missing)
	}
	var cmds []string
	for _, t := range missing {
		cmds = append(cmds, fmt.Sprintf("  kafka-topics.sh --bootstrap-server %s --create --topic %s --partitions %d --replication-factor %d",
			brokers[0], t.Topic, t.NumPartitions, t.ReplicationFactor))
	}
	return fmt.Errorf("%d topics missing on the brokers; create them:\n%s\nor pass --create-topics (with --topic-partitions and --topic-replication-factor)",
		len(missing), strings.Join(cmds, "\n"))
}

// ensureTopics creates the topics that are missing, within the Kafka
// source's start-up timeout.
func ensureTopics(ctx context.Context, brokers []string, topics []kafka.TopicConfig) error {
	ctx, cancel := context.WithTimeout(ctx, kafkasrc.DefaultConfig().StartupTimeout)
	defer cancel()
	_, err := kafkaclient.EnsureTopics(ctx, kafkaclient.AdminConfig{Brokers: brokers}, topics...)
	return err
}
