package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkFlinkHotKeyDetection measures issue 20's figure on the closed
// loop with a real Flink job: from the moment a hot key starts to the
// first data_skew finding on the keyed task in ClickHouse (polled every
// 200 ms). Each iteration starts its own job (hot_key_onset: a healthy
// minute, then the hot key, with the closed loop test's load: 1400
// records/s, 70 % of them the hot key) and its own `skewlens run` (group,
// topics and database of its own), without salting; the broker and
// ClickHouse are shared. Each run takes about two minutes, so run it as
//
//	go test -run '^$' -bench FlinkHotKeyDetection -benchtime 5x -timeout 60m ./cmd/skewlens/
//
// The testing package runs every benchmark once with b.N = 1 before the
// b.N it was asked for; that run is a real measurement too, so the
// metrics (p50, p95, max in seconds, nearest rank) are over every run of
// the sub-benchmark in this process, which "runs" counts: 6 with
// -benchtime 5x. Every run's figure is logged.
//
// defaults: `skewlens run`'s defaults, the job reporting every 5 s (as the
// loop tests do). fast: --window 5s --out-of-orderness 2s --sustain 5s,
// reports every second (docs/detection.md, "Detecting within seconds").
func BenchmarkFlinkHotKeyDetection(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: the closed loop needs a Kafka broker, ClickHouse and a Flink MiniCluster")
	}
	variants := []struct {
		name     string
		windowMs int64
		runArgs  []string
		jobArgs  []string
	}{
		{"defaults", 10000, nil, []string{"--report-interval", "5s"}},
		{"fast", 5000, []string{"--window", "5s", "--out-of-orderness", "2s", "--sustain", "5s"}, []string{"--report-interval", "1s"}},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			var runs []float64
			gaps := 0
			for i := 0; i < b.N; i++ {
				d, g := hotKeyDetection(b, v.name, v.windowMs, v.runArgs, v.jobArgs)
				runs = addDetection(b.Name(), d.Seconds())
				gaps += g
			}
			b.ReportMetric(0, "ns/op") // the wall time of a run says nothing
			b.ReportMetric(float64(len(runs)), "runs")
			b.ReportMetric(percentile(runs, 0.50), "p50-s")
			b.ReportMetric(percentile(runs, 0.95), "p95-s")
			b.ReportMetric(slices.Max(runs), "max-s")
			b.ReportMetric(float64(gaps), "gap-windows")
			// To stderr: the testing package cuts a benchmark's log after
			// some lines, and this is the line that matters.
			fmt.Fprintf(os.Stderr, "%s: %d runs, detection %s s\n", b.Name(), len(runs), fmtSeconds(runs))
		})
	}
}

// detections pools the figures of a sub-benchmark's runs over its b.N
// rounds (see BenchmarkFlinkHotKeyDetection), by the benchmark's name.
var detections struct {
	mu   sync.Mutex
	runs map[string][]float64
}

func addDetection(name string, s float64) []float64 {
	detections.mu.Lock()
	defer detections.mu.Unlock()
	if detections.runs == nil {
		detections.runs = map[string][]float64{}
	}
	detections.runs[name] = append(detections.runs[name], s)
	return slices.Clone(detections.runs[name])
}

// loopSeq numbers the loops of the benchmark, for their names.
var loopSeq struct {
	mu sync.Mutex
	n  int
}

// hotKeyDetection runs one closed loop of hot_key_onset and returns the
// time from the hot key's start (the job's hot_from_ms) to the first
// data_skew finding on the keyed task in ClickHouse, and how many of the
// windows (of windowMs) in the 30 s of event time after that finding's
// have none on its subtask: with the hot key on for good, each is a flap.
func hotKeyDetection(b *testing.B, variant string, windowMs int64, runArgs, jobArgs []string) (time.Duration, int) {
	b.Helper()
	loopSeq.mu.Lock()
	loopSeq.n++
	n := loopSeq.n
	loopSeq.mu.Unlock()
	name := fmt.Sprintf("bench_%s_%d_%d", variant, os.Getpid(), n)
	l := startLoopWith(b, loopOptions{scenario: "hot_key_onset", name: name, runArgs: runArgs,
		jobArgs: append([]string{"--hot-from", "60s", "--hot-key", "customer-42", "--hot-share", "0.7", "--rate", "1400"}, jobArgs...)})
	defer l.stop()
	var job struct {
		HotFromMs        int64 `json:"hot_from_ms"`
		ReportIntervalMs int64 `json:"report_interval_ms"`
	}
	raw, err := os.ReadFile(filepath.Join(l.out, "job.json"))
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(raw, &job); err != nil || job.HotFromMs == 0 {
		b.Fatalf("job.json: hot_from_ms %d (%v):\n%s", job.HotFromMs, err, raw)
	}
	hotFrom := time.UnixMilli(job.HotFromMs)
	det, at := l.firstFinding(context.Background(), "a data_skew finding on the keyed task", func(f loopFinding) bool {
		return f.cause == "data_skew" && f.task == keyedTask
	})
	d := at.Sub(hotFrom)
	if d < 0 {
		b.Fatalf("data_skew on %q #%d (window %s) before the hot key started at %s: a false positive",
			det.task, det.subtask, time.UnixMilli(det.windowStart).Format("15:04:05.000"), hotFrom.Format("15:04:05.000"))
	}
	// Where the time went: the hot key's start to the end of the first
	// window found skewed, and from that end to the row in ClickHouse.
	var windowEnd int64
	if err := l.conn.QueryRow(context.Background(), "SELECT max(window_end) FROM "+l.db+
		".findings WHERE job_id = ? AND window_start = ?", l.job.JobID(), det.windowStart).Scan(&windowEnd); err != nil {
		b.Logf("window end: %v", err)
	}
	b.Logf("%s run %d: data_skew on #%d %.1f s after the hot key started (%s); window %s-%s: its end %.1f s after the start, the row %.1f s after its end; reports every %d ms",
		variant, n, det.subtask, d.Seconds(), hotFrom.Format("15:04:05.000"), time.UnixMilli(det.windowStart).Format("15:04:05"),
		time.UnixMilli(windowEnd).Format("15:04:05"), float64(windowEnd-job.HotFromMs)/1000, float64(at.UnixMilli()-windowEnd)/1000,
		job.ReportIntervalMs)
	return d, flaps(b, l, det, windowMs)
}

// flaps waits until skewlens has closed the windows of the 30 s of event
// time after det's, and counts those without a data_skew finding on det's
// subtask.
func flaps(b *testing.B, l *loop, det loopFinding, windowMs int64) int {
	b.Helper()
	ctx := context.Background()
	until := det.windowStart + 30000
	l.waitFor(time.Minute, "the windows after the first data_skew closed", func() bool { return l.closedUpTo(ctx) >= until+windowMs })
	have := map[int64]bool{}
	for _, f := range l.findings(ctx, "saturation") {
		if f.cause == "data_skew" && f.task == det.task && f.subtask == det.subtask {
			have[f.windowStart] = true
		}
	}
	var missing []string
	for ws := det.windowStart + windowMs; ws <= until; ws += windowMs {
		if !have[ws] {
			missing = append(missing, time.UnixMilli(ws).Format("15:04:05"))
		}
	}
	if len(missing) > 0 {
		b.Logf("no data_skew on #%d in the windows of %s after the first", det.subtask, strings.Join(missing, ", "))
	}
	return len(missing)
}

// percentile is the nearest-rank p-quantile of xs.
func percentile(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(i, 0)]
}

// fmtSeconds lists xs with one decimal.
func fmtSeconds(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.1f", x)
	}
	return strings.Join(parts, ", ")
}
