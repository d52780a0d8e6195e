package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/deploy/testenv/chtest"
	"github.com/skewlens/skewlens/deploy/testenv/kafkatest"
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
		// A new topic is invisible to the writer until its metadata
		// refreshes: retry until it is.
		for {
			err := w.WriteMessages(ctx, msgs[i:min(i+1000, len(msgs))]...)
			if err == nil {
				break
			}
			if !errors.Is(err, kafka.UnknownTopicOrPartition) || ctx.Err() != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond)
		}
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
