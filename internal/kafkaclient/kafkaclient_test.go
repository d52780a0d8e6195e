package kafkaclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/internal/retry"
)

// TestRetryable is the table of the one Kafka classifier; it holds every
// case of the tables of the classifiers it replaced (kafkasrc's transient,
// planpub's classify, kafkanotify's permanent).
func TestRetryable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"eof after a broker restart", fmt.Errorf("read: %w", io.EOF), true},
		{"unexpected eof", io.ErrUnexpectedEOF, true},
		{"refused", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		{"reset", fmt.Errorf("x: %w", syscall.ECONNRESET), true},
		{"per-request deadline", context.DeadlineExceeded, true},
		{"rebalance", kafka.RebalanceInProgress, true},
		{"illegal generation", kafka.IllegalGeneration, true},
		{"unknown member", kafka.UnknownMemberId, true},
		{"not coordinator", kafka.NotCoordinatorForGroup, true},
		{"coordinator loading", kafka.GroupLoadInProgress, true},
		{"leader moved", fmt.Errorf("produce: %w", kafka.NotLeaderForPartition), true},
		{"leader not available", kafka.LeaderNotAvailable, true},
		{"unknown topic while it propagates", kafka.UnknownTopicOrPartition, true},
		{"request timed out", kafka.RequestTimedOut, true},
		{"network exception", kafka.NetworkException, true},
		{"broker not reachable", kafka.BrokerNotAvailable, true},
		{"unknown server error (a restart, a new topic)", fmt.Errorf("list offsets of partition 0: %w", kafka.Unknown), true},
		{"unknown error: the retries are bounded", errors.New("something odd"), true},
		{"write errors, all transient", kafka.WriteErrors{nil, io.EOF, kafka.RequestTimedOut}, true},
		{"authorization", kafka.TopicAuthorizationFailed, false},
		{"message size too large", kafka.MessageSizeTooLarge, false},
		{"wrapped message size too large", fmt.Errorf("wrapped: %w", kafka.MessageSizeTooLarge), false},
		{"invalid topic", kafka.InvalidTopic, false},
		{"kafka-go message too large", kafka.MessageTooLargeError{}, false},
		{"write errors with a permanent one", kafka.WriteErrors{io.EOF, kafka.TopicAuthorizationFailed}, false},
		{"write errors with one too large", kafka.WriteErrors{io.EOF, kafka.MessageSizeTooLarge}, false},
		{"write errors, one transient", kafka.WriteErrors{kafka.LeaderNotAvailable, nil}, true},
		{"closed writer", io.ErrClosedPipe, false},
		{"caller canceled", context.Canceled, false},
		{"already marked permanent", retry.Permanent("x", io.EOF), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Retryable(tt.err); got != tt.want {
				t.Fatalf("Retryable(%v) = %v, want %v", tt.err, got, tt.want)
			}
			got := Classify("op", tt.err)
			if tt.err == nil {
				if got != nil {
					t.Fatalf("Classify(nil) = %v", got)
				}
				return
			}
			wantPermanent := !tt.want && !errors.Is(tt.err, context.Canceled)
			if retry.IsPermanent(got) != wantPermanent || !strings.Contains(got.Error(), tt.err.Error()) {
				t.Fatalf("Classify(%v) = %v (permanent %v), want permanent %v, wrapping the error", tt.err, got, retry.IsPermanent(got), wantPermanent)
			}
		})
	}
}

func TestNewWriter(t *testing.T) {
	w := NewWriter(WriterConfig{Brokers: []string{"k1:9092", "k2:9092"}, Topic: "t"})
	defer w.Close()
	if _, ok := w.Balancer.(*kafka.Hash); !ok {
		t.Errorf("default balancer %T, want *kafka.Hash", w.Balancer)
	}
	if w.RequiredAcks != kafka.RequireAll || w.MaxAttempts != 1 || w.AllowAutoTopicCreation {
		t.Errorf("acks %v, attempts %d, auto-create %v: want all replicas, one attempt, no topic creation", w.RequiredAcks, w.MaxAttempts, w.AllowAutoTopicCreation)
	}
	if d := knob.Defaults[WriterConfig](); w.BatchTimeout != d.BatchTimeout || w.WriteTimeout != d.WriteTimeout || w.ReadTimeout != d.WriteTimeout || d.BatchTimeout != 5*time.Millisecond {
		t.Errorf("timeouts %s, %s, %s: want the defaults", w.BatchTimeout, w.WriteTimeout, w.ReadTimeout)
	}
	if w.Transport != nil || w.ErrorLogger != nil || w.Addr.String() != "k1:9092,k2:9092" {
		t.Errorf("transport %v, logger %v, addr %s", w.Transport, w.ErrorLogger, w.Addr)
	}
	tr := &kafka.Transport{}
	w2 := NewWriter(WriterConfig{Brokers: []string{"k1:9092"}, Balancer: kafka.Murmur2Balancer{}, BatchSize: 7,
		BatchTimeout: time.Second, WriteTimeout: time.Minute, Transport: tr})
	defer w2.Close()
	if _, ok := w2.Balancer.(kafka.Murmur2Balancer); !ok || w2.BatchSize != 7 || w2.BatchTimeout != time.Second ||
		w2.WriteTimeout != time.Minute || w2.Transport != tr {
		t.Errorf("settings not taken: %+v", w2)
	}
}

func TestEnsureTopicsWithoutBrokers(t *testing.T) {
	_, err := EnsureTopics(context.Background(), AdminConfig{}, kafka.TopicConfig{Topic: "t"})
	if err == nil || !retry.IsPermanent(err) {
		t.Fatalf("err = %v, want a permanent error", err)
	}
}

// TestEnsureTopicsIdempotent: a second call with the same topics, one of
// them there from the start, succeeds and changes nothing; a new topic
// gets the partitions asked for.
func TestEnsureTopicsIdempotent(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "existing"))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topics := []kafka.TopicConfig{
		{Topic: "existing", NumPartitions: 1, ReplicationFactor: 1},
		{Topic: "fresh", NumPartitions: 3, ReplicationFactor: 1},
		{Topic: "defaults"},
	}
	for i := range 2 {
		if _, err := EnsureTopics(ctx, AdminConfig{Brokers: brokers}, topics...); err != nil {
			t.Fatalf("EnsureTopics call %d: %v", i+1, err)
		}
	}
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	md, err := (&kafka.Client{Addr: kafka.TCP(brokers...), Transport: tr}).Metadata(ctx, &kafka.MetadataRequest{Topics: []string{"fresh"}})
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 3 {
		t.Fatalf("fresh topic metadata = %+v, want 3 partitions", md.Topics)
	}
	if _, err := EnsureTopics(ctx, AdminConfig{}, topics...); err == nil {
		t.Fatal("EnsureTopics without brokers succeeded")
	}
}

// TestEnsureTopicsHonoursContext: with no broker listening, EnsureTopics
// retries until ctx ends and then returns promptly, wrapping ctx's error.
func TestEnsureTopicsHonoursContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := EnsureTopics(ctx, AdminConfig{Brokers: []string{"127.0.0.1:1"}, Timeout: 100 * time.Millisecond}, kafka.TopicConfig{Topic: "t"})
	if !errors.Is(err, context.DeadlineExceeded) || retry.IsPermanent(err) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %s after the context ended", d)
	}
	err = WaitTopics(ctx, AdminConfig{Brokers: []string{"127.0.0.1:1"}}, "t")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitTopics: err = %v, want the context's deadline", err)
	}
}
