package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/skewlens/skewlens/deploy/testenv/chtest"
	"github.com/skewlens/skewlens/deploy/testenv/kafkatest"
)

// TestMain stops the servers that tests started; tests that need none
// start none.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, stop := range []func() error{kafkatest.Stop, chtest.Stop} {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

// TestRunEndToEnd runs `skewlens run` against a real Kafka broker and a
// real ClickHouse server, with two simulated incidents played at 50× into
// the broker, and checks the diagnoses that land in ClickHouse.
func TestRunEndToEnd(t *testing.T) {
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	db := "e2e_run"
	code, out, errOut := runCLI(t, "", "run",
		"--brokers", strings.Join(brokers, ","), "--clickhouse-addr", chAddr, "--database", db,
		"--group", "e2e", "--listen", "127.0.0.1:0", "--simulate", "hot_key,slow_sink", "--speed", "50",
		"--duration", "25s", "--log-format", "json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	conn, err := ch.Open(&ch.Options{Addr: []string{chAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := conn.Query(ctx, "SELECT job_name, cause, task_name, subtask_index, count() FROM "+db+
		".findings FINAL WHERE kind = 'saturation' GROUP BY job_name, cause, task_name, subtask_index ORDER BY job_name, cause")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var job, cause, task string
		var sub int32
		var n uint64
		if err := rows.Scan(&job, &cause, &task, &sub, &n); err != nil {
			t.Fatal(err)
		}
		if prev, ok := got[job]; ok && prev != cause {
			t.Errorf("job %s has causes %s and %s", job, prev, cause)
		}
		got[job] = cause
		t.Logf("%s: %s on %s #%d in %d windows", job, cause, task, sub, n)
	}
	if got["hot_key"] != "data_skew" || got["slow_sink"] != "slow_subtask" {
		t.Fatalf("causes in ClickHouse %v, want hot_key→data_skew and slow_sink→slow_subtask\nstderr tail:\n%s", got, tail([]byte(errOut)))
	}
	var hot uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM "+db+".hot_keys FINAL WHERE job_name = 'hot_key' AND key = 'u42'").Scan(&hot); err != nil {
		t.Fatal(err)
	}
	if hot == 0 {
		t.Error("no hot_keys rows for u42")
	}
}
