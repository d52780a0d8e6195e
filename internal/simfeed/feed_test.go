package simfeed

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/skewlens/skewlens/pipeline/decode"
	"github.com/skewlens/skewlens/pipeline/simulate"
)

func TestConfigValidate(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.Brokers = []string{"127.0.0.1:9092"}
		c.Jobs = []simulate.Config{{Scenario: simulate.HotKey}}
		return c
	}
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string // "" means valid
	}{
		{"defaults with brokers and jobs", func(*Config) {}, ""},
		{"no brokers", func(c *Config) { c.Brokers = nil }, "no brokers"},
		{"no jobs", func(c *Config) { c.Jobs = nil }, "no jobs"},
		{"no metrics topic", func(c *Config) { c.MetricsTopic = "" }, "topics"},
		{"zero speed", func(c *Config) { c.Speed = 0 }, "speed"},
		{"negative speed", func(c *Config) { c.Speed = -2 }, "speed"},
		{"NaN speed", func(c *Config) { c.Speed = math.NaN() }, "speed"},
		{"negative backlog", func(c *Config) { c.Backlog = -time.Second }, "backlog"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.edit(&c)
			err := c.ready()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one about %q", err, tt.wantErr)
			}
			if _, err := New(c, nil); err == nil {
				t.Fatal("New accepted the config")
			}
		})
	}
	if d := DefaultConfig(); d.MetricsTopic != "flink-metrics" || d.SamplesTopic != "flink-key-samples" || d.Speed != 1 {
		t.Errorf("defaults: %+v", d)
	}
}

// TestFeedFleet plays a small fleet into an in-process broker (kfake) at
// 60x real time: every line the fleet writes to a file is sent once, in
// batches of at most maxBatch, and the intervals are paced by the clock.
func TestFeedFleet(t *testing.T) {
	fc := simulate.FleetConfig{Seed: 2, Jobs: 4, Duration: time.Minute, MaxParallelism: 30}
	jobs, err := simulate.FleetJobs(fc)
	if err != nil {
		t.Fatal(err)
	}
	fleet, err := simulate.NewFleet(fc)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if _, err := fleet.WriteTo(&want); err != nil {
		t.Fatal(err)
	}
	lines := bytes.Count(want.Bytes(), []byte("\n"))
	if lines <= maxBatch {
		t.Fatalf("fleet of %d lines does not exercise batches of %d", lines, maxBatch)
	}
	cfg := DefaultConfig()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, cfg.MetricsTopic, cfg.SamplesTopic))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	cfg.Brokers, cfg.Jobs, cfg.Speed = cluster.ListenAddrs(), jobs, 60
	f, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	if err := f.Run(ctx); err != nil {
		t.Fatal(err)
	}
	// Six intervals of 10 s at 60x: 167 ms apart, the last one written
	// after 833 ms, and Run waits out its interval too.
	if took := time.Since(began); took < time.Second {
		t.Errorf("played 1 simulated minute at 60x in %v, want at least 1 s", took)
	}
	if f.Sent != lines {
		t.Errorf("sent %d records, the fleet has %d lines", f.Sent, lines)
	}
	if truths := f.Truths(); len(truths) != len(jobs) || truths[0].JobID != fleet.Truths()[0].JobID {
		t.Errorf("feed truths %d, want the fleet's %d", len(truths), len(jobs))
	}
}

// TestFeedBacklog: the first Backlog of simulated time is written at
// once, whatever the speed, and the pacing starts after it. At a speed
// of 1/1000 a paced interval of 10 s would take hours: with the whole
// minute as backlog Run returns with every line sent; with half of it,
// Run is still waiting when its context ends, with only part sent.
func TestFeedBacklog(t *testing.T) {
	jobs := []simulate.Config{{Scenario: simulate.HotKey, Duration: time.Minute, SamplesPerInterval: 100}}
	cfg := DefaultConfig()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, cfg.MetricsTopic, cfg.SamplesTopic))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	var all int
	for _, tc := range []struct {
		name    string
		backlog time.Duration
		whole   bool
	}{
		{"the whole duration", time.Minute, true},
		{"half of it", 30 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg.Brokers, cfg.Jobs, cfg.Speed, cfg.Backlog = cluster.ListenAddrs(), jobs, 0.001, tc.backlog
			f, err := New(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if err := f.Run(ctx); err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.whole && ctx.Err() != nil:
				t.Fatalf("Run waited for its context (sent %d) with the whole duration as backlog", f.Sent)
			case tc.whole:
				all = f.Sent
			case ctx.Err() == nil:
				t.Fatalf("Run returned before its context ended (sent %d): the part after the backlog was not paced", f.Sent)
			case f.Sent == 0 || f.Sent >= all:
				t.Fatalf("sent %d records, want some of the %d and not all", f.Sent, all)
			}
		})
	}
}

// TestFeedLaterStart: jobs share one clock from the earliest Start, so a
// job's next run (same name, so the same key and partition, a minute
// later) is written a minute of simulated time later, and the partition's
// records come in event-time order: no record is more than an interval
// older than one written before it.
func TestFeedLaterStart(t *testing.T) {
	cfg := DefaultConfig()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, cfg.MetricsTopic, cfg.SamplesTopic))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	run := func(seed uint64, start int64) simulate.Config {
		return simulate.Config{Scenario: simulate.HotKey, Seed: seed, JobName: "orders", Start: start, Duration: time.Minute, SamplesPerInterval: 20}
	}
	cfg.Brokers, cfg.Speed, cfg.Backlog = cluster.ListenAddrs(), 1, 3*time.Minute
	cfg.Jobs = []simulate.Config{run(2, simulate.DefaultConfig().Start+time.Minute.Milliseconds()), run(1, simulate.DefaultConfig().Start)}
	f, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.Run(ctx); err != nil {
		t.Fatal(err)
	}
	dec := decode.NewDecoder(decode.FormatAuto)
	for _, topic := range []string{cfg.MetricsTopic, cfg.SamplesTopic} {
		conn, err := kafka.DialLeader(ctx, "tcp", cfg.Brokers[0], topic, 0)
		if err != nil {
			t.Fatal(err)
		}
		end, err := conn.ReadLastOffset()
		conn.Close()
		if err != nil || end == 0 {
			t.Fatalf("%s: last offset %d, %v", topic, end, err)
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: cfg.Brokers, Topic: topic, Partition: 0, MaxWait: 100 * time.Millisecond})
		defer r.Close()
		var newest int64
		for i := int64(0); i < end; i++ {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var ts int64
			switch kind, err := dec.Decode(m.Value); {
			case err != nil:
				t.Fatalf("%s offset %d: %v: %s", topic, m.Offset, err, m.Value)
			case kind == decode.KindMetric:
				ts = dec.Metric.TS
			case kind == decode.KindKeySample:
				ts = dec.Sample.TS
			}
			if ts < newest-10_000 {
				t.Fatalf("%s offset %d: event time %d after %d: runs written out of event-time order", topic, m.Offset, ts, newest)
			}
			newest = max(newest, ts)
			if string(m.Key) != "orders" {
				t.Fatalf("%s offset %d keyed %q, want the job name", topic, m.Offset, m.Key)
			}
		}
		if newest < simulate.DefaultConfig().Start+time.Minute.Milliseconds() {
			t.Fatalf("%s: newest event time %d: the later run is missing", topic, newest)
		}
	}
}
