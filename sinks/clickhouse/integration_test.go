package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/skew"
)

// testDatabase returns a database name unique to this test process, so a
// shared server (SKEWLENS_CLICKHOUSE_ADDR) is not disturbed.
func testDatabase(suffix string) string {
	return fmt.Sprintf("skewlens_test_%d_%s", os.Getpid(), suffix)
}

// newTestSink connects to the chtest server and drops db when the test
// ends.
func newTestSink(t *testing.T, cfg Config) (*Store, *prometheus.Registry) {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = chtest.Start(t)
	}
	if cfg.FlushInterval == 0 {
		cfg.FlushInterval = time.Millisecond
	}
	if cfg.Retry == (retry.Policy{}) {
		cfg.Retry = retry.Policy{MaxRetries: retry.Setup().MaxRetries, MinBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
	}
	reg := prometheus.NewRegistry()
	s, err := New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		dropDatabase(t, s.cfg.Database)
	})
	return s, reg
}

// newMigratedSink is newTestSink on a database of its own, name's,
// migrated, with a context that ends with the test (at most 60 s).
func newMigratedSink(t *testing.T, name string) (context.Context, *Store, *prometheus.Registry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	s, reg := newTestSink(t, Config{Database: testDatabase(name)})
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx, s, reg
}

// dropDatabase drops db on the chtest server over a connection of its
// own (the test's Sink may be closed or behind a cut proxy).
func dropDatabase(t *testing.T, db string) {
	t.Helper()
	conn, err := ch.Open(&ch.Options{Addr: []string{chtest.Start(t)}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Errorf("drop test database: %v", err)
		return
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := conn.Exec(ctx, "DROP DATABASE IF EXISTS `"+db+"`"); err != nil {
		t.Errorf("drop test database %s: %v", db, err)
	}
}

// queryStrings runs a query and returns every row with each value printed
// by fmt.Sprint.
func queryStrings(ctx context.Context, s *Store, query string, args ...any) ([][]string, error) {
	rows, err := s.conn.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	types := rows.ColumnTypes()
	var out [][]string
	for rows.Next() {
		dest := make([]any, len(types))
		for i, ct := range types {
			dest[i] = reflect.New(ct.ScanType()).Interface()
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		rec := make([]string, len(dest))
		for i, d := range dest {
			v := reflect.ValueOf(d).Elem().Interface()
			if tm, ok := v.(time.Time); ok {
				v = tm.UTC().Format(time.DateTime)
			}
			rec[i] = fmt.Sprint(v)
		}
		out = append(out, rec)
	}
	return out, rows.Err()
}

func TestIntegration(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, reg := newTestSink(t, Config{Database: testDatabase("main"), BatchMaxRows: 7})

	if got := s.ServerVersion(); got == "" {
		t.Fatal("empty server version")
	}
	t.Logf("server %s, dialect %s", s.ServerVersion(), s.Dialect())
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}

	// Migrate twice: the second run changes nothing.
	for i := 0; i < 2; i++ {
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("Migrate #%d: %v", i+1, err)
		}
	}
	ledger, err := queryStrings(ctx, s, "SELECT version, name, dialect FROM "+s.table("schema_migrations")+" ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	var wantLedger [][]string
	for _, m := range ms {
		if m.Version > 0 { // 0 is the ledger itself
			wantLedger = append(wantLedger, []string{fmt.Sprint(m.Version), m.Name, string(s.Dialect())})
		}
	}
	if len(wantLedger) < 2 || !reflect.DeepEqual(ledger, wantLedger) {
		t.Errorf("schema_migrations = %v, want one row per migration file: %v", ledger, wantLedger)
	}

	// Write the fixtures, then again with the same version (a crash
	// replay), then once more in one batch: FINAL sees every finding once.
	fs := fixtures(time.Now())
	want := fixtureCounts(fs)
	for i := 0; i < 2; i++ {
		if err := s.Writer().Write(ctx, 100, fs); err != nil {
			t.Fatalf("Write #%d: %v", i+1, err)
		}
	}
	s.cfg.BatchMaxRows = DefaultConfig().BatchMaxRows
	if err := s.Writer().Write(ctx, 100, fs); err != nil {
		t.Fatalf("Write #3: %v", err)
	}
	for _, table := range tableOrder() {
		got, err := queryStrings(ctx, s, fmt.Sprintf(
			"SELECT count(), (SELECT count() FROM %[1]s) FROM %[1]s FINAL", s.table(table)))
		if err != nil {
			t.Fatal(err)
		}
		if got[0][0] != fmt.Sprint(want[table]) {
			t.Errorf("%s: %s rows with FINAL, want %d", table, got[0][0], want[table])
		}
		if got[0][1] != fmt.Sprint(3*want[table]) {
			t.Logf("%s: %s stored rows (merges ran)", table, got[0][1])
		}
		if n := testutil.ToFloat64(s.m.rowsInserted.WithLabelValues(table)); n != float64(3*want[table]) {
			t.Errorf("%s: rows_inserted_total = %v, want %d", table, n, 3*want[table])
		}
	}
	// argMax dedup gives the same count as FINAL.
	got, err := queryStrings(ctx, s, "SELECT count() FROM (SELECT job_id, task_name, window_start, kind, subtask_index, cause, key, argMax(summary, version) FROM "+
		s.table("findings")+" GROUP BY job_id, task_name, window_start, kind, subtask_index, cause, key)")
	if err != nil {
		t.Fatal(err)
	}
	if got[0][0] != fmt.Sprint(want[tableFindings]) {
		t.Errorf("argMax dedup: %s findings, want %d", got[0][0], want[tableFindings])
	}

	// A higher version replaces.
	first := fs[0]
	first.Stats = &skew.SubtaskStats{Host: "replaced-host", BusyMsPerSecond: 1}
	if err := s.Writer().Write(ctx, 101, []skew.Finding{first}); err != nil {
		t.Fatal(err)
	}
	got, err = queryStrings(ctx, s, "SELECT host, version FROM "+s.table("subtask_stats")+
		" FINAL WHERE job_id = ? AND task_name = ? AND window_start = ? AND subtask_index = ?",
		first.JobID, first.TaskName, first.WindowStart, int32(*first.SubtaskIndex))
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{"replaced-host", "101"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("after version 101: %v, want %v", got, want)
	}

	t.Run("hostile strings", func(t *testing.T) { testHostileStrings(ctx, t, s) })
	t.Run("incidents", func(t *testing.T) { testIncidents(ctx, t, s, fs) })
	t.Run("doc queries", func(t *testing.T) { testDocQueries(ctx, t, s, fs) })

	// Metrics are registered and exported.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, n := range []string{"skewlens_clickhouse_insert_duration_seconds", "skewlens_clickhouse_rows_inserted_total"} {
		if !names[n] {
			t.Errorf("metric %s not gathered (have %v)", n, names)
		}
	}
}

// testHostileStrings reads back every hostile key, bound with ?, and
// compares bytes.
func testHostileStrings(ctx context.Context, t *testing.T, s *Store) {
	for i, k := range hostileStrings() {
		got, err := queryStrings(ctx, s, "SELECT key, job_name, summary, length(key) FROM "+s.table("hot_keys")+
			" FINAL WHERE job_id = ? AND key = ?", jobHostile, k)
		if err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
		if len(got) != 1 {
			t.Errorf("key %d (%.40q): %d rows, want 1", i, k, len(got))
			continue
		}
		if got[0][0] != k || got[0][1] != k || got[0][2] != k || got[0][3] != fmt.Sprint(len(k)) {
			t.Errorf("key %d (%.40q) did not round-trip: got key %.40q len %s", i, k, got[0][0], got[0][3])
		}
		got, err = queryStrings(ctx, s, "SELECT count() FROM "+s.table("findings")+
			" FINAL WHERE job_id = ? AND kind = 'hot_key' AND key = ? AND subtask_index = ?", jobHostile, k, int32(i))
		if err != nil {
			t.Fatal(err)
		}
		if got[0][0] != "1" {
			t.Errorf("findings row for key %d: count %s, want 1", i, got[0][0])
		}
	}
	// The tables are intact after the injection attempt.
	if _, err := queryStrings(ctx, s, "SELECT count() FROM "+s.table("findings")); err != nil {
		t.Fatal(err)
	}
}

// docExpect lists the expected result rows of some documented queries
// for the fixtures (the fixtures use the queries' literal values).
func docExpect(fs []skew.Finding) map[string][][]string {
	var lastPlanStart int64
	for _, f := range fs {
		if f.Kind == skew.KindSaltingPlan && f.WindowStart > lastPlanStart {
			lastPlanStart = f.WindowStart
		}
	}
	return map[string][][]string{
		"Top hot keys of a task today": {
			{"user-42", "720000", "0.4", "6", "[3]"},
			{"user-7", "180000", "0.1", "6", "[1]"},
		},
		"Hot keys of a task in its latest window, with their margins": {
			{"user-42", "3", "0.4", "0.03", "subtask", "0.64", "0.05", "0.8"},
			{"user-7", "1", "0.1", "0", "", "0", "0", "0"},
		},
		"Jobs whose skew score exceeded 50 this week": {
			{jobA, jobAName, taskA, "62", "6"},
		},
		"Slow subtasks by host (last 24 hours)": nil, // checked by prefix below
		"Latest salting plan per task": {
			{jobA, taskA, fmt.Sprint(lastPlanStart), "1", "3.2", "1.1", "SELECT ... GROUP BY key, MOD(HASH_CODE(id), 3)"},
		},
		"Latest statistics of each subtask of a task": {
			{"0", "tm-0.flink.internal", "counter", "300", "0.125", "0", "15"},
			{"1", "tm-1.flink.internal", "counter", "300", "0.125", "0", "15"},
			{"2", "tm-2.flink.internal", "counter", "300", "0.125", "0", "15"},
			{"3", "tm-3.flink.internal", "counter", "950", "0.625", "1", "6000"},
		},
		"Subtasks getting more than twice their fair share of input": {
			{jobA, taskA, "3", "6", "2.5"},
		},
		"Upstream tasks back-pressured by saturated subtasks": {
			{jobA, taskA, "Source: clicks", "4"},
			{jobB, taskBSlow, "Parse", "3"},
			{jobB, taskBSlow, "Source: payments", "3"},
		},
	}
}

// docPrefix lists, for some queries, the expected leading columns of each
// row (the rest depend on the clock).
func docPrefix() map[string][][]string {
	return map[string][][]string{
		"Which subtasks of a job were saturated in the last hour, and why": {
			{taskA, "3", "data_skew", "tm-3.flink.internal", "attempt-a-3", "4"},
			{taskADedup, "1", "rotating_hot_key", "tm-1.flink.internal", "", "1"},
		},
		"Slow subtasks by host (last 24 hours)": {
			{"tm-9.flink.internal", "3", "1", "[" + taskBSlow + "]"},
		},
		"Under-provisioned tasks and their recommended parallelism": {
			{jobB, taskBUnder, "4", "8"},
		},
		"Rotating hot keys: where the hot spot was before": {
			{jobA, taskADedup},
		},
	}
}

// testDocQueries runs every legacy query of docs/queries.md and checks
// some results against fs, the fixtures that were written.
func testDocQueries(ctx context.Context, t *testing.T, s *Store, fs []skew.Finding) {
	expect, prefix := docExpect(fs), docPrefix()
	_, final := incidentFixtures(t, fs)
	for h, rows := range incidentDocExpect(final, false) {
		expect[h] = rows
	}
	qs := docQueriesFor(t, s.Dialect(), s.cfg.Database)
	seen := map[string]bool{}
	for _, q := range qs {
		seen[q.Heading] = true
		got, err := queryStrings(ctx, s, q.SQL)
		if err != nil {
			t.Errorf("%s: %v\n%s", q.Name(), err, q.SQL)
			continue
		}
		if want, ok := expect[q.Heading]; ok && want != nil {
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s:\n got %q\nwant %q", q.Name(), got, want)
			}
		}
		if want, ok := prefix[q.Heading]; ok {
			if len(got) != len(want) {
				t.Errorf("%s: %d rows %q, want %d", q.Name(), len(got), got, len(want))
				continue
			}
			for i := range want {
				if len(got[i]) < len(want[i]) || !reflect.DeepEqual(got[i][:len(want[i])], want[i]) {
					t.Errorf("%s row %d:\n got %q\nwant prefix %q", q.Name(), i, got[i], want[i])
				}
			}
		}
	}
	for h := range expect {
		if !seen[h] {
			t.Errorf("docs/queries.md has no query under %q", h)
		}
	}
	for h := range prefix {
		if !seen[h] {
			t.Errorf("docs/queries.md has no query under %q", h)
		}
	}
}

// TestWritePermanent checks that errors retrying cannot fix are a permanent error.
func TestWritePermanent(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, _ := newTestSink(t, Config{Database: testDatabase("fatal")})
	good := fixtures(time.Now())[:1]

	// Not migrated: the tables do not exist (a schema mismatch).
	err := s.Writer().Write(ctx, 1, good)
	if !retry.IsPermanent(err) {
		t.Fatalf("write before Migrate: err = %v, want a permanent error", err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// Bad data: nothing is inserted.
	bad := append([]skew.Finding{good[0]}, skew.Finding{Kind: skew.KindHotKey, TaskName: "t"})
	err = s.Writer().Write(ctx, 1, bad)
	if !retry.IsPermanent(err) || !strings.Contains(err.Error(), "job_id") {
		t.Fatalf("bad finding: err = %v, want a permanent error about job_id", err)
	}
	got, err := queryStrings(ctx, s, "SELECT count() FROM "+s.table("findings"))
	if err != nil {
		t.Fatal(err)
	}
	if got[0][0] != "0" {
		t.Errorf("a rejected Write inserted %s rows", got[0][0])
	}
	// A column the table does not have (schema drift).
	if err := s.conn.Exec(ctx, "ALTER TABLE "+s.table("hot_keys")+" DROP COLUMN summary"); err != nil {
		t.Fatal(err)
	}
	err = s.Writer().Write(ctx, 2, fixtures(time.Now())[24:26])
	if !retry.IsPermanent(err) {
		t.Fatalf("missing column: err = %v, want a permanent error", err)
	}
	// Closed.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := s.Writer().Write(ctx, 3, good); !retry.IsPermanent(err) || !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close: err = %v, want ErrClosed", err)
	}
}

// proxy forwards TCP connections to a server and can cut them all, to
// simulate a network outage.
type proxy struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	l      net.Listener
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, target: target}
	p.up("127.0.0.1:0")
	t.Cleanup(p.down)
	return p
}

func (p *proxy) up(addr string) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatalf("proxy listen: %v", err)
	}
	p.mu.Lock()
	p.l, p.addr = l, l.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
}

func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestWriteRetriesThroughOutage cuts the network during a Write and
// restores it: the caller's retry loop (retry.Do, as the pipeline's
// runner retries) gets the write through, the retries are counted there,
// and the Store counts the retryable errors.
func TestWriteRetriesThroughOutage(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := newProxy(t, chtest.Start(t))
	s, _ := newTestSink(t, Config{Addr: p.addr, Database: testDatabase("outage"),
		Retry:       retry.Policy{MaxRetries: 50, MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond},
		DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	addr := p.addr
	p.down()
	fs := fixtures(time.Now())
	var retries atomic.Int64
	count := func(int, time.Duration, error) { retries.Add(1) }
	wrote, ended := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(ended)
		wrote <- retry.Do(ctx, s.RetryPolicy(), count, func(ctx context.Context) error { return s.Writer().Write(ctx, 7, fs) })
	}()
	// The network comes back once the write has failed and is retried.
	testenv.Eventually(t, 30*time.Second, "a retry of the write", func() bool { return retries.Load() > 0 },
		testenv.End{Done: ended, Why: func() string { return fmt.Sprintf("the write ended (%v) before a retry", <-wrote) }})
	p.up(addr)
	if err := <-wrote; err != nil {
		t.Fatalf("Write through outage: %v", err)
	}
	if n := testutil.ToFloat64(s.m.insertErrors.WithLabelValues("retryable")); n == 0 {
		t.Error("no retryable errors counted")
	}
	got, err := queryStrings(ctx, s, "SELECT count() FROM "+s.table("findings")+" FINAL")
	if err != nil {
		t.Fatal(err)
	}
	if got[0][0] != fmt.Sprint(fixtureCounts(fs)[tableFindings]) {
		t.Errorf("findings after outage: %s, want %d", got[0][0], fixtureCounts(fs)[tableFindings])
	}

	// With the server gone for good, the retries give up with an error
	// that is not permanent, and Write alone makes one attempt.
	p.down()
	calls := 0
	policy := s.RetryPolicy()
	policy.MaxRetries = 2
	err = retry.Do(ctx, policy, nil, func(ctx context.Context) error { calls++; return s.Writer().Write(ctx, 8, fs[:1]) })
	if err == nil || retry.IsPermanent(err) {
		t.Errorf("Write with the server gone: err = %v, want an error that is not permanent", err)
	}
	if calls != 3 {
		t.Errorf("Write with the server gone: %d attempts for 2 retries, want 3 (Write must not retry itself)", calls)
	}
}

// TestWriteHonoursContext checks that the write path returns promptly
// when ctx ends while the caller waits to retry, and that Write itself
// does not wait to retry.
func TestWriteHonoursContext(t *testing.T) {
	t.Parallel()
	p := newProxy(t, chtest.Start(t))
	s, _ := newTestSink(t, Config{Addr: p.addr, Database: testDatabase("ctx"),
		Retry: retry.Policy{MaxRetries: retry.Setup().MaxRetries, MinBackoff: 10 * time.Second, MaxBackoff: 10 * time.Second}, DialTimeout: time.Second})
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.down()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := retry.Do(ctx, s.RetryPolicy(), nil, func(ctx context.Context) error {
		return s.Writer().Write(ctx, 1, fixtures(time.Now())[:1])
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Write took %s after its context ended", d)
	}
}

// TestForcedModernOnLegacyServer checks that the modern DDL is refused by
// 18.16 as a permanent error, which is why the dialect follows the version.
func TestForcedModernOnLegacyServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, _ := newTestSink(t, Config{Database: testDatabase("forced")})
	if s.Dialect() == DialectModern {
		// An external modern server (SKEWLENS_CLICKHOUSE_ADDR) accepts both.
		t.Logf("server %s is modern; the legacy-only check does not apply", s.ServerVersion())
		return
	}
	forced, _ := newTestSink(t, Config{Database: testDatabase("forced"), Dialect: string(DialectModern)})
	err := forced.Migrate(ctx)
	if !retry.IsPermanent(err) {
		t.Fatalf("modern DDL on %s: err = %v, want a permanent error", forced.ServerVersion(), err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("legacy Migrate after the failed modern one: %v", err)
	}
}

// TestWritePacing checks that inserts into one table are at least
// FlushInterval apart.
func TestWritePacing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const interval = 300 * time.Millisecond
	s, _ := newTestSink(t, Config{Database: testDatabase("pacing"), FlushInterval: interval})
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	fs := fixtures(time.Now())[:1]
	if err := s.Writer().Write(ctx, 1, fs); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.Writer().Write(ctx, 2, fs); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < interval-20*time.Millisecond {
		t.Errorf("second Write took %s, want at least about %s", d, interval)
	}
	// A context that ends while waiting stops the wait.
	short, cancelShort := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancelShort()
	if err := s.Writer().Write(short, 3, fs); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Write with a short context: err = %v, want deadline exceeded", err)
	}
}
