package kafkasrc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/retry"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
		check   func(t *testing.T, c Config)
	}{
		{name: "defaults", cfg: Config{Brokers: []string{"b:9092"}}, check: func(t *testing.T, c Config) {
			if c.GroupID != "skewlens" || !slices.Equal(c.Topics, []string{"flink-metrics", "flink-key-samples"}) ||
				c.MinBytes != 64<<10 || c.MaxBytes != 8<<20 || c.MaxWait != 250*time.Millisecond ||
				c.QueueCapacity != 1000 || c.StartupTimeout != 30*time.Second || c.BrokerWait != time.Minute || c.DeadLetterTopic != "skewlens-dead-letters" {
				t.Errorf("defaults not applied: %+v", c)
			}
		}},
		{name: "no brokers", cfg: Config{}, wantErr: "brokers"},
		{name: "empty broker", cfg: Config{Brokers: []string{""}}, wantErr: "empty address"},
		// A broker without a port is refused here, at start, not after
		// BrokerWait of dialling it.
		{name: "broker without port", cfg: Config{Brokers: []string{"kafka-1:9092", "kafka1"}}, wantErr: `brokers: "kafka1" has no port: want HOST:PORT, e.g. kafka1:9092`},
		{name: "broker with a bad port", cfg: Config{Brokers: []string{"kafka1:90o2"}}, wantErr: `brokers: "kafka1:90o2": port "90o2" is not a number in 1..65535`},
		{name: "duplicate topic", cfg: Config{Brokers: []string{"b:9092"}, Topics: []string{"a", "a"}}, wantErr: "twice"},
		{name: "topic is dead-letter topic", cfg: Config{Brokers: []string{"b:9092"}, Topics: []string{"x"}, DeadLetterTopic: "x"}, wantErr: "dead-letter"},
		{name: "max below min", cfg: Config{Brokers: []string{"b:9092"}, MinBytes: 10, MaxBytes: 5}, wantErr: "max bytes"},
		{name: "negative queue", cfg: Config{Brokers: []string{"b:9092"}, QueueCapacity: -1}, wantErr: "queue capacity"},
		{name: "negative timeout", cfg: Config{Brokers: []string{"b:9092"}, StartupTimeout: -time.Second}, wantErr: "startup timeout"},
		{name: "negative broker wait", cfg: Config{Brokers: []string{"b:9092"}, BrokerWait: -time.Second}, wantErr: "broker-wait"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg.withDefaults() // as New sees it
			err := cfg.ready()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				tc.check(t, cfg)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Validate = %v, want an error mentioning %q", err, tc.wantErr)
			}
		})
	}
}

// TestConfigDefaults checks that Validate only checks and that the zero
// fields are filled with DefaultConfig's values.
func TestConfigDefaults(t *testing.T) {
	if err := (Config{Brokers: []string{"b:9092"}}).Validate(); err == nil {
		t.Error("Validate accepted a Config without defaults")
	}
	d := DefaultConfig()
	d.Brokers = []string{"b:9092"}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := (Config{Brokers: d.Brokers}).withDefaults(); !reflect.DeepEqual(got, d) {
		t.Errorf("zero fields filled with %+v, want DefaultConfig %+v", got, d)
	}
	if d.DeadLetterInFlight != 16 || d.WriteTimeout != 10*time.Second || !slices.Equal(DefaultConfig().Topics, []string{DefaultConfig().Topics[0], DefaultConfig().Topics[1]}) {
		t.Errorf("defaults: %+v, topics %v", d, DefaultConfig().Topics)
	}
	// DefaultTopics returns a fresh slice: a caller may change it.
	DefaultConfig().Topics[0] = "changed"
	if DefaultConfig().Topics[0] != "flink-metrics" {
		t.Error("DefaultTopics shares its slice")
	}
}

// TestBackoff checks the source's retry waits: 50 ms doubling to 5 s,
// each jittered to between half and all of its step.
func TestBackoff(t *testing.T) {
	b := retry.Backoff{Policy: retry.Pipeline()}
	want := []time.Duration{50, 100, 200, 400, 800, 1600, 3200, 5000, 5000}
	for i, w := range want {
		w *= time.Millisecond
		if got := b.Next(); got < w/2 || got > w {
			t.Fatalf("delay %d = %s, want within [%s, %s]", i, got, w/2, w)
		}
	}
	if p := retry.Pipeline(); p.MaxRetries >= 0 || p.Validate() != nil {
		t.Fatalf("policy %+v: want valid, retrying until the context ends", p)
	}
}

// fetchN fetches n records, failing t on error.
func fetchN(t *testing.T, ctx context.Context, s *Source, n int) []kafka.Message {
	t.Helper()
	out := make([]kafka.Message, 0, n)
	for len(out) < n {
		m, err := s.Fetch(ctx)
		if err != nil {
			t.Fatalf("fetch %d of %d: %v", len(out)+1, n, err)
		}
		out = append(out, m)
	}
	return out
}

func TestFetchCommit(t *testing.T) {
	topics := []string{"flink-metrics", "flink-key-samples"}
	brokers := fakeCluster(t, topics...)
	produce(t, brokers, topics[0], 0, 10)
	produce(t, brokers, topics[1], 0, 5)
	reg := prometheus.NewRegistry()
	s, err := New(context.Background(), Config{Brokers: brokers, MinBytes: 1, MaxWait: 50 * time.Millisecond}, testLogger(t), reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	msgs := fetchN(t, ctx, s, 15)
	byTopic := map[string][]string{}
	for _, m := range msgs {
		byTopic[m.Topic] = append(byTopic[m.Topic], string(m.Value))
	}
	for _, tc := range []struct {
		topic string
		n     int
	}{{topics[0], 10}, {topics[1], 5}} {
		got := byTopic[tc.topic]
		if len(got) != tc.n {
			t.Fatalf("%s: %d records, want %d", tc.topic, len(got), tc.n)
		}
		for i, v := range got { // offset order within the partition
			if want := fmt.Sprintf("%s-%d", tc.topic, i); v != want {
				t.Fatalf("%s record %d = %q, want %q", tc.topic, i, v, want)
			}
		}
		if got := metricValue(t, reg, "skewlens_kafka_consumed_records_total", "topic", tc.topic); got != float64(tc.n) {
			t.Errorf("consumed{%s} = %v, want %d", tc.topic, got, tc.n)
		}
		if got := metricValue(t, reg, "skewlens_kafka_consumer_lag", "topic", tc.topic); got != 0 {
			t.Errorf("lag{%s} = %v, want 0 after reading everything", tc.topic, got)
		}
	}
	if err := s.Commit(ctx, msgs...); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := s.Commit(ctx); err != nil {
		t.Fatalf("empty Commit: %v", err)
	}
	if got := metricValue(t, reg, "skewlens_kafka_commits_total", "result", "ok"); got != 1 {
		t.Errorf("commits{ok} = %v, want 1", got)
	}
	if got := metricValue(t, reg, "skewlens_kafka_commit_seconds"); got != 1 {
		t.Errorf("commit latency samples = %v, want 1", got)
	}
	if err := s.Ready(ctx); err != nil {
		t.Errorf("Ready: %v", err)
	}
	// A quiet topic: Fetch blocks until its context ends.
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	if _, err := s.Fetch(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Fetch on a drained topic = %v, want deadline exceeded", err)
	}
}

func TestResumeAfterClose(t *testing.T) {
	brokers := fakeCluster(t, "in")
	produce(t, brokers, "in", 0, 20)
	cfg := Config{Brokers: brokers, GroupID: "g1", Topics: []string{"in"}, MinBytes: 1, MaxWait: 50 * time.Millisecond}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	s1, err := New(context.Background(), cfg, discardLogger(), prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	first := fetchN(t, ctx, s1, 12)
	// Commit only the first 7; records 7..11 were fetched but not committed.
	if err := s1.Commit(ctx, first[6]); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := s1.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s2, err := New(context.Background(), cfg, discardLogger(), prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("New again: %v", err)
	}
	defer s2.Close()
	rest := fetchN(t, ctx, s2, 13)
	for i, m := range rest {
		if m.Offset != int64(7+i) || string(m.Value) != fmt.Sprintf("in-%d", 7+i) {
			t.Fatalf("after resume record %d = offset %d %q, want offset %d", i, m.Offset, m.Value, 7+i)
		}
	}
}

func TestNewMissingTopic(t *testing.T) {
	brokers := fakeCluster(t)
	start := time.Now()
	_, err := New(context.Background(), Config{Brokers: brokers, Topics: []string{"nope"}, StartupTimeout: time.Second}, discardLogger(), nil)
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("New on a missing topic = %v, want an error naming it", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("New took %s, want about the 1 s StartupTimeout", d)
	}
}

func TestDeadLetters(t *testing.T) {
	brokers := fakeCluster(t, "in", DefaultConfig().DeadLetterTopic)
	reg := prometheus.NewRegistry()
	var logs bytes.Buffer
	d, err := NewDeadLetters(Config{Brokers: brokers, Topics: []string{"in"}}, slog.New(slog.NewTextHandler(&logs, nil)), reg)
	if err != nil {
		t.Fatalf("NewDeadLetters: %v", err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ts := time.UnixMilli(1593004193363)
	src := kafka.Message{Topic: "in", Partition: 0, Offset: 42, Key: []byte("k"), Value: []byte("{bad json"), Time: ts,
		Headers: []kafka.Header{{Key: "origin", Value: []byte("flink")}}}
	if err := d.Send(ctx, src, "invalid_json", "unexpected end of object"); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if err := d.Send(ctx, src, "Not Snake", "x"); err == nil {
		t.Fatal("Send with a bad reason succeeded")
	}
	checkDeadLetter(t, ctx, brokers, src, "invalid_json", "unexpected end of object")
	if got := metricValue(t, reg, "skewlens_kafka_dead_lettered_records_total", "reason", "invalid_json"); got != 1 {
		t.Errorf("dead_lettered{invalid_json} = %v, want 1", got)
	}
	// The log says so (deadLetterLog: at most every 30 s per reason).
	for _, want := range []string{`level=WARN msg="lines dead-lettered"`, " count=1 total=1 reason=invalid_json topic=in dead_letter_topic=skewlens-dead-letters "} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log %q lacks %q", logs.String(), want)
		}
	}
}

// checkDeadLetter reads the first record of the dead-letter topic and
// compares it with src.
func checkDeadLetter(t *testing.T, ctx context.Context, brokers []string, src kafka.Message, reason, detail string) {
	t.Helper()
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: DefaultConfig().DeadLetterTopic, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	got, err := r.FetchMessage(ctx)
	if err != nil {
		t.Fatalf("read dead letter: %v", err)
	}
	if string(got.Key) != string(src.Key) || string(got.Value) != string(src.Value) || !got.Time.Equal(src.Time) {
		t.Errorf("dead letter = key %q value %q time %v, want %q %q %v", got.Key, got.Value, got.Time, src.Key, src.Value, src.Time)
	}
	want := map[string]string{
		"origin":              "flink",
		HeaderReason:          reason,
		HeaderError:           detail,
		HeaderSourceTopic:     src.Topic,
		HeaderSourcePartition: fmt.Sprint(src.Partition),
		HeaderSourceOffset:    fmt.Sprint(src.Offset),
	}
	have := map[string]string{}
	for _, h := range got.Headers {
		have[h.Key] = string(h.Value)
	}
	for k, v := range want {
		if have[k] != v {
			t.Errorf("header %s = %q, want %q (all: %v)", k, have[k], v, have)
		}
	}
}

func TestCloseTwice(t *testing.T) {
	brokers := fakeCluster(t, "in", DefaultConfig().DeadLetterTopic)
	reg := prometheus.NewRegistry()
	cfg := Config{Brokers: brokers, Topics: []string{"in"}}
	s, err := New(context.Background(), cfg, discardLogger(), reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	d, err := NewDeadLetters(cfg, discardLogger(), reg)
	if err != nil {
		t.Fatalf("NewDeadLetters: %v", err)
	}
	ctx := context.Background()
	tests := []struct {
		name string
		call func() error
	}{
		{"source close 1", s.Close},
		{"source close 2", s.Close},
		{"dead letters close 1", d.Close},
		{"dead letters close 2", d.Close},
	}
	for _, tc := range tests {
		if err := tc.call(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
	after := []struct {
		name string
		call func() error
	}{
		{"fetch", func() error { _, err := s.Fetch(ctx); return err }},
		{"commit", func() error { return s.Commit(ctx, kafka.Message{Topic: "in"}) }},
		{"send", func() error { return d.Send(ctx, kafka.Message{}, "bad_line", "") }},
		{"ready", func() error { return s.Ready(ctx) }},
	}
	for _, tc := range after {
		if err := tc.call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", tc.name, err)
		}
	}
	// Close unregistered the metrics: a new Source can register again.
	s2, err := New(context.Background(), cfg, discardLogger(), reg)
	if err != nil {
		t.Fatalf("New after Close on the same registry: %v", err)
	}
	_ = s2.Close()
}
