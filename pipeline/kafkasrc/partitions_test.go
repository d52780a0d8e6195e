package kafkasrc

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestPartitions(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "pa"), kfake.SeedTopics(2, "pb"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := Partitions(ctx, c.ListenAddrs(), []string{"pb", "pa"})
	if err != nil {
		t.Fatal(err)
	}
	want := []kafka.Partition{{Topic: "pa", ID: 0}, {Topic: "pa", ID: 1}, {Topic: "pa", ID: 2}, {Topic: "pb", ID: 0}, {Topic: "pb", ID: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("partitions %v, want %v", got, want)
	}
	// A missing topic may still be on its way: retried until ctx ends.
	short, cancel2 := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel2()
	if _, err := Partitions(short, c.ListenAddrs(), []string{"missing"}); err == nil {
		t.Fatal("no error for a missing topic")
	}
}
