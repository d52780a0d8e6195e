package kafkasrc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/retry"
)

// Backlog returns every partition of the topics (all) and those that hold
// records the consumer group has not read yet (unread): its committed
// offset (or, without one, the start of the partition, or its end when
// startFromLatest) is below the partition's end. Both are ordered by topic
// and partition. The pipeline lets each partition hold its watermark back
// at startup until it delivers (see stream.Config.Partitions and
// Backlog). It blocks for three broker round trips, retrying transient
// errors (a broker still starting, a coordinator still loading) with
// backoff until ctx ends; a ctx without deadline gets 30 s.
func Backlog(ctx context.Context, brokers []string, group string, topics []string, startFromLatest bool) (all, unread []kafka.Partition, err error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	err = retry.Do(ctx, retry.Pipeline(), nil, func(ctx context.Context) error {
		var err error
		all, unread, err = backlog(ctx, brokers, group, topics, startFromLatest)
		return kafkaclient.Classify("backlog", err)
	})
	if err != nil {
		return nil, nil, err
	}
	return all, unread, nil
}

func backlog(ctx context.Context, brokers []string, group string, topics []string, startFromLatest bool) (all, unread []kafka.Partition, err error) {
	tr := &kafka.Transport{DialTimeout: 5 * time.Second}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: tr}
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, nil, fmt.Errorf("kafkasrc: backlog: metadata: %w", err)
	}
	ids := map[string][]int{}
	req := map[string][]kafka.OffsetRequest{}
	for _, t := range md.Topics {
		if t.Error != nil {
			return nil, nil, fmt.Errorf("kafkasrc: backlog: topic %s: %w", t.Name, t.Error)
		}
		for _, p := range t.Partitions {
			all = append(all, kafka.Partition{Topic: t.Name, ID: p.ID})
			ids[t.Name] = append(ids[t.Name], p.ID)
			req[t.Name] = append(req[t.Name], kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
		}
	}
	offs, err := cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: req})
	if err != nil {
		return nil, nil, fmt.Errorf("kafkasrc: backlog: list offsets: %w", err)
	}
	committed, err := cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: ids})
	if err != nil {
		return nil, nil, fmt.Errorf("kafkasrc: backlog: committed offsets of group %s: %w", group, err)
	}
	// A group that never committed is "not found" on some brokers (kfake)
	// and has offset -1 everywhere on others: both mean no position yet.
	if committed.Error != nil && !errors.Is(committed.Error, kafka.GroupIdNotFound) {
		return nil, nil, fmt.Errorf("kafkasrc: backlog: committed offsets of group %s: %w", group, committed.Error)
	}
	type tp struct {
		topic string
		id    int
	}
	pos := map[tp]int64{}
	for topic, ps := range committed.Topics {
		for _, p := range ps {
			if p.Error == nil && p.CommittedOffset >= 0 {
				pos[tp{topic, p.Partition}] = p.CommittedOffset
			}
		}
	}
	for topic, ps := range offs.Topics {
		for _, p := range ps {
			if p.Error != nil {
				return nil, nil, fmt.Errorf("kafkasrc: backlog: offsets of %s/%d: %w", topic, p.Partition, p.Error)
			}
			at, ok := pos[tp{topic, p.Partition}]
			if !ok {
				at = p.FirstOffset
				if startFromLatest {
					at = p.LastOffset
				}
			}
			if at < p.LastOffset {
				unread = append(unread, kafka.Partition{Topic: topic, ID: p.Partition})
			}
		}
	}
	sortPartitions(all)
	sortPartitions(unread)
	return all, unread, nil
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
