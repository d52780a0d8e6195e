package main

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
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

// TestRunOnClusterEqualsOneServer runs `skewlens run --clickhouse-cluster`
// on a backlog of four simulated incidents, in three parts, against a
// real ClickHouse
// 18.16 cluster (shard 1: two replicas; shard 2: one; ZooKeeper), through
// the server of shard 2, so that every write and read of shard 1 goes
// through the Distributed tables to another server. One replica of shard
// 1 is SIGKILLed after the first part and started again after the
// second. A second pipeline reads
// the same records into one plain server. In the end the finding tables
// and incidents read through the Distributed tables equal the single
// server's, row for row, the two replicas of shard 1 hold the same rows,
// and `serve` and `top` show through the cluster what they show from the
// single server.
func TestRunOnClusterEqualsOneServer(t *testing.T) {
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	c := chtest.StartCluster(t, "skl", 2, 1)
	gateway := c.Shards[1][0].Addr
	victim := c.Shards[0][0]

	// The backlog comes in three parts of three minutes of each job: the
	// first before the replica is killed, the second while it is down,
	// the third once it is back. Each part is read before the next one
	// is produced, so every write of the second part happens while the
	// replica is down (a whole backlog is read in seconds).
	start := createClusterTopics(t, brokers, "cluster")
	cutoff := start + (9*time.Minute - 30*time.Second).Milliseconds()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	ref := startRun(t, brokers, chAddr, "cluster", "cluster_ref", "cluster_ref")
	run := startRun(t, brokers, gateway, "cluster", "cluster_run", "cluster_run", "--clickhouse-cluster", c.Name)
	sent := 0
	part := func(i int) {
		t.Helper()
		sent += produceClusterPart(t, brokers, "cluster", start, i)
		for _, r := range []*runProc{ref, run} {
			if !r.waitMessages(ctx, t, sent) {
				n, _ := r.messages()
				t.Fatalf("%s read %d of %d messages:\n%s", r.db, n, sent, r.logTail())
			}
		}
		// Wait for the writes too: the windows of the part, but for the
		// last ones, which stay open for records of the next part.
		run.waitClosed(ctx, t, gateway, start+(time.Duration(i+1)*3*time.Minute-30*time.Second).Milliseconds(), 4)
		t.Logf("part %d: %d messages read by both runs, and written", i+1, sent)
	}
	part(0)
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGKILLed replica %s of shard 1", victim.Addr)
	part(1)
	if err := victim.Resume(); err != nil {
		t.Fatal(err)
	}
	t.Logf("replica %s is back", victim.Addr)
	part(2)

	ref.waitClosed(ctx, t, chAddr, cutoff, 4)
	run.waitClosed(ctx, t, gateway, cutoff, 4)
	settledRef, settledRun := ref.settle(ctx, t, chAddr), run.settle(ctx, t, gateway)
	ref.kill(t)
	run.kill(t)
	waitReplicasInSync(ctx, t, c.Shards[0][0].Addr, "cluster_run")

	refConn, gwConn := openCH(t, chAddr), openCH(t, gateway)
	r1, r2 := openCH(t, c.Shards[0][0].Addr), openCH(t, c.Shards[0][1].Addr)
	for _, table := range []string{"findings", "hot_keys", "subtask_stats", "salting_plans"} {
		want := tableRows(ctx, t, refConn, "cluster_ref", table, cutoff)
		got := tableRows(ctx, t, gwConn, "cluster_run", table, cutoff)
		if len(want) == 0 {
			t.Fatalf("%s: no rows in cluster_ref", table)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s through the cluster: %d rows, one server has %d; first difference:\n%s", table, len(got), len(want), firstDiff(got, want))
		} else {
			t.Logf("%s: %d rows through the cluster equal one server's", table, len(got))
		}
		var dups int64
		q := "SELECT count() - uniqExact(job_id, task_name, window_start, subtask_index" + extraKey(table) +
			") FROM (SELECT * FROM cluster_run." + table + " FINAL)"
		if err := gwConn.QueryRow(ctx, q).Scan(&dups); err != nil {
			t.Fatal(err)
		}
		if dups != 0 {
			t.Errorf("%s: %d duplicate rows through the cluster", table, dups)
		}
		a := tableRows(ctx, t, r1, "cluster_run", table+"_local", cutoff)
		b := tableRows(ctx, t, r2, "cluster_run", table+"_local", cutoff)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: the replica that was killed has %d rows, the other %d; first difference:\n%s", table, len(a), len(b), firstDiff(a, b))
		}
	}
	// The kill mattered only if shard 1 holds jobs: both shards must.
	for i, conn := range []ch.Conn{r2, gwConn} {
		var n uint64
		if err := conn.QueryRow(ctx, "SELECT uniqExact(job_id) FROM cluster_run.findings_local").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Errorf("shard %d holds no job", i+1)
		}
	}
	asOf := cutoff - time.Minute.Milliseconds()
	if reflect.DeepEqual(settledRef, settledRun) {
		asOf = 1<<63 - 1
	}
	want, got := finalIncidents(ctx, t, refConn, "cluster_ref", asOf), finalIncidents(ctx, t, gwConn, "cluster_run", asOf)
	if len(want) == 0 || !reflect.DeepEqual(got, want) {
		t.Errorf("incidents through the cluster: %d, one server %d; first difference:\n%s", len(got), len(want), firstDiff(got, want))
	}

	jobs := slices.Sorted(func(yield func(string) bool) {
		for j := range settledRef {
			if !yield(j) {
				return
			}
		}
	})
	t.Run("serve", func(t *testing.T) {
		refAPI := startServe(t, chAddr, "cluster_ref")
		clAPI := startServe(t, gateway, "cluster_run", "--clickhouse-cluster", c.Name)
		for _, job := range jobs {
			for _, path := range []string{
				fmt.Sprintf("/v1/findings?job_id=%s&since=%d&limit=1000", job, start),
				fmt.Sprintf("/v1/stats?job_id=%s&since=%d&limit=1000", job, start),
			} {
				want, got := refAPI.get(t, path), clAPI.get(t, path)
				if len(want) < 100 || got != want {
					t.Errorf("GET %s through the cluster (%d bytes) differs from one server's (%d bytes)", path, len(got), len(want))
				}
			}
		}
	})
	t.Run("top", func(t *testing.T) {
		frame := func(addr, db string, extra ...string) string {
			args := append([]string{"top", "--once", "--clickhouse-addr", addr, "--database", db, "--color", "never",
				"--lookback", "3h", "--width", "200"}, extra...)
			code, out, errOut := runCLI(t, "", args...)
			if code != 0 {
				t.Fatalf("top on %s: exit %d\n%s\n%s", db, code, out, errOut)
			}
			// The clock of the frame, and ages and the lookback relative
			// to it, differ between two calls.
			_, out, _ = strings.Cut(out, "\n")
			return topClock.ReplaceAllString(out, "T")
		}
		want := frame(chAddr, "cluster_ref")
		got := frame(gateway, "cluster_run", "--clickhouse-cluster", c.Name)
		if !strings.Contains(want, "HOT KEYS") || got != want {
			t.Errorf("top through the cluster:\n%s\none server:\n%s", got, want)
		}
	})
}

// topClock matches what a frame of top says relative to its clock.
var topClock = regexp.MustCompile(`since \d\d:\d\d:\d\d|ended [0-9hms]+ ago`)

// openCH opens a connection to the server at addr, closed when t ends.
func openCH(t *testing.T, addr string) ch.Conn {
	t.Helper()
	conn, err := ch.Open(&ch.Options{Addr: []string{addr}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// waitReplicasInSync waits until the replicated tables of db on the
// server at addr are active, with every replica, and have fetched what
// the other replicas of their shard wrote (SYSTEM SYNC REPLICA): a
// replica that was killed takes its place again once its old ZooKeeper
// session has expired.
func waitReplicasInSync(ctx context.Context, t *testing.T, addr, db string) {
	t.Helper()
	conn := openCH(t, addr)
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("replicas of %s on %s: %s", db, addr, last)
		}
	}()
	testenv.Eventually(t, left(ctx), "replicas in sync", func() bool {
		var tables []string
		rows, err := conn.Query(ctx, "SELECT table FROM system.replicas WHERE database = ? AND is_readonly = 0 AND active_replicas = total_replicas", db)
		if err == nil {
			for rows.Next() {
				var s string
				if err = rows.Scan(&s); err != nil {
					break
				}
				tables = append(tables, s)
			}
			rows.Close()
		}
		var n uint64
		if err == nil {
			err = conn.QueryRow(ctx, "SELECT count() FROM system.replicas WHERE database = ?", db).Scan(&n)
		}
		if err == nil && n > 0 && uint64(len(tables)) == n {
			for _, table := range tables {
				if err = conn.Exec(ctx, "SYSTEM SYNC REPLICA "+db+"."+table); err != nil {
					break
				}
			}
			if err == nil {
				return true
			}
		}
		last = fmt.Sprintf("%d of %d tables active, err %v", len(tables), n, err)
		return false
	})
}

// createClusterTopics creates the topics prefix-metrics, prefix-samples
// and prefix-dead with 4 partitions each, and returns the start of the
// backlog: an hour ago, on a window boundary.
func createClusterTopics(t *testing.T, brokers []string, prefix string) int64 {
	t.Helper()
	var tcs []kafka.TopicConfig
	for _, n := range []string{"-metrics", "-samples", "-dead"} {
		tcs = append(tcs, kafka.TopicConfig{Topic: prefix + n, NumPartitions: 4, ReplicationFactor: 1})
	}
	kafkatest.CreateTopicConfigs(t, brokers, tcs...)
	return time.Now().Add(-time.Hour).Truncate(10 * time.Second).UnixMilli()
}

// produceClusterPart writes part i (from 0) of the backlog: minutes 3i
// to 3i+3 after start of four simulated incidents, each job with the
// same seed, so the same ids, in every part; its counters start again
// from 0 in each part, as after a restart of the job. It returns the
// record count.
func produceClusterPart(t *testing.T, brokers []string, prefix string, start int64, i int) int {
	t.Helper()
	const part = 3 * time.Minute
	var cfgs []simulate.Config
	for j, s := range []simulate.Scenario{simulate.HotKey, simulate.SlowSink, simulate.RotatingHotKey, simulate.CheckpointTimeout} {
		cfgs = append(cfgs, simulate.Config{Scenario: s, Seed: uint64(j + 1), Start: start + int64(i)*part.Milliseconds(),
			JobName: string(s), Duration: part, MetricFormat: "mixed", Naming: "mixed"})
	}
	feed, err := simfeed.New(simfeed.Config{Brokers: brokers, MetricsTopic: prefix + "-metrics", SamplesTopic: prefix + "-samples",
		Speed: 1e6, Jobs: cfgs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := feed.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return feed.Sent
}

// apiProc is a `skewlens serve` process and its API's base URL.
type apiProc struct {
	*runProc
	base string
}

// startServe starts `skewlens serve` on database db of the server at
// addr.
func startServe(t *testing.T, addr, db string, extra ...string) apiProc {
	t.Helper()
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve", "--clickhouse-addr", addr, "--database", db,
		"--api-listen", fmt.Sprintf("127.0.0.1:%d", port), "--log-format", "json"}, extra...)
	return apiProc{runProc: startChild(t, "serve-"+db, args...), base: fmt.Sprintf("http://127.0.0.1:%d", port)}
}

// get returns the body of a 200 answer to GET path, waiting for the
// server to listen.
func (a apiProc) get(t *testing.T, path string) string {
	t.Helper()
	ans := getUntil(t, a.base+path, 10*time.Second, "serve answering", anyAnswer, a.end())
	if ans.code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, ans.code, ans.body)
	}
	return ans.body
}
