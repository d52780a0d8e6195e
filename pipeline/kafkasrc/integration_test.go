package kafkasrc

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
)

// The tests below run against the real Kafka broker of kafkatest. Each
// uses its own topics and group, so they share the one broker.

func TestIntegrationResume(t *testing.T) {
	brokers := kafkatest.Start(t)
	kafkatest.CreateTopics(t, brokers, "it-resume")
	const n = 200
	produce(t, brokers, "it-resume", 0, n)
	cfg := Config{Brokers: brokers, GroupID: "it-resume", Topics: []string{"it-resume"}, MinBytes: 1, MaxWait: 100 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	s1, err := New(context.Background(), cfg, testLogger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	for _, m := range fetchN(t, ctx, s1, n/2) {
		if err := s1.Commit(ctx, m); err != nil {
			t.Fatalf("Commit offset %d: %v", m.Offset, err)
		}
	}
	if err := s1.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s2, err := New(context.Background(), cfg, testLogger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("New again: %v", err)
	}
	defer s2.Close()
	rest := fetchN(t, ctx, s2, n/2)
	for i, m := range rest {
		if want := int64(n/2 + i); m.Offset != want {
			t.Fatalf("after reopening record %d has offset %d, want %d", i, m.Offset, want)
		}
	}
	if err := s2.Commit(ctx, rest[len(rest)-1]); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

// TestIntegrationBrokerRestart restarts the broker while records are
// consumed and committed one by one: the Source must reconnect by itself
// and every record must be consumed, with no loss; afterwards the group's
// committed position must cover all of them (a new member gets nothing).
func TestIntegrationBrokerRestart(t *testing.T) {
	brokers := kafkatest.Start(t)
	const topic = "it-restart"
	kafkatest.CreateTopics(t, brokers, topic)
	const before, after = 300, 100
	produce(t, brokers, topic, 0, before)
	cfg := Config{Brokers: brokers, GroupID: "it-restart", Topics: []string{topic}, MinBytes: 1, MaxWait: 100 * time.Millisecond,
		QueueCapacity: 20}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	reg := prometheus.NewRegistry()
	s, err := New(context.Background(), cfg, testLogger(t), reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer s.Close()

	// The consumer runs in its own goroutine; the test goroutine restarts
	// the broker once a third of the records are in.
	type result struct {
		seen map[string]int
		err  error
	}
	third, restarted := make(chan struct{}), make(chan struct{})
	res := make(chan result, 1)
	go func() {
		seen := make(map[string]int, before+after)
		for len(seen) < before+after {
			m, err := s.Fetch(ctx)
			if err != nil {
				res <- result{seen, fmt.Errorf("fetch after %d distinct records: %w", len(seen), err)}
				return
			}
			seen[string(m.Value)]++
			if err := s.Commit(ctx, m); err != nil {
				res <- result{seen, fmt.Errorf("commit offset %d: %w", m.Offset, err)}
				return
			}
			if len(seen) == before/3 && seen[string(m.Value)] == 1 {
				close(third)
				select { // the rest of the stream comes across the restart
				case <-restarted:
				case <-ctx.Done():
				}
			}
		}
		res <- result{seen, nil}
	}()
	select {
	case <-third:
	case r := <-res:
		t.Fatalf("consumer ended before the restart: %v", r.err)
	}
	kafkatest.Restart(t)
	close(restarted)
	produce(t, brokers, topic, before, after)

	r := <-res
	if r.err != nil {
		t.Fatalf("%v\n%s", r.err, kafkatest.ServerLogTail(30))
	}
	dups := 0
	for i := range before + after {
		v := fmt.Sprintf("%s-%d", topic, i)
		switch c := r.seen[v]; {
		case c == 0:
			t.Errorf("record %s lost", v)
		case c > 1:
			dups += c - 1
		}
	}
	t.Logf("%d records consumed across a broker restart, %d duplicates (at-least-once); fetch errors %v, commit retries %v",
		before+after, dups,
		metricValue(t, reg, "skewlens_kafka_fetch_errors_total", "kind", "transient"),
		metricValue(t, reg, "skewlens_kafka_commit_retries_total"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	// Everything was committed: the group's next member finds nothing.
	s2, err := New(context.Background(), cfg, testLogger(t), prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("New again: %v", err)
	}
	defer s2.Close()
	quiet, cancelQuiet := context.WithTimeout(ctx, 3*time.Second)
	defer cancelQuiet()
	if m, err := s2.Fetch(quiet); err == nil {
		t.Fatalf("after committing everything the group re-read offset %d (%q)", m.Offset, m.Value)
	}
}

func TestIntegrationDeadLetter(t *testing.T) {
	brokers := kafkatest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := Config{Brokers: brokers, Topics: []string{"it-dl-in"}}.withDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	admin := kafkaclient.AdminConfig{Brokers: brokers}
	if _, err := kafkaclient.EnsureTopics(ctx, admin, kafka.TopicConfig{Topic: "it-dl-in"}, kafka.TopicConfig{Topic: cfg.DeadLetterTopic}); err != nil {
		t.Fatalf("EnsureTopics: %v", err)
	}
	if _, err := kafkaclient.EnsureTopics(ctx, admin, kafka.TopicConfig{Topic: cfg.DeadLetterTopic}); err != nil {
		t.Fatalf("EnsureTopics again: %v", err)
	}
	reg := prometheus.NewRegistry()
	d, err := NewDeadLetters(cfg, testLogger(t), reg)
	if err != nil {
		t.Fatalf("NewDeadLetters: %v", err)
	}
	defer d.Close()
	src := kafka.Message{Topic: "it-dl-in", Partition: 0, Offset: 7, Key: []byte("job|task"),
		Value: []byte("cpu,host=a value=1 notatimestamp"), Time: time.UnixMilli(1700000000123),
		Headers: []kafka.Header{{Key: "origin", Value: []byte("flink")}}}
	if err := d.Send(ctx, src, "bad_line", "bad timestamp"); err != nil {
		t.Fatalf("Send: %v", err)
	}
	checkDeadLetter(t, ctx, brokers, src, "bad_line", "bad timestamp")
	if got := metricValue(t, reg, "skewlens_kafka_dead_lettered_records_total", "reason", "bad_line"); got != 1 {
		t.Errorf("dead_lettered{bad_line} = %v, want 1", got)
	}
}
