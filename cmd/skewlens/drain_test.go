package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
)

// TestRunDrainsOnStop: `run --duration` against the real broker and
// ClickHouse stops with the findings of every closed window in ClickHouse:
// as many findings and subtask_stats rows as the run says it wrote, the
// hot key in every window from its first to its last, the drain reported
// done, and nothing reported unwritten.
func TestRunDrainsOnStop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kafka broker and ClickHouse")
	}
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	const db = "e2e_drain"
	code, _, errOut := runCLI(t, "", "demo", "--brokers", strings.Join(brokers, ","), "--clickhouse-addr", chAddr,
		"--database", db, "--group", "e2e-drain", "--topics", "drain-metrics,drain-samples",
		"--dead-letter-topic", "drain-dead", "--listen", "127.0.0.1:0", "--simulate", "hot_key,slow_sink",
		"--speed", "20", "--duration", "22s", "--quiet", "--log-format", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, tail([]byte(errOut)))
	}
	if !strings.Contains(errOut, `"msg":"drained`) || strings.Contains(errOut, "not written") {
		t.Fatalf("the log does not show a complete drain:\n%s", tail([]byte(errOut)))
	}
	m := regexp.MustCompile(`"msg":"stopped","findings_written":(\d+)`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no stopped line with findings_written:\n%s", tail([]byte(errOut)))
	}
	written, _ := strconv.ParseUint(m[1], 10, 64)

	conn, err := ch.Open(&ch.Options{Addr: []string{chAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Each finding is one row of findings, or (a subtask_stats finding)
	// one of subtask_stats; FINAL folds rows written twice.
	var findings, stats uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM "+db+".findings FINAL").Scan(&findings); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT count() FROM "+db+".subtask_stats FINAL").Scan(&stats); err != nil {
		t.Fatal(err)
	}
	if written == 0 || findings+stats != written {
		t.Fatalf("ClickHouse holds %d findings and %d subtask_stats rows, the run wrote %d findings\n%s",
			findings, stats, written, tail([]byte(errOut)))
	}
	var first, last int64
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT min(window_start), max(window_start), uniqExact(window_start) FROM "+db+
		".hot_keys FINAL WHERE job_name = 'hot_key'").Scan(&first, &last, &n); err != nil {
		t.Fatal(err)
	}
	if want := uint64((last-first)/10000 + 1); n != want || n < 10 {
		t.Fatalf("hot key found in %d windows between %d and %d, want %d (and at least 10)", n, first, last, want)
	}
	t.Logf("%d findings written, the hot key in all %d windows", written, n)
}
