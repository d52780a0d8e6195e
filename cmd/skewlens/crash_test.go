package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"reflect"
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

// envChild makes the test binary act as the skewlens binary (see
// TestMain), so the crash test can SIGKILL a real process.
const envChild = "SKEWLENS_TEST_RUN_MAIN"

// TestRunSIGKILLEqualsUninterrupted kills `skewlens run` with SIGKILL at
// random points of a backlog of four simulated incidents and restarts it,
// three times, while a second pipeline (its own consumer group and
// database) reads the same records uninterrupted. In the end both
// databases hold the same rows in every finding table: no lost window and
// no double count. SKEWLENS_CRASH_SEED repeats a run's kill points.
func TestRunSIGKILLEqualsUninterrupted(t *testing.T) {
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SKEWLENS_CRASH_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("kill points from SKEWLENS_CRASH_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	start, total := produceBacklog(t, brokers, "crash", 4)
	// Compare the windows every run closes for certain: the last ones
	// stay open, waiting for records that never come.
	cutoff := start + (8*time.Minute - 30*time.Second).Milliseconds()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	ref := startRun(t, brokers, chAddr, "crash", "crash_ref", "crash_ref")
	kills := 0
	crash := startRun(t, brokers, chAddr, "crash", "crash_kill", "crash_kill")
	for range 3 {
		// Kill after a random share of the backlog has been processed by
		// this incarnation (it resumes from the last commit).
		target := int(float64(total) * (0.1 + 0.3*rng.Float64()))
		if !crash.waitMessages(ctx, t, target) {
			break // ran out of backlog before the kill point
		}
		crash.kill(t)
		kills++
		t.Logf("kill %d after %d messages", kills, target)
		crash = startRun(t, brokers, chAddr, "crash", "crash_kill", "crash_kill")
	}
	if kills < 2 {
		n, _ := crash.messages()
		t.Fatalf("only %d kills landed during the run (%d messages processed by the last):\n%s", kills, n, crash.logTail())
	}
	var settled []map[string]int64
	for _, r := range []*runProc{ref, crash} {
		r.waitClosed(ctx, t, chAddr, cutoff, 4)
		settled = append(settled, r.settle(ctx, t, chAddr))
		r.kill(t)
	}
	assertSameTables(ctx, t, chAddr, "crash_ref", "crash_kill", cutoff, fmt.Sprintf("after %d kills", kills))
	// Incidents change up to the last window a run closed. When both runs
	// settled on the same windows, every incident must be the same;
	// otherwise only as of a minute before the cutoff.
	asOf := cutoff - time.Minute.Milliseconds()
	if maps.Equal(settled[0], settled[1]) {
		asOf = math.MaxInt64
	} else {
		t.Logf("the runs settled on different windows (%v, %v): incidents compared as of %d", settled[0], settled[1], asOf)
	}
	assertSameIncidents(ctx, t, chAddr, "crash_ref", "crash_kill", asOf, fmt.Sprintf("after %d kills", kills))
}

// settle waits until the run's saved engine state stops moving (the
// same for 3 s, at most a minute) and returns each job's closed_up_to.
// The quiet time is the criterion: nothing marks the last change.
func (r *runProc) settle(ctx context.Context, t *testing.T, chAddr string) map[string]int64 {
	t.Helper()
	conn, err := ch.Open(&ch.Options{Addr: []string{chAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	read := func() map[string]int64 {
		out := map[string]int64{}
		rows, err := conn.Query(ctx, "SELECT job_id, visitParamExtractInt(argMax(state, version), 'closed_up_to') AS c FROM "+r.db+
			".job_state WHERE consumer_group = ? AND part = 'engine' GROUP BY job_id HAVING c != 0", r.group)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var job string
			var c int64
			if err := rows.Scan(&job, &c); err != nil {
				t.Fatal(err)
			}
			out[job] = c
		}
		return out
	}
	last, since, begin := read(), time.Now(), time.Now()
	testenv.Eventually(t, 2*time.Minute, r.db+": the saved engine state settled", func() bool {
		if cur := read(); !maps.Equal(cur, last) {
			last, since = cur, time.Now()
		}
		return time.Since(since) >= 3*time.Second || time.Since(begin) >= time.Minute
	})
	return last
}

// assertSameIncidents checks the incidents tables of databases want and
// got. Both runs closed every window before the cutoff, so as of asOf, a
// minute earlier (or at any time, when both closed the same windows),
// they agree on: every incident that started before asOf
// (its id), and the final row (FINAL, without the write time) of every
// incident whose latest change is at most asOf (closed by then: an
// incident absent for the hysteresis is closed as soon as a later window
// has a finding). Later changes depend on how far each run got before it
// was stopped. Merges may drop older rows, so nothing else is compared.
func assertSameIncidents(ctx context.Context, t *testing.T, chAddr, wantDB, gotDB string, asOf int64, what string) {
	t.Helper()
	conn, err := ch.Open(&ch.Options{Addr: []string{chAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ids := func(db string) []string {
		var out []string
		rows, err := conn.Query(ctx, "SELECT DISTINCT id FROM "+db+".incidents WHERE incident_start < ? ORDER BY id", asOf)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			out = append(out, id)
		}
		return out
	}
	wantIDs, gotIDs := ids(wantDB), ids(gotDB)
	if len(wantIDs) < 3 {
		t.Fatalf("incidents: %d started before %d in %s: the comparison needs several", len(wantIDs), asOf, wantDB)
	}
	if !slices.Equal(gotIDs, wantIDs) {
		t.Errorf("incident ids %s: %v, %s has %v", what, gotIDs, wantDB, wantIDs)
	}
	want := finalIncidents(ctx, t, conn, wantDB, asOf)
	got := finalIncidents(ctx, t, conn, gotDB, asOf)
	if len(want) == 0 {
		t.Fatalf("incidents: none final by %d in %s", asOf, wantDB)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("incidents %s: %d closed by %d, %s has %d; first difference:\n%s", what, len(got), asOf, wantDB, len(want), firstDiff(got, want))
	} else {
		t.Logf("incidents: %d started, %d final rows equal %s", len(gotIDs), len(got), what)
	}
}

// finalIncidents returns the rows of db.incidents (FINAL) whose version
// is at most asOf, without inserted_at, sorted.
func finalIncidents(ctx context.Context, t *testing.T, conn ch.Conn, db string, asOf int64) []string {
	t.Helper()
	rows, err := conn.Query(ctx, "SELECT * FROM "+db+".incidents FINAL WHERE version <= ?", uint64(asOf))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols := rows.Columns()
	var out []string
	for rows.Next() {
		ptrs := make([]any, len(cols))
		for i, ct := range rows.ColumnTypes() {
			ptrs[i] = reflect.New(ct.ScanType()).Interface()
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for i, c := range cols {
			if c != "inserted_at" {
				fmt.Fprintf(&b, "%s=%v ", c, reflect.ValueOf(ptrs[i]).Elem().Interface())
			}
		}
		out = append(out, b.String())
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// produceBacklog writes jobs simulated incidents (8 minutes each, started
// an hour ago) into the topics prefix-metrics and prefix-samples, created
// with 4 partitions, and returns the start time and the record count.
func produceBacklog(t *testing.T, brokers []string, prefix string, jobs int) (start int64, records int) {
	t.Helper()
	start, feed, _ := jobsFeed(t, brokers, prefix, jobs, 1e6, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	produced := time.Now()
	if err := feed.Run(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records in the backlog, produced in %s", feed.Sent, time.Since(produced).Round(time.Millisecond))
	return start, feed.Sent
}

// jobsFeed creates the topics prefix-metrics, prefix-samples and
// prefix-dead with 4 partitions each and returns a feed, not yet run, of
// jobs simulated incidents (8 minutes each, started an hour ago) into
// them, played at speed after the first backlog of simulated time (see
// simfeed.Config), their start time and how many records it writes.
func jobsFeed(t *testing.T, brokers []string, prefix string, jobs int, speed float64, backlog time.Duration) (start int64, feed *simfeed.Feed, records int) {
	t.Helper()
	createRunTopics(t, brokers, prefix)
	start = time.Now().Add(-time.Hour).Truncate(10 * time.Second).UnixMilli()
	var cfgs []simulate.Config
	scenarios := []simulate.Scenario{simulate.HotKey, simulate.SlowSink, simulate.RotatingHotKey, simulate.CheckpointTimeout,
		simulate.UnderProvisioned, simulate.Healthy}
	for i, s := range scenarios[:jobs] {
		cfgs = append(cfgs, simulate.Config{Scenario: s, Seed: uint64(i + 1), Start: start, JobName: string(s),
			Duration: 8 * time.Minute, MetricFormat: "mixed", Naming: "mixed"})
	}
	feed, err := simfeed.New(simfeed.Config{Brokers: brokers, MetricsTopic: prefix + "-metrics", SamplesTopic: prefix + "-samples",
		Speed: speed, Backlog: backlog, Jobs: cfgs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The feed writes a record per line of the simulation.
	var buf []byte
	for _, cfg := range cfgs {
		g, err := simulate.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for ok := true; ok; {
			buf, ok = g.Next(buf[:0])
			records += bytes.Count(buf, []byte("\n"))
		}
	}
	return start, feed, records
}

// createRunTopics creates the topics startRun's instances read and write
// (prefix-metrics, prefix-samples, prefix-dead), with 4 partitions each.
func createRunTopics(t *testing.T, brokers []string, prefix string) {
	t.Helper()
	var tcs []kafka.TopicConfig
	for _, n := range []string{"-metrics", "-samples", "-dead"} {
		tcs = append(tcs, kafka.TopicConfig{Topic: prefix + n, NumPartitions: 4, ReplicationFactor: 1})
	}
	kafkatest.CreateTopicConfigs(t, brokers, tcs...)
}

// assertSameTables checks that every finding table holds the same rows in
// databases want and got for windows before cutoff (FINAL, without the
// write version and time), and no duplicate keys in got.
func assertSameTables(ctx context.Context, t *testing.T, chAddr, wantDB, gotDB string, cutoff int64, what string) {
	t.Helper()
	conn, err := ch.Open(&ch.Options{Addr: []string{chAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, table := range []string{"findings", "hot_keys", "subtask_stats", "salting_plans"} {
		want := tableRows(ctx, t, conn, wantDB, table, cutoff)
		got := tableRows(ctx, t, conn, gotDB, table, cutoff)
		if len(want) == 0 {
			t.Fatalf("%s: no rows in %s", table, wantDB)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s: %d rows, %s has %d; first difference:\n%s", table, what, len(got), wantDB, len(want), firstDiff(got, want))
		} else {
			t.Logf("%s: %d rows equal %s", table, len(got), what)
		}
		var dups int64
		q := "SELECT count() - uniqExact(job_id, task_name, window_start, subtask_index" + extraKey(table) + ") FROM " + gotDB + "." + table + " FINAL"
		if err := conn.QueryRow(ctx, q).Scan(&dups); err != nil {
			t.Fatal(err)
		}
		if dups != 0 {
			t.Errorf("%s: %d duplicate rows", table, dups)
		}
	}
}

func extraKey(table string) string {
	switch table {
	case "findings":
		return ", kind, cause, key"
	case "hot_keys":
		return ", key"
	}
	return ""
}

// tableRows returns the rows of db.table (FINAL) for windows before
// cutoff, without the write version and time, as sorted strings.
func tableRows(ctx context.Context, t *testing.T, conn ch.Conn, db, table string, cutoff int64) []string {
	t.Helper()
	rows, err := conn.Query(ctx, "SELECT * FROM "+db+"."+table+" FINAL WHERE window_start < ?", cutoff)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i, ct := range rows.ColumnTypes() {
			ptrs[i] = reflect.New(ct.ScanType()).Interface()
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for i, c := range cols {
			if c == "version" || c == "inserted_at" {
				continue
			}
			vals[i] = reflect.ValueOf(ptrs[i]).Elem().Interface()
			fmt.Fprintf(&b, "%s=%v ", c, vals[i])
		}
		out = append(out, b.String())
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return "got  " + got[i] + "\nwant " + want[i]
		}
	}
	if len(got) > len(want) {
		return "extra " + got[len(want)]
	}
	if len(want) > len(got) {
		return "missing " + want[len(got)]
	}
	return ""
}

// runProc is one `skewlens run` process.
type runProc struct {
	name              string // of its log file
	db, group, listen string
	cmd               *exec.Cmd
	done              chan struct{}
	log               *os.File
}

// startRun starts `skewlens run` on the topics prefix-metrics and
// prefix-samples in consumer group group, writing to database db, with
// the flags extra added.
func startRun(t testing.TB, brokers []string, chAddr, prefix, group, db string, extra ...string) *runProc {
	t.Helper()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	listen := "127.0.0.1:" + strconv.Itoa(port)
	args := []string{"run", "--create-topics", "--brokers", strings.Join(brokers, ","), "--clickhouse-addr", chAddr,
		"--database", db, "--group", group, "--topics", prefix + "-metrics," + prefix + "-samples", "--dead-letter-topic", prefix + "-dead",
		"--plans-topic", prefix + "-plans-" + db, "--listen", listen, "--quiet", "--log-format", "json"}
	r := startChild(t, db, append(args, extra...)...)
	r.db, r.group, r.listen = db, group, listen
	return r
}

// startChild starts the skewlens binary (this test binary, see TestMain)
// with args, logging to a file named after name; the test's cleanup kills
// it.
func startChild(t testing.TB, name string, args ...string) *runProc {
	t.Helper()
	// SKEWLENS_TEST_LOGS names a directory that keeps the children's logs
	// after the test (the temporary one is removed), to read a failure.
	dir := t.TempDir()
	if d := os.Getenv("SKEWLENS_TEST_LOGS"); d != "" {
		dir = d
	}
	logf, err := os.CreateTemp(dir, name+"-*.log")
	if err != nil {
		t.Fatal(err)
	}
	r := &runProc{name: name, done: make(chan struct{}), log: logf}
	r.cmd = exec.Command(os.Args[0], args...)
	r.cmd.Env = append(os.Environ(), envChild+"=1")
	r.cmd.Stdout, r.cmd.Stderr = logf, logf
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() { _ = r.cmd.Process.Kill(); <-r.done })
	return r
}

// messages reads skewlens_messages_total from the process's /metrics.
func (r *runProc) messages() (int, bool) {
	n, ok := scrapeSum(r.listen, "skewlens_messages_total")
	return int(n), ok
}

// waitMessages waits until the process has processed n messages, and
// reports false if it stops making progress first (backlog drained: no
// message for 20 s). It fails t when the process exits or ctx ends first.
func (r *runProc) waitMessages(ctx context.Context, t *testing.T, n int) bool {
	t.Helper()
	last, lastChange, reached := -1, time.Now(), false
	testenv.Eventually(t, left(ctx), fmt.Sprintf("%s: %d messages processed", r.name, n), func() bool {
		got, ok := r.messages()
		if reached = ok && got >= n; reached {
			return true
		}
		if got != last {
			last, lastChange = got, time.Now()
		}
		return got > 0 && time.Since(lastChange) > 20*time.Second
	}, r.end())
	return reached
}

// waitClosed waits until the process's group has saved engine state for
// jobs jobs with the windows before cutoff closed.
func (r *runProc) waitClosed(ctx context.Context, t testing.TB, chAddr string, cutoff int64, jobs uint64) {
	t.Helper()
	conn, err := ch.Open(&ch.Options{Addr: []string{chAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var n uint64
	var low int64
	testenv.Eventually(t, left(ctx), fmt.Sprintf("%s: the windows before %d closed", r.db, cutoff), func() bool {
		err = conn.QueryRow(ctx, "SELECT count(), min(c) FROM (SELECT job_id, visitParamExtractInt(argMax(state, version), 'closed_up_to') AS c FROM "+
			r.db+".job_state WHERE consumer_group = ? AND part = 'engine' GROUP BY job_id HAVING c != 0)", r.group).Scan(&n, &low)
		if err == nil && n == jobs && low >= cutoff {
			return true
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: windows before %d not closed in time (jobs %d, closed up to %d, err %v):\n%s", r.db, cutoff, n, low, err, r.logTail())
		}
		return false
	}, r.end())
}

func (r *runProc) kill(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-r.done
}

func (r *runProc) logTail() string {
	if _, err := r.log.Seek(0, io.SeekStart); err != nil {
		return err.Error()
	}
	b, _ := io.ReadAll(r.log)
	return tail(b)
}

// TestRunTwoInstancesEqualOne: two `skewlens run` instances in one
// consumer group split the partitions of a backlog of six simulated jobs
// (records keyed by job_id, so each job stays on one instance) and write
// into one database the same rows one instance writes alone.
func TestRunTwoInstancesEqualOne(t *testing.T) {
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	start, _ := produceBacklog(t, brokers, "scale", 6)
	cutoff := start + (8*time.Minute - 30*time.Second).Milliseconds()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// Both instances join within the broker's initial rebalance delay
	// (3 s, Kafka's default), so the group's first generation already
	// splits the partitions between them.
	a := startRun(t, brokers, chAddr, "scale", "scale_two", "scale_two")
	b := startRun(t, brokers, chAddr, "scale", "scale_two", "scale_two")
	one := startRun(t, brokers, chAddr, "scale", "scale_one", "scale_one")
	for _, r := range []*runProc{one, a} {
		r.waitClosed(ctx, t, chAddr, cutoff, 6)
	}
	na, _ := a.messages()
	nb, _ := b.messages()
	n1, _ := one.messages()
	t.Logf("messages: one instance %d; two instances %d + %d", n1, na, nb)
	// Both read a share. Together they read every message at least once:
	// more when the group rebalanced after its first generation (an
	// instance that joined late, on a loaded machine), whose revoked
	// partitions were read again from their last commit; the tables below
	// are equal all the same.
	if na == 0 || nb == 0 || na+nb < n1 {
		t.Errorf("the two instances read %d and %d messages, one instance %d: the partitions were not split", na, nb, n1)
	}
	for _, r := range []*runProc{one, a, b} {
		r.kill(t)
	}
	assertSameTables(ctx, t, chAddr, "scale_one", "scale_two", cutoff, "with two instances")
}
