package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/simfeed"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
	"github.com/skewlens/skewlens/pipeline/simulate"
)

// BenchmarkRunFleetSustained runs `skewlens run` (a child process, with
// --memory-limit-mib 400) on a simulated fleet played at real time into
// the real broker, for SKEWLENS_BENCH_MINUTES (default 3) minutes of
// SKEWLENS_BENCH_SUBTASKS (default 100000) subtasks, writing to the real
// ClickHouse. Every 10 s it logs the consumer lag (messages behind the
// end of the topics), the RSS and the messages processed. It reports the
// largest lag and RSS, the RSS of the last third against the first
// third (flat is 1), and the detection latency: from the end of a window
// (event time, which is wall time here) to its rows in ClickHouse, median
// and p99 over every subtask_stats row and every finding. One iteration
// is the whole run, whatever b.N.
func BenchmarkRunFleetSustained(b *testing.B) {
	minutes, subtasks := envInt(b, "SKEWLENS_BENCH_MINUTES", 3), envInt(b, "SKEWLENS_BENCH_SUBTASKS", 100000)
	brokers := kafkatest.Start(b)
	chAddr := chtest.Start(b)
	kafkatest.CreateTopicConfigs(b, brokers,
		kafka.TopicConfig{Topic: "sustained-metrics", NumPartitions: 4, ReplicationFactor: 1},
		kafka.TopicConfig{Topic: "sustained-samples", NumPartitions: 4, ReplicationFactor: 1},
		kafka.TopicConfig{Topic: "sustained-dead", NumPartitions: 1, ReplicationFactor: 1})
	r := startRun(b, brokers, chAddr, "sustained", "sustained", "sustained", "--memory-limit-mib", "400")
	b.ResetTimer()
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(minutes+5)*time.Minute)
	defer cancel()
	// Wait until the instance is in the group, then play the fleet.
	testenv.Eventually(b, left(ctx), "run serving /metrics", func() bool { _, ok := r.messages(); return ok }, r.end())
	// The fleet starts now: each interval is written when its event time
	// comes, so a row's delay after its window's end is wall time.
	fc := simulate.DefaultFleetConfig()
	fc.Seed, fc.Subtasks, fc.Duration = 1, subtasks, time.Duration(minutes)*time.Minute
	fc.Start = time.Now().UnixMilli()
	fleet, err := simulate.NewFleet(fc)
	if err != nil {
		b.Fatal(err)
	}
	cfg := simfeed.DefaultConfig()
	cfg.Brokers, cfg.MetricsTopic, cfg.SamplesTopic, cfg.Jobs = brokers, "sustained-metrics", "sustained-samples", fleet.Jobs()
	feed, err := simfeed.New(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	fed := make(chan error, 1)
	go func() { fed <- feed.Run(ctx) }()

	type point struct {
		at       time.Duration
		lag, rss int
		msgs     int
	}
	var series []point
	began := time.Now()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	feeding := true
	for feeding || len(series) == 0 || series[len(series)-1].lag > 0 {
		select {
		case err := <-fed:
			if err != nil {
				b.Fatal(err)
			}
			feeding = false
			b.Logf("the feed ended after %s (%d messages; %s of simulated time)", time.Since(began).Round(time.Second), feed.Sent, fc.Duration)
		case <-tick.C:
			p := point{at: time.Since(began).Round(time.Second), lag: int(scrape(b, r.listen, "skewlens_kafka_consumer_lag")), rss: vmRSS(b, r.cmd.Process.Pid)}
			p.msgs, _ = r.messages()
			series = append(series, p)
			b.Logf("%6s: lag %8d messages, RSS %4d MB, %9d messages processed", p.at, p.lag, p.rss>>10, p.msgs)
			if !feeding && time.Since(began) > fc.Duration+3*time.Minute {
				b.Fatalf("the lag did not come down to 0 within 3 minutes of the feed's end")
			}
		case <-r.done:
			b.Fatalf("run exited:\n%s", r.logTail())
		}
	}
	// The windows close and land, but for the last ones, which wait for
	// records that never come.
	r.waitClosed(ctx, b, chAddr, fc.Start+(fc.Duration-30*time.Second).Milliseconds(), uint64(len(cfg.Jobs)))
	b.StopTimer()

	maxLag, maxRSS := 0, 0
	for _, p := range series {
		maxLag, maxRSS = max(maxLag, p.lag), max(maxRSS, p.rss)
	}
	third := max(1, len(series)/3)
	peak := func(ps []point) int {
		m := 0
		for _, p := range ps {
			m = max(m, p.rss)
		}
		return m
	}
	b.ReportMetric(float64(maxLag), "max-lag-msgs")
	b.ReportMetric(float64(maxRSS>>10), "max-RSS-MB")
	b.ReportMetric(float64(peak(series[len(series)-third:]))/float64(max(1, peak(series[:third]))), "RSS-last/first-third")

	conn, err := ch.Open(&ch.Options{Addr: []string{chAddr}})
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	var lat []float64
	for _, table := range []string{"subtask_stats", "findings"} {
		rows, err := conn.Query(ctx, "SELECT toUnixTimestamp(inserted_at) * 1000 - window_end FROM sustained."+table)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var ms int64
			if err := rows.Scan(&ms); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, float64(ms)/1000)
		}
		rows.Close()
	}
	if len(lat) == 0 {
		b.Fatal("no rows in ClickHouse")
	}
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2], "p50-detect-s")
	b.ReportMetric(lat[len(lat)*99/100], "p99-detect-s")
	b.Logf("detection latency over %d rows: p50 %.1f s, p99 %.1f s, max %.1f s (rows are stamped to the second)", len(lat), lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
}

// envInt reads a positive integer from the environment variable name, or
// returns def.
func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// vmRSS returns the resident set of process pid in kB.
func vmRSS(b *testing.B, pid int) int {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}
