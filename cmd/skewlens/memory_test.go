package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/simfeed"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
	"github.com/skewlens/skewlens/pipeline/simulate"
)

// TestRunMemoryMillionKeysPerWindow feeds `skewlens run` (a child
// process) three windows of one million distinct keys each, from the real
// broker, and checks that the process's peak RSS (VmHWM) stays below
// 512 MB: the engine keeps a bounded sketch per task and window, not the
// keys.
func TestRunMemoryMillionKeysPerWindow(t *testing.T) {
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	const (
		windows   = 3
		perWindow = 1_000_000
		perMsg    = 200 // lines per Kafka message, as a batching sampler sends them
	)
	kafkatest.CreateTopicConfigs(t, brokers,
		kafka.TopicConfig{Topic: "mem-samples", NumPartitions: 4, ReplicationFactor: 1},
		kafka.TopicConfig{Topic: "mem-dead", NumPartitions: 1, ReplicationFactor: 1})
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: "mem-samples", Balancer: &kafka.Hash{},
		BatchSize: 500, BatchBytes: 16 << 20, BatchTimeout: 5 * time.Millisecond, RequiredAcks: kafka.RequireOne,
		Compression: kafka.Lz4}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now().Add(-time.Hour).Truncate(10 * time.Second).UnixMilli()
	var msgs []kafka.Message
	var b []byte
	key := 0
	// One window more than measured closes the last measured one.
	for win := range windows + 1 {
		for m := 0; m < perWindow/perMsg; m++ {
			b = b[:0]
			for l := range perMsg {
				ts := start + int64(win)*10000 + int64(m*perMsg+l)*10000/perWindow
				b = fmt.Appendf(b, `{"ts":%d,"job_id":"mem","task_name":"agg","key":"user-%d","parallelism":16}`+"\n", ts, key)
				key++
			}
			msgs = append(msgs, kafka.Message{Key: []byte("mem"), Value: append([]byte(nil), b...)})
		}
	}
	produced := time.Now()
	for i := 0; i < len(msgs); i += 1000 {
		writeUntilVisible(ctx, t, w, msgs[i:min(i+1000, len(msgs))]...)
	}
	t.Logf("%d samples (%d distinct keys) in %d messages, produced in %s", key, key, len(msgs), time.Since(produced).Round(time.Millisecond))
	msgs = nil

	r := startRun(t, brokers, chAddr, "mem", "mem", "mem")
	r.waitClosed(ctx, t, chAddr, start+windows*10000, 1)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	var hwm int
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			hwm, _ = strconv.Atoi(f[1])
		}
	}
	r.kill(t)
	t.Logf("peak RSS of skewlens run: %d MB", hwm/1024)
	if hwm == 0 || hwm > 512*1024 {
		t.Fatalf("peak RSS %d kB, want below 512 MB", hwm)
	}
}

// TestRunMemoryFleet feeds `skewlens run` (a child process) a fleet of
// 100k subtasks (the fleet simulator's mix of shapes and formats, key
// samples from 5 % of the tasks, five incidents) for four reporting
// intervals, from the real broker, and checks that the process's peak
// RSS (VmHWM) stays below 512 MB, with --memory-limit-mib 400, while it
// closes the windows of every job: per-subtask state is small, sketches
// exist only where key samples arrive, and a write holds its statistics
// rows only in the insert's columns. SKEWLENS_TEST_LOGS keeps heap
// profiles taken every 3 s.
func TestRunMemoryFleet(t *testing.T) {
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	const windows = 3 // closed and checked; one interval more closes the last
	kafkatest.CreateTopicConfigs(t, brokers,
		kafka.TopicConfig{Topic: "fleet-metrics", NumPartitions: 4, ReplicationFactor: 1},
		kafka.TopicConfig{Topic: "fleet-samples", NumPartitions: 4, ReplicationFactor: 1},
		kafka.TopicConfig{Topic: "fleet-dead", NumPartitions: 1, ReplicationFactor: 1})
	start := time.Now().Add(-time.Hour).Truncate(10 * time.Second).UnixMilli()
	fc := simulate.DefaultFleetConfig()
	fc.Seed, fc.Subtasks, fc.Start, fc.Duration = 1, 100_000, start, (windows+1)*10*time.Second
	fleet, err := simulate.NewFleet(fc)
	if err != nil {
		t.Fatal(err)
	}
	tasks, sampled := fleet.Tasks()
	cfg := simfeed.DefaultConfig()
	cfg.Brokers, cfg.MetricsTopic, cfg.SamplesTopic, cfg.Speed, cfg.Jobs = brokers, "fleet-metrics", "fleet-samples", 1e6, fleet.Jobs()
	feed, err := simfeed.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	produced := time.Now()
	if err := feed.Run(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("fleet: %d jobs, %d tasks (%d with key samples), %d subtasks: %d messages, produced in %s",
		len(cfg.Jobs), tasks, sampled, fleet.Subtasks(), feed.Sent, time.Since(produced).Round(time.Millisecond))

	// With the soft memory limit docs/performance.md gives for this size: without
	// it the Go runtime lets the heap reach twice its live size between
	// collections (682 MB of RSS here).
	r := startRun(t, brokers, chAddr, "fleet", "fleet", "fleet", "--memory-limit-mib", "400")
	consumed := time.Now()
	if d := os.Getenv("SKEWLENS_TEST_LOGS"); d != "" {
		// Heap profiles every 3 s, to read with go tool pprof: the period
		// is what is asked for, not a wait on an event.
		go func() {
			for i := 0; ; i++ {
				time.Sleep(3 * time.Second)
				resp, err := http.Get("http://" + r.listen + "/debug/pprof/heap")
				if err != nil {
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				_ = os.WriteFile(filepath.Join(d, fmt.Sprintf("fleet-heap-%02d.pprof", i)), b, 0o644)
			}
		}()
	}
	r.waitClosed(ctx, t, chAddr, start+windows*10000, uint64(len(cfg.Jobs)))
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", r.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	var hwm int
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			hwm, _ = strconv.Atoi(f[1])
		}
	}
	n, _ := r.messages()
	if d := os.Getenv("SKEWLENS_TEST_LOGS"); d != "" {
		// The heap at the end, to read with go tool pprof.
		if resp, err := http.Get("http://" + r.listen + "/debug/pprof/heap"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			_ = os.WriteFile(filepath.Join(d, "fleet-heap.pprof"), b, 0o644)
		}
	}
	r.kill(t)
	t.Logf("peak RSS of skewlens run on %d subtasks: %d MB (%d messages in %s)", fleet.Subtasks(), hwm/1024, n, time.Since(consumed).Round(time.Millisecond))
	if hwm == 0 || hwm > 512*1024 {
		t.Fatalf("peak RSS %d kB, want below 512 MB", hwm)
	}
}
