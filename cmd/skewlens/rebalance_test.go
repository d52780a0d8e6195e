package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
	"github.com/skewlens/skewlens/skew/plans"
)

// TestRunRebalanceEqualsUninterrupted: three `skewlens run` instances
// share one consumer group on a backlog of six simulated jobs while the
// group rebalances under them: two start together, the third joins late,
// one of the first two is killed with SIGKILL and the other stopped with
// SIGTERM (in a random order), each at a random point of the backlog, and
// the late one finishes alone. Partitions move at every step, with open
// windows, saved engine state, open incidents and alerts. In the end
// every finding table and the incidents equal those of a single
// uninterrupted instance reading the same records, row for row.
// SKEWLENS_REBALANCE_SEED repeats a run's points (CI runs one seed; run
// it with several to search).
func TestRunRebalanceEqualsUninterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kafka broker, ClickHouse and four pipelines, for about a minute")
	}
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SKEWLENS_REBALANCE_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("points from SKEWLENS_REBALANCE_SEED=%d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))

	// The group starts on a backlog of the jobs' first 2 minutes; the
	// other 6 arrive live, at 5x (in 72 s). The steps below come after
	// random shares of the records, and while an instance joins or a
	// dead one's session times out the others read on: a backlog written
	// all at once would be drained before the last step.
	const jobs = 6
	start, feed, total := jobsFeed(t, brokers, "rebal", jobs, 5, 2*time.Minute)
	cutoff := start + (8*time.Minute - 30*time.Second).Milliseconds()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fed := make(chan error, 1)
	go func() { fed <- feed.Run(ctx) }()

	ref := startRun(t, brokers, chAddr, "rebal", "rebal_ref", "rebal_ref")
	first := startRun(t, brokers, chAddr, "rebal", "rebal_group", "rebal_group")
	second := startRun(t, brokers, chAddr, "rebal", "rebal_group", "rebal_group")
	group := &groupProgress{procs: []*runProc{first, second}, last: map[*runProc]int{}}

	// Each step comes once the group has settled after the one before
	// (the late instance got its partitions of a new generation) and
	// committed a random share (3-12%) more of the records, so that each
	// lands in a generation of its own, after windows closed and engine
	// state was saved (records read again after a rebalance do not
	// count), and all land well before the records end.
	var late *runProc
	assigned := 0
	step := func(what string) {
		t.Helper()
		if late != nil {
			assigned = late.waitAssigned(ctx, t, assigned+1)
		}
		target := committedRecords(ctx, t, brokers, "rebal_group") + int(float64(total)*(0.03+0.09*rng.Float64()))
		committed, ok := waitCommitted(ctx, t, brokers, "rebal_group", target)
		if !ok {
			t.Fatalf("the group stopped committing before %s (%d of %d records committed):\n%s", what, committed, target, group.tails())
		}
		t.Logf("%s after %d records committed, %d messages processed", what, committed, group.sum())
	}
	step("the late instance starts")
	late = startRun(t, brokers, chAddr, "rebal", "rebal_group", "rebal_group")
	group.procs = append(group.procs, late)

	killed, stopped := first, second
	if rng.IntN(2) == 1 {
		killed, stopped = second, first
	}
	for _, i := range rng.Perm(2) {
		if i == 0 {
			step("SIGKILL")
			killed.kill(t)
		} else {
			step("SIGTERM")
			stopped.terminate(ctx, t)
		}
	}

	if err := <-fed; err != nil {
		t.Fatal(err)
	}
	if feed.Sent != total {
		t.Fatalf("the feed wrote %d records of %d", feed.Sent, total)
	}
	var settled []map[string]int64
	for _, r := range []*runProc{ref, late} {
		r.waitClosed(ctx, t, chAddr, cutoff, jobs)
		settled = append(settled, r.settle(ctx, t, chAddr))
	}
	nRef, _ := ref.messages()
	t.Logf("messages: the uninterrupted instance %d, the group %d", nRef, group.sum())
	for _, r := range []*runProc{ref, late} {
		r.kill(t)
	}
	// The late instance took over partitions whose jobs others had
	// saved state for, and loaded it on assignment.
	if n, assigned := late.resumedJobs(t); n == 0 {
		t.Errorf("the late instance never loaded saved engine state on its %d assignments:\n%s", assigned, late.logTail())
	} else {
		t.Logf("the late instance had %d assignments, and loaded the state of up to %d jobs on one", assigned, n)
	}
	assertSameTables(ctx, t, chAddr, "rebal_ref", "rebal_group", cutoff, "after the rebalances")
	asOf := cutoff - time.Minute.Milliseconds()
	if maps.Equal(settled[0], settled[1]) {
		asOf = math.MaxInt64
	} else {
		t.Logf("the runs settled on different windows (%v, %v): incidents compared as of %d", settled[0], settled[1], asOf)
	}
	assertSameIncidents(ctx, t, chAddr, "rebal_ref", "rebal_group", asOf, "after the rebalances")
	assertSamePlans(ctx, t, chAddr, "rebal_ref", "rebal_group", cutoff, "after the rebalances")
}

// assertSamePlans checks the plans tables (what skewlens serve reads) of
// databases want and got: the same versions of the same tasks made at
// windows before cutoff, each at the same window (generated_at) with the
// same material content (parallelism pair, source, pin, hot keys with
// their buckets and salted keys), and no retired plan. So no instance
// published a plan of a job it did not read over its owner's, and a
// moved job's versions went on where its last owner left them. (The
// defaults, a 10 min cooldown and a 30 min TTL, retire no plan within
// the 8 min backlog, so a retirement, or a version made by time alone at
// a window that depends on how window closes are batched, is an
// instance changing a plan it does not own.) Later versions depend on how
// far each run got before it was stopped, as for the other tables.
//
// A version's updated_at, expires_at and revision, and the shares and
// last-hot times in its body, are not compared: they are not results of
// the records alone. A version's row is written again whenever an
// instance republishes its plans (every planpub.RepublishEvery of event
// time from the first window it closes, which for the group is at every
// assignment of partitions), so which confirmation is stored last depends
// on where each instance started.
func assertSamePlans(ctx context.Context, t *testing.T, chAddr, wantDB, gotDB string, cutoff int64, what string) {
	t.Helper()
	conn, err := ch.Open(&ch.Options{Addr: []string{chAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	read := func(db string) (versions []string) {
		rows, err := conn.Query(ctx, "SELECT job_id, task_name, version, generated_at, body FROM "+db+".plans WHERE generated_at < ?", cutoff)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		seen := map[string]bool{}
		for rows.Next() {
			var (
				job, task, body string
				version         uint64
				generated       int64
			)
			if err := rows.Scan(&job, &task, &version, &generated, &body); err != nil {
				t.Fatal(err)
			}
			var p plans.Plan
			if err := json.Unmarshal([]byte(body), &p); err != nil {
				t.Fatalf("%s.plans: %s/%s v%d: %v", db, job, task, version, err)
			}
			v := fmt.Sprintf("%s/%s v%d generated_at=%d p%d/%d %s pinned=%v", job, task, version, generated,
				p.Parallelism, p.MaxParallelism, p.Source, p.Pinned)
			for _, k := range p.HotKeys {
				v += fmt.Sprintf(" %q:%d%v", k.Key, k.Buckets, k.Salted)
			}
			if !seen[v] {
				seen[v] = true
				versions = append(versions, v)
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		slices.Sort(versions)
		var retired uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM "+db+".plans WHERE retired = 1").Scan(&retired); err != nil {
			t.Fatal(err)
		}
		if retired != 0 {
			t.Errorf("%s.plans: %d retirements: no plan ends within the backlog", db, retired)
		}
		return versions
	}
	want, got := read(wantDB), read(gotDB)
	if len(want) == 0 {
		t.Fatalf("plans: none made before %d in %s: the comparison needs some", cutoff, wantDB)
	}
	if !slices.Equal(got, want) {
		t.Errorf("plan versions %s:\n%s\n%s has:\n%s\nevery row of %s.plans:\n%s\nevery row of %s.plans:\n%s", what,
			strings.Join(got, "\n"), wantDB, strings.Join(want, "\n"), gotDB, planRows(ctx, t, conn, gotDB), wantDB, planRows(ctx, t, conn, wantDB))
	} else {
		t.Logf("plans: %d versions equal %s", len(got), what)
	}
}

// terminate stops the process with SIGTERM, as an operator or a
// scheduler does, and waits for it to exit (a minute at most).
func (r *runProc) terminate(ctx context.Context, t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.done:
	case <-time.After(time.Minute):
		t.Fatalf("%s did not stop within a minute of SIGTERM:\n%s", r.db, r.logTail())
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	if code := r.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("%s exited with %d after SIGTERM:\n%s", r.db, code, r.logTail())
	}
}

// resumedJobs returns the most jobs whose saved engine state the process
// loaded on one assignment of partitions (its "partitions assigned" log
// lines).
func (r *runProc) resumedJobs(t *testing.T) (most, assignments int) {
	t.Helper()
	if _, err := r.log.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(r.log)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg  string `json:"msg"`
			Jobs int    `json:"resumed_jobs"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "partitions assigned" {
			most, assignments = max(most, line.Jobs), assignments+1
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading the log of %s: %v", r.db, err)
	}
	return most, assignments
}

// waitAssigned waits until the process has logged n assignments of
// partitions, and returns how many it logged.
func (r *runProc) waitAssigned(ctx context.Context, t *testing.T, n int) int {
	t.Helper()
	var got int
	testenv.Eventually(t, left(ctx), fmt.Sprintf("%s: assignment %d", r.db, n), func() bool {
		_, got = r.resumedJobs(t)
		return got >= n
	}, r.end())
	return got
}

// groupProgress sums the messages processed by the instances of one
// group, keeping the last count of those that have exited.
type groupProgress struct {
	procs []*runProc
	last  map[*runProc]int
}

func (g *groupProgress) sum() int {
	n := 0
	for _, r := range g.procs {
		if got, ok := r.messages(); ok {
			g.last[r] = max(g.last[r], got)
		}
		n += g.last[r]
	}
	return n
}

// committedRecords returns how many records of the topics rebal-metrics
// and rebal-samples (4 partitions each) consumer group group has
// committed: the sum of its committed offsets.
func committedRecords(ctx context.Context, t *testing.T, brokers []string, group string) int {
	t.Helper()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second}
	parts := []int{0, 1, 2, 3}
	var resp *kafka.OffsetFetchResponse
	err := retry.Do(ctx, retry.Request(), nil, func(ctx context.Context) (err error) {
		resp, err = cl.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group,
			Topics: map[string][]int{"rebal-metrics": parts, "rebal-samples": parts}})
		if err == nil && resp.Error != nil && !errors.Is(resp.Error, kafka.GroupIdNotFound) {
			err = resp.Error
		}
		return err
	})
	if err != nil {
		t.Fatalf("committed offsets of %s: %v", group, err)
	}
	n := 0
	for _, ps := range resp.Topics {
		for _, p := range ps {
			if p.Error == nil && p.CommittedOffset > 0 {
				n += int(p.CommittedOffset)
			}
		}
	}
	return n
}

// waitCommitted waits until consumer group group has committed n records
// (committedRecords) and returns the count it saw last; ok is false if
// the group commits nothing more for 45 s first (a rebalance after a
// SIGKILL waits out the session timeout, 10 s, and a new generation's
// watermark may be held for 15 s), or ctx ends.
func waitCommitted(ctx context.Context, t *testing.T, brokers []string, group string, n int) (committed int, ok bool) {
	t.Helper()
	last, since := -1, time.Now()
	testenv.Eventually(t, left(ctx), fmt.Sprintf("%s committing %d records", group, n), func() bool {
		got := committedRecords(ctx, t, brokers, group)
		if got != last {
			last, since = got, time.Now()
		}
		ok = got >= n
		return ok || time.Since(since) > 45*time.Second
	})
	return last, ok
}

func (g *groupProgress) tails() string {
	var out string
	for i, r := range g.procs {
		out += fmt.Sprintf("--- instance %d:\n%s\n", i, r.logTail())
	}
	return out
}

// planRows lists every row of db.plans but the body, for a failure's
// message.
func planRows(ctx context.Context, t *testing.T, conn ch.Conn, db string) string {
	t.Helper()
	rows, err := conn.Query(ctx, "SELECT job_id, task_name, version, generated_at, updated_at, retired, revision, toString(inserted_at) FROM "+db+
		".plans ORDER BY job_id, task_name, version, revision")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var (
			job, task, inserted string
			version, revision   uint64
			generated, updated  int64
			retired             uint8
		)
		if err := rows.Scan(&job, &task, &version, &generated, &updated, &retired, &revision, &inserted); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s/%s v%d generated_at=%d updated_at=%d retired=%d revision=%d inserted_at=%s",
			job, task, version, generated, updated, retired, revision, inserted))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, "\n")
}
