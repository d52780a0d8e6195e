package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/pipeline/kafkasrc"
	"github.com/skewlens/skewlens/pipeline/simulate"
)

// demoCmd is run with demo plumbing: without --brokers an embedded
// in-process broker, without --clickhouse-addr a local clickhouse-server
// (installed when missing), its topics created, and simulated incidents
// played into the brokers. make run calls it.
type demoCmd struct {
	runCmd
	Simulate []string `placeholder:"SCENARIO" help:"Play these simulated incidents into the brokers, one job each (all: every scenario; fleet: a fleet of --jobs or --subtasks, seed 1)."`
	Speed    float64  `default:"${speed}" help:"Speed-up of the simulated incidents over real time." range:"(0,]"`
	fleetFlags
}

// Run runs the pipeline as run does, on embedded servers where no
// address is given, with the simulated incidents.
func (c *demoCmd) Run(e *env) error { return c.start(e, c) }

// check is run's, but for the addresses run requires, and the
// simulation's.
func (c *demoCmd) check() error {
	if err := c.checkSettings(); err != nil {
		return err
	}
	for _, name := range c.Simulate {
		if !slices.Contains(simulate.Scenarios(), simulate.Scenario(name)) && !((name == "all" || name == "fleet") && len(c.Simulate) == 1) {
			return fmt.Errorf("--simulate %q: want all or some of %v, or fleet", name, simulate.Scenarios())
		}
	}
	if err := c.checkFleet(); err != nil {
		return err
	}
	fleet := len(c.Simulate) == 1 && c.Simulate[0] == "fleet"
	switch {
	case fleet && !c.fleet():
		return errors.New("--simulate fleet: give --jobs or --subtasks")
	case !fleet && c.fleet():
		return errors.New("--jobs, --subtasks: only with --simulate fleet")
	case fleet:
		if err := c.runFleetConfig(time.Now()).Validate(); err != nil {
			return fmt.Errorf("--jobs, --subtasks, --incidents, --fleet-max-parallelism, --sampled-tasks: %w", err)
		}
	}
	return nil
}

// usageError is a command line that lacks what the command needs: exit
// status 2, as for a flag kong finds missing.
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }

// topics makes sure the consumed topics and the dead-letter topic exist.
// demo, or run with --create-topics, creates the missing ones; run
// otherwise stops with the command that creates them. An existing topic
// with fewer partitions than --topic-partitions gets a warning: the
// instances of a group share partitions, so it caps how many work.
func (c *runCmd) topics(ctx context.Context, brokers []string, demo bool, log *slog.Logger) error {
	names := append(slices.Clone(c.Topics), c.DeadLetterTopic)
	if demo {
		var cfgs []kafka.TopicConfig
		for _, n := range names {
			cfgs = append(cfgs, kafka.TopicConfig{Topic: n, NumPartitions: c.TopicPartitions, ReplicationFactor: c.TopicReplicationFactor})
		}
		ctx, cancel := context.WithTimeout(ctx, kafkasrc.DefaultConfig().StartupTimeout)
		defer cancel()
		_, err := kafkaclient.EnsureTopics(ctx, kafkaclient.AdminConfig{Brokers: brokers}, cfgs...)
		return err
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
			missing = append(missing, kafka.TopicConfig{Topic: n, NumPartitions: c.TopicPartitions, ReplicationFactor: c.TopicReplicationFactor})
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
		ctx, cancel := context.WithTimeout(ctx, kafkasrc.DefaultConfig().StartupTimeout)
		defer cancel()
		_, err := kafkaclient.EnsureTopics(ctx, kafkaclient.AdminConfig{Brokers: brokers}, missing...)
		return err
	}
	var cmds []string
	for _, t := range missing {
		cmds = append(cmds, fmt.Sprintf("  kafka-topics.sh --bootstrap-server %s --create --topic %s --partitions %d --replication-factor %d",
			brokers[0], t.Topic, t.NumPartitions, t.ReplicationFactor))
	}
	return fmt.Errorf("%d topics missing on the brokers; create them:\n%s\nor pass --create-topics (with --topic-partitions and --topic-replication-factor)",
		len(missing), strings.Join(cmds, "\n"))
}
