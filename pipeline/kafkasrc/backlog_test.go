package kafkasrc

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestBacklog: partitions with unread records are listed until the group
// commits past them; an empty partition never is.
func TestBacklog(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "bl"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Two records each into partitions 0 and 2; partition 1 stays empty.
	for _, p := range []int{0, 2} {
		conn, err := kafka.DialLeader(ctx, "tcp", brokers[0], "bl", p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.WriteMessages(kafka.Message{Value: fmt.Appendf(nil, "p%d", p)}, kafka.Message{Value: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
	want := func(ps ...int) []kafka.Partition {
		var out []kafka.Partition
		for _, p := range ps {
			out = append(out, kafka.Partition{Topic: "bl", ID: p})
		}
		return out
	}
	check := func(name string, latest bool, exp []kafka.Partition) {
		t.Helper()
		all, got, err := Backlog(ctx, brokers, "g", []string{"bl"}, latest)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, exp) {
			t.Fatalf("%s: backlog %v, want %v", name, got, exp)
		}
		if !reflect.DeepEqual(all, want(0, 1, 2)) {
			t.Fatalf("%s: partitions %v, want all three", name, all)
		}
	}
	check("new group", false, want(0, 2))
	check("new group from latest", true, nil)
	cl := &kafka.Client{Addr: kafka.TCP(brokers...)}
	res, err := cl.OffsetCommit(ctx, &kafka.OffsetCommitRequest{GroupID: "g", GenerationID: -1,
		Topics: map[string][]kafka.OffsetCommit{"bl": {{Partition: 0, Offset: 2}, {Partition: 2, Offset: 1}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ps := range res.Topics {
		for _, p := range ps {
			if p.Error != nil {
				t.Fatal(p.Error)
			}
		}
	}
	check("after commits", false, want(2))
}

// TestBacklogAllPartitions lists every partition of several topics, in
// order, and reports a missing topic once ctx ends.
func TestBacklogAllPartitions(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "pa"), kfake.SeedTopics(2, "pb"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	all, unread, err := Backlog(ctx, c.ListenAddrs(), "g", []string{"pb", "pa"}, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []kafka.Partition{{Topic: "pa", ID: 0}, {Topic: "pa", ID: 1}, {Topic: "pa", ID: 2}, {Topic: "pb", ID: 0}, {Topic: "pb", ID: 1}}
	if !reflect.DeepEqual(all, want) || len(unread) != 0 {
		t.Fatalf("partitions %v, unread %v; want %v and none unread", all, unread, want)
	}
	// A missing topic may still be on its way: retried until ctx ends.
	short, cancel2 := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel2()
	if _, _, err := Backlog(short, c.ListenAddrs(), "g", []string{"missing"}, false); err == nil {
		t.Fatal("no error for a missing topic")
	}
}
