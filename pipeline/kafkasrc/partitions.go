package kafkasrc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// Partitions returns every partition of the topics, ordered by topic and
// partition. The pipeline lets each hold its watermark back at startup
// until it delivers (see stream.Config.Partitions). It retries transient
// errors (a broker still starting) with backoff until ctx ends; a ctx
// without deadline gets 30 s.
func Partitions(ctx context.Context, brokers []string, topics []string) ([]kafka.Partition, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	tr := &kafka.Transport{DialTimeout: 5 * time.Second}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: tr}
	var b backoff
	for {
		out, err := partitions(ctx, cl, topics)
		if err == nil || !transient(err) || ctx.Err() != nil {
			return out, err
		}
		if serr := sleep(ctx, b.delay()); serr != nil {
			return nil, fmt.Errorf("%w (last error: %v)", serr, err)
		}
	}
}

func partitions(ctx context.Context, cl *kafka.Client, topics []string) ([]kafka.Partition, error) {
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, fmt.Errorf("kafkasrc: partitions of %v: %w", topics, err)
	}
	var out []kafka.Partition
	for _, t := range md.Topics {
		if t.Error != nil {
			return nil, fmt.Errorf("kafkasrc: partitions of topic %s: %w", t.Name, t.Error)
		}
		for _, p := range t.Partitions {
			out = append(out, kafka.Partition{Topic: t.Name, ID: p.ID})
		}
	}
	sortPartitions(out)
	return out, nil
}

// sortPartitions orders partitions by topic, then partition.
func sortPartitions(ps []kafka.Partition) {
	slices.SortFunc(ps, func(a, b kafka.Partition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return a.ID - b.ID
	})
}
