package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/amtest"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
)

// TestMain stops the servers that tests started; tests that need none
// start none.
func TestMain(m *testing.M) {
	if os.Getenv(envChild) != "" {
		main() // the crash test's child process: act as skewlens
	}
	testenv.Main(m, stopFlinkEnv, kafkatest.Stop, chtest.Stop, amtest.Stop)
}

// TestRunEndToEnd runs `skewlens run` against a real Kafka broker and a
// real ClickHouse server, with two simulated incidents played at 50× into
// the broker, and checks the diagnoses that land in ClickHouse.
func TestRunEndToEnd(t *testing.T) {
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	db := "e2e_run"
	code, out, errOut := runCLI(t, "", "demo",
		"--brokers", strings.Join(brokers, ","), "--clickhouse-addr", chAddr, "--database", db,
		"--group", "e2e", "--topics", "e2e-metrics,e2e-samples", "--dead-letter-topic", "e2e-dead",
		"--listen", "127.0.0.1:0", "--simulate", "hot_key,slow_sink", "--speed", "50",
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
	// The terminal shows incidents as they open, not a line per window,
	// and each one is in the incidents table.
	var incidents, saturations uint64
	if err := conn.QueryRow(ctx, "SELECT uniqExact(id) FROM "+db+".incidents WHERE job_name = 'hot_key' AND cause = 'data_skew'").Scan(&incidents); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, "SELECT count() FROM "+db+".findings FINAL WHERE job_name = 'hot_key' AND cause = 'data_skew'").Scan(&saturations); err != nil {
		t.Fatal(err)
	}
	opened := regexp.MustCompile(`(?m)^\S+ \S+ UTC  opened  data_skew +hot_key \(\w+\)/`).FindAllString(out, -1)
	if incidents == 0 || uint64(len(opened)) != incidents || saturations <= incidents {
		t.Errorf("%d data_skew incidents in ClickHouse for %d findings, %d opened lines on stdout:\n%s", incidents, saturations, len(opened), out)
	}
	checkStartQueries(ctx, t, conn, db, out)
}

// checkStartQueries runs the queries `skewlens run` printed at start
// (stdout out) on database db: each answers rows, and they are findings
// alone, while the statistics are in subtask_stats.
func checkStartQueries(ctx context.Context, t *testing.T, conn ch.Conn, db, out string) {
	t.Helper()
	var queries []string
	for _, line := range strings.Split(out, "\n") {
		if q, ok := strings.CutPrefix(line, "  SELECT "); ok {
			queries = append(queries, "SELECT "+q)
		}
	}
	if len(queries) != 3 {
		t.Fatalf("%d queries printed at start, want 3:\n%s", len(queries), out)
	}
	for i, q := range queries {
		// The printed queries name tables without a database, as in the
		// printed clickhouse-client --database session.
		rows, err := conn.Query(ctx, strings.Replace(q, " FROM ", " FROM "+db+".", 1))
		if err != nil {
			t.Fatalf("query %d %q: %v", i+1, q, err)
		}
		n, kinds := 0, map[string]int{}
		for rows.Next() {
			n++
			if i == 0 { // kind, cause, job_name, task_name, subtask_index, count()
				var kind, cause, job, task string
				var sub int32
				var count uint64
				if err := rows.Scan(&kind, &cause, &job, &task, &sub, &count); err != nil {
					t.Fatalf("query %d: %v", i+1, err)
				}
				kinds[kind]++
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("query %d: %v", i+1, err)
		}
		rows.Close()
		if n == 0 {
			t.Errorf("query %d %q: no rows", i+1, q)
		}
		if i == 0 {
			t.Logf("query 1: %d rows by kind %v", n, kinds)
			if kinds["saturation"] == 0 || kinds["hot_key"] == 0 || kinds["subtask_stats"] != 0 || len(kinds) > 3 {
				t.Errorf("query 1: rows by kind %v, want findings alone (saturation, hot_key, salting_plan)", kinds)
			}
		}
	}
	var stats uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM "+db+".subtask_stats").Scan(&stats); err != nil {
		t.Fatal(err)
	}
	if stats == 0 {
		t.Error("no subtask_stats rows: statistics were not written apart")
	}
}

// TestRunDeadLetters: bad records go to the dead-letter topic with the
// reason in a header, and the good records around them are still
// diagnosed.
func TestRunDeadLetters(t *testing.T) {
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	topic, dlq := "dl-metrics", "dl-dead-letters"
	kafkatest.CreateTopics(t, brokers, topic, dlq)
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), RequiredAcks: kafka.RequireAll, BatchTimeout: 10 * time.Millisecond}
	defer w.Close()
	now := time.Now().UnixMilli()
	var msgs []kafka.Message
	for i := range 400 {
		msgs = append(msgs, kafka.Message{Topic: topic, Key: []byte("j"), Value: []byte(fmt.Sprintf(
			`{"ts":%d,"job_id":"j","task_name":"agg","key":"k%d","parallelism":4}`, now-60000+int64(i)*100, i%3))})
	}
	bad := []string{`{"ts":oops}`, `not a record at all`, `{"ts":1,"job_id":"j","task_name":"agg"}`}
	for i, b := range bad {
		msgs = append(msgs[:100*(i+1)], append([]kafka.Message{{Topic: topic, Key: []byte("j"), Value: []byte(b)}}, msgs[100*(i+1):]...)...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A new topic is invisible to the writer until its metadata refreshes.
	writeUntilVisible(ctx, t, w, msgs...)
	code, out, errOut := runCLI(t, "", "run", "--create-topics", "--brokers", strings.Join(brokers, ","), "--clickhouse-addr", chAddr,
		"--database", "e2e_dead", "--group", "e2e-dead", "--topics", topic, "--dead-letter-topic", dlq,
		"--listen", "127.0.0.1:0", "--duration", "12s", "--min-samples", "10", "--log-format", "json",
		// About 100 samples per window: hot keys judged without the
		// statistical margins, which need more to call a 33% key hot at
		// parallelism 4.
		"--hot-key-confidence", "0.5")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, tail([]byte(errOut)))
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: dlq, Partition: 0, MaxWait: 200 * time.Millisecond})
	defer r.Close()
	reasons := map[string]string{}
	for len(reasons) < len(bad) {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("read dead letters (have %v): %v", reasons, err)
		}
		for _, h := range m.Headers {
			if h.Key == "skewlens-reason" {
				reasons[string(m.Value)] = string(h.Value)
			}
		}
	}
	want := map[string]string{bad[0]: "invalid_json", bad[1]: "bad_line", bad[2]: "missing_field"}
	for v, reason := range want {
		if reasons[v] != reason {
			t.Errorf("dead letter %q: reason %q, want %q", v, reasons[v], reason)
		}
		// The log says so, with the count, reason and topic.
		if line := `"msg":"lines dead-lettered","component":"kafkasrc.deadletters","count":1,"total":1,"reason":"` + reason + `","topic":"` + topic + `"`; !strings.Contains(errOut, line) {
			t.Errorf("the log lacks %s:\n%s", line, tail([]byte(errOut)))
		}
	}
	// Three keys share the samples evenly: each is a hot key in ClickHouse.
	conn, err := ch.Open(&ch.Options{Addr: []string{chAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var keys uint64
	if err := conn.QueryRow(ctx, "SELECT uniqExact(key) FROM e2e_dead.hot_keys FINAL").Scan(&keys); err != nil {
		t.Fatal(err)
	}
	if keys != 3 {
		t.Errorf("%d distinct hot keys in ClickHouse, want 3 (good records around bad ones lost?)", keys)
	}
}

// TestRunSurvivesClickHouseOutage stops ClickHouse in the middle of a
// run, once windows were written and their offsets committed, until the
// run has retried its write twice. The pipeline must pause, retry, carry
// on when it is back, and lose no window.
func TestRunSurvivesClickHouseOutage(t *testing.T) {
	brokers := kafkatest.Start(t)
	server := chtest.StartPrivate(t)
	chAddr := server.Addr

	r := startCLI(t, "demo", "--brokers", strings.Join(brokers, ","), "--clickhouse-addr", chAddr,
		"--database", "e2e_outage", "--group", "e2e-outage", "--topics", "outage-metrics,outage-samples",
		"--dead-letter-topic", "outage-dead", "--listen", "127.0.0.1:0", "--simulate", "hot_key",
		"--speed", "20", "--duration", "45s", "--quiet", "--log-format", "json")
	begin := time.Now()
	ops := r.waitCommits(t, 3)
	if err := server.Halt(); err != nil {
		t.Error(err)
	}
	halted := time.Now()
	testenv.Eventually(t, time.Minute, "run retrying its write twice", func() bool {
		n, _ := scrapeSum(ops, "skewlens_write_retries_total")
		return n >= 2
	}, r.end())
	if err := server.Resume(); err != nil {
		t.Error(err)
	}
	t.Logf("ClickHouse halted %s into the run, for %s", halted.Sub(begin).Round(100*time.Millisecond), time.Since(halted).Round(100*time.Millisecond))
	code, _, errOut := r.wait()
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, tail([]byte(errOut)))
	}
	if strings.Contains(errOut, `"late":0,`) == false {
		t.Errorf("records were late:\n%s", tail([]byte(errOut)))
	}
	if !strings.Contains(errOut, "consumption paused") {
		t.Errorf("the outage left no trace in the log:\n%s", tail([]byte(errOut)))
	}
	// Nor does its end: the write that went through says so.
	if !strings.Contains(errOut, `"level":"INFO","msg":"recovered","op":"`) {
		t.Errorf("the sink's recovery left no trace in the log:\n%s", tail([]byte(errOut)))
	}
	n := assertNoLostWindow(t, chAddr, "e2e_outage", errOut)
	t.Logf("hot key in all %d windows across the outage", n)
}

// writeUntilVisible writes msgs with w, again while the error is one to
// retry: a new topic is invisible to a writer until its metadata
// refreshes.
func writeUntilVisible(ctx context.Context, t *testing.T, w *kafka.Writer, msgs ...kafka.Message) {
	t.Helper()
	var err error
	testenv.Eventually(t, left(ctx), "the topic visible to the writer", func() bool {
		err = w.WriteMessages(ctx, msgs...)
		return !kafkaclient.Retryable(err)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestMigrateTwice(t *testing.T) {
	addr := chtest.Start(t)
	for range 2 {
		code, out, errOut := runCLI(t, "", "migrate", "--clickhouse-addr", addr, "--database", "e2e_migrate")
		if code != 0 || !strings.Contains(out, "schema of e2e_migrate is current (ClickHouse 18.16") {
			t.Fatalf("exit %d: %s %s", code, out, tail([]byte(errOut)))
		}
	}
}

// TestRunSurvivesBrokerRestart restarts the Kafka broker in the middle of
// a run, once windows were written and their offsets committed; the
// pipeline (and the simulator feeding it) reconnect, commit again, and no
// window is lost.
func TestRunSurvivesBrokerRestart(t *testing.T) {
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	r := startCLI(t, "demo", "--brokers", strings.Join(brokers, ","), "--clickhouse-addr", chAddr,
		"--database", "e2e_restart", "--group", "e2e-restart", "--topics", "restart-metrics,restart-samples",
		"--dead-letter-topic", "restart-dead", "--listen", "127.0.0.1:0", "--simulate", "hot_key",
		"--speed", "20", "--duration", "50s", "--quiet", "--log-format", "json")
	begin := time.Now()
	ops := r.waitCommits(t, 3)
	t.Logf("the broker restarts %s into the run", time.Since(begin).Round(100*time.Millisecond))
	kafkatest.Restart(t)
	before, _ := scrapeSum(ops, "skewlens_offset_commits_total")
	testenv.Eventually(t, time.Minute, "run committing after the restart", func() bool {
		n, _ := scrapeSum(ops, "skewlens_offset_commits_total")
		return n > before
	}, r.end())
	code, _, errOut := r.wait()
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, tail([]byte(errOut)))
	}
	n := assertNoLostWindow(t, chAddr, "e2e_restart", errOut)
	t.Logf("hot key in all %d windows across the broker restart", n)
}

// assertNoLostWindow checks that the hot_key job's hot key is in database
// db for every window from the first to the last (at least 30 of them), as
// a run that lost nothing gives, and returns the number of windows.
func assertNoLostWindow(t *testing.T, chAddr, db, log string) uint64 {
	t.Helper()
	conn, err := ch.Open(&ch.Options{Addr: []string{chAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var first, last int64
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT min(window_start), max(window_start), uniqExact(window_start) FROM "+db+
		".hot_keys FINAL WHERE job_name = 'hot_key'").Scan(&first, &last, &n); err != nil {
		t.Fatal(err)
	}
	if want := uint64((last-first)/10000 + 1); n != want || n < 30 {
		t.Fatalf("hot key found in %d windows between %d and %d, want %d (and at least 30)\n%s", n, first, last, want, tail([]byte(log)))
	}
	return n
}

// TestTopOnce draws one frame of `skewlens top` from a database the
// pipeline wrote (after a short run of the hot_key incident) and exits 0;
// on a database that does not exist it exits 1 with the error.
func TestTopOnce(t *testing.T) {
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	code, _, errOut := runCLI(t, "", "demo", "--brokers", strings.Join(brokers, ","), "--clickhouse-addr", chAddr,
		"--database", "e2e_top", "--group", "e2e-top", "--topics", "top-metrics,top-samples", "--dead-letter-topic", "top-dead",
		"--listen", "127.0.0.1:0", "--simulate", "hot_key", "--speed", "50", "--duration", "15s", "--quiet", "--log-format", "json")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, tail([]byte(errOut)))
	}
	code, out, errOut := runCLI(t, "", "top", "--once", "--clickhouse-addr", chAddr, "--database", "e2e_top", "--color", "never")
	if code != 0 {
		t.Fatalf("top: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"HOT KEYS", `"u42"`, "hot_key"} {
		if !strings.Contains(out, want) {
			t.Errorf("top frame lacks %q:\n%s", want, out)
		}
	}
	code, _, errOut = runCLI(t, "", "top", "--once", "--clickhouse-addr", chAddr, "--database", "no_such_db", "--color", "never")
	if code != 1 || !strings.Contains(errOut, "no_such_db") {
		t.Errorf("top on a missing database: exit %d, stderr %s", code, errOut)
	}
}
