package kafkasrc

import (
	"context"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/pipeline/stream"
)

// TestForStream: the runner's view of a record keeps its place, key,
// value, time and headers; a commit through the adapter moves the group
// on; a dead letter sent through it carries the record and its headers.
func TestForStream(t *testing.T) {
	brokers := fakeCluster(t, "in", DefaultConfig().DeadLetterTopic)
	ts := time.UnixMilli(1593004193363)
	produceMsgs(t, brokers, "in", []kafka.Message{
		{Key: []byte("k0"), Value: []byte("v0"), Time: ts, Headers: []kafka.Header{{Key: "origin", Value: []byte("flink")}}},
		{Key: []byte("k1"), Value: []byte("v1"), Time: ts},
		{Key: []byte("k2"), Value: []byte("v2"), Time: ts},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := Config{Brokers: brokers, Topics: []string{"in"}, GroupID: "fs", MinBytes: 1, MaxWait: 50 * time.Millisecond}
	s, err := New(context.Background(), cfg, discardLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	src := ForStream(s)
	var got []stream.Message
	for range 2 {
		m, err := src.Fetch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	m := got[0]
	if m.Topic != "in" || m.Partition != 0 || m.Offset != 0 || string(m.Key) != "k0" || string(m.Value) != "v0" || !m.Time.Equal(ts) ||
		len(m.Headers) != 1 || m.Headers[0].Key != "origin" || string(m.Headers[0].Value) != "flink" {
		t.Fatalf("first message %+v", m)
	}
	if got[1].Offset != 1 || len(got[1].Headers) != 0 {
		t.Fatalf("second message %+v", got[1])
	}
	if err := src.Commit(ctx, got[1]); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// The group resumes after the committed offset.
	s2, err := New(context.Background(), cfg, discardLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	next, err := ForStream(s2).Fetch(ctx)
	if err != nil || next.Offset != 2 || string(next.Value) != "v2" {
		t.Fatalf("after the commit: %+v, %v; want offset 2", next, err)
	}

	d, err := NewDeadLetters(Config{Brokers: brokers, Topics: []string{"in"}}, discardLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := DeadLettersForStream(d).Send(ctx, m, "invalid_json", "unexpected end of object"); err != nil {
		t.Fatal(err)
	}
	checkDeadLetter(t, ctx, brokers, kafka.Message{Topic: "in", Partition: 0, Offset: 0, Key: []byte("k0"), Value: []byte("v0"), Time: ts},
		"invalid_json", "unexpected end of object")

	ps := StreamPartitions([]kafka.Partition{{Topic: "a", ID: 3}, {Topic: "b", ID: 0}})
	if len(ps) != 2 || ps[0] != (stream.Partition{Topic: "a", ID: 3}) || ps[1] != (stream.Partition{Topic: "b", ID: 0}) {
		t.Fatalf("StreamPartitions = %+v", ps)
	}
}
