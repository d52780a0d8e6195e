package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
)

// TestRunRestartsWithoutCheckpoints restarts `skewlens run` while its one
// job has never completed a checkpoint: the real capture of a Flink 2.3.0
// job with checkpointing off (testdata/flink/hot_key_no_checkpoints),
// whose JobManager reports lastCheckpointDuration and lastCheckpointSize
// as -1 all its life. A third of it is read, and run is stopped with
// SIGTERM once the job's saved engine state says it has no checkpoint;
// run starts again, resumes the job and reads the second third; it is
// killed with SIGKILL and starts again for the last third. Each start
// resumes the job's state (no refusal), run keeps running, and the
// diagnosis goes on across the restarts: data_skew on the hot key's
// subtask in every third, each saying that the job has no checkpoint.
//
// Before the decoders understood Flink's -1, the first restart exited
// with "restore job 0 (…): checkpoints: a reading out of range", and so
// did every later start: a crash loop.
func TestRunRestartsWithoutCheckpoints(t *testing.T) {
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	dir := filepath.Join("..", "..", "testdata", "flink", "hot_key_no_checkpoints")
	tr := readTruth(t, dir)
	const prefix, group, db = "nockpt", "nockpt", "nockpt"
	createRunTopics(t, brokers, prefix)
	metrics := captureRecords(t, dir, "kafka-metrics.jsonl.gz")
	samples := captureRecords(t, dir, "key-samples.jsonl.gz")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	span := (tr.StoppedAtMs - tr.ReadyAtMs) / 3
	thirds := []int64{tr.ReadyAtMs + span, tr.ReadyAtMs + 2*span, tr.StoppedAtMs + 60_000}
	conn, err := ch.Open(&ch.Options{Addr: []string{chAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	var from int64
	var r *runProc
	for i, until := range thirds {
		produceCapture(ctx, t, brokers, prefix, metrics, samples, from, until)
		if r == nil {
			r = startRun(t, brokers, chAddr, prefix, group, db)
		}
		// The windows of this third closed and saved, a window's worth
		// of reports short of its end (the last ones wait for more).
		r.waitClosed(ctx, t, chAddr, min(until, tr.StoppedAtMs)-30_000, 1)
		switch i {
		case 0:
			r.terminate(ctx, t)
		case 1:
			r.kill(t)
		default:
			continue
		}
		r = startRun(t, brokers, chAddr, prefix, group, db)
		r.waitAssigned(ctx, t, 1)
		if most, _ := r.resumedJobs(t); most != 1 {
			t.Fatalf("restart %d resumed %d jobs, want the job:\n%s", i+1, most, r.logTail())
		}
		from = until
	}
	select {
	case <-r.done:
		t.Fatalf("run exited:\n%s", r.logTail())
	default:
	}
	if log := r.logTail(); strings.Contains(log, "state of a job refused") || strings.Contains(log, "out of range") {
		t.Fatalf("a saved state was refused:\n%s", log)
	}
	var state string
	if err := conn.QueryRow(ctx, "SELECT argMax(state, version) FROM "+db+".job_state WHERE consumer_group = ? AND part = 'engine' AND job_id = ?",
		group, tr.JobID).Scan(&state); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(state, `"none_yet":true`) || strings.Contains(state, `"last_duration_ms":-1`) {
		t.Fatalf("the job's saved state does not say it has no checkpoint, or holds a -1: %s", state)
	}
	// The diagnosis went on across both restarts, and says the job has
	// no checkpoint.
	for i := range thirds {
		lo, hi := tr.ReadyAtMs+int64(i)*span, min(thirds[i], tr.StoppedAtMs)
		var n, said uint64
		if err := conn.QueryRow(ctx, "SELECT count(), countIf(visitParamExtractBool(evidence, 'no_checkpoint_yet')) FROM "+db+
			".findings FINAL WHERE job_id = ? AND cause = 'data_skew' AND task_name = ? AND subtask_index = ? AND window_start >= ? AND window_end <= ?",
			tr.JobID, tr.KeyedTaskName, int32(*tr.HotSubtask), lo, hi).Scan(&n, &said); err != nil {
			t.Fatal(err)
		}
		if n == 0 || said != n {
			t.Errorf("third %d: %d data_skew findings of %q subtask %d, %d of them saying there is no checkpoint; want some, all saying so",
				i+1, n, tr.KeyedTaskName, *tr.HotSubtask, said)
		}
	}
}

// captureRecord is one line of a capture with its event time.
type captureRecord struct {
	ts   int64
	line []byte
}

var captureTS = regexp.MustCompile(`"(?:timestamp|ts)":(\d+)`)

// captureRecords reads a gzipped JSON-lines capture file.
func captureRecords(t *testing.T, dir, name string) []captureRecord {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var out []captureRecord
	sc := bufio.NewScanner(gz)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := captureTS.FindSubmatch(sc.Bytes())
		if m == nil {
			t.Fatalf("%s: a line without a time: %s", name, sc.Bytes())
		}
		ts, err := strconv.ParseInt(string(m[1]), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, captureRecord{ts: ts, line: append([]byte(nil), sc.Bytes()...)})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// produceCapture writes the capture's lines of event time in [from,
// until) to the run's topics, keyed as the reporter and the sampler key
// them (one job, one partition).
func produceCapture(ctx context.Context, t *testing.T, brokers []string, prefix string, metrics, samples []captureRecord, from, until int64) {
	t.Helper()
	for _, x := range []struct {
		topic string
		recs  []captureRecord
	}{{prefix + "-metrics", metrics}, {prefix + "-samples", samples}} {
		w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: x.topic, Balancer: &kafka.Hash{}, BatchSize: 500, RequiredAcks: kafka.RequireAll}
		var msgs []kafka.Message
		for _, r := range x.recs {
			if r.ts >= from && r.ts < until {
				msgs = append(msgs, kafka.Message{Key: []byte("job"), Value: r.line})
			}
		}
		// A topic just created may not be known to the broker's metadata
		// yet: its first writes fail as unknown (retryable) until it is.
		err := w.WriteMessages(ctx, msgs...)
		for err != nil && kafkaclient.Retryable(err) && ctx.Err() == nil {
			err = w.WriteMessages(ctx, msgs...)
		}
		if err != nil {
			t.Fatalf("produce %d lines to %s: %v", len(msgs), x.topic, err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
