package kafkasrc

import (
	"context"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/pipeline/stream"
)

// ForStream adapts src to the streaming runner's Source, a
// stream.GroupSource: kafka-go's messages become stream.Messages (with
// their consumer-group generation) and back, and the group's assignments
// and revocations reach the runner. It has src's blocking and safety
// rules.
func ForStream(src *Source) stream.Source { return streamSource{src} }

// DeadLettersForStream adapts d to the streaming runner's DeadLetters. It
// has d's blocking and safety rules.
func DeadLettersForStream(d *DeadLetters) stream.DeadLetters { return streamDeadLetters{d} }

// StreamPartitions converts partitions (as Backlog returns them) to the
// runner's type.
func StreamPartitions(ps []kafka.Partition) []stream.Partition {
	out := make([]stream.Partition, len(ps))
	for i, p := range ps {
		out[i] = stream.Partition{Topic: p.Topic, ID: p.ID}
	}
	return out
}

type streamSource struct{ src *Source }

func (s streamSource) Fetch(ctx context.Context) (stream.Message, error) {
	m, gen, err := s.src.fetch(ctx)
	if err != nil {
		return stream.Message{}, err
	}
	out := stream.Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value, Time: m.Time, Generation: gen}
	if len(m.Headers) > 0 {
		out.Headers = make([]stream.Header, len(m.Headers))
		for i, h := range m.Headers {
			out.Headers[i] = stream.Header{Key: h.Key, Value: h.Value}
		}
	}
	return out, nil
}

// Commit commits in the messages' generation (that of the first; the
// runner commits one generation at a time).
func (s streamSource) Commit(ctx context.Context, msgs ...stream.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	km := make([]kafka.Message, len(msgs))
	for i, m := range msgs {
		km[i] = kafka.Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset}
	}
	return s.src.commit(ctx, msgs[0].Generation, km)
}

func (s streamSource) Rebalances() <-chan stream.Rebalance { return s.src.rebalances() }

// ReadFailures implements stream.ReadFailures.
func (s streamSource) ReadFailures() uint64 { return s.src.ReadFailures() }

type streamDeadLetters struct{ d *DeadLetters }

func (s streamDeadLetters) Send(ctx context.Context, m stream.Message, reason, detail string) error {
	km := kafka.Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Key: m.Key, Value: m.Value, Time: m.Time}
	if len(m.Headers) > 0 {
		km.Headers = make([]kafka.Header, len(m.Headers))
		for i, h := range m.Headers {
			km.Headers[i] = kafka.Header{Key: h.Key, Value: h.Value}
		}
	}
	return s.d.Send(ctx, km, reason, detail)
}
