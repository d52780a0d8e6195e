package clickhouse

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/sinks/topstore"
)

// TestClusterIntegration migrates a database onto a real cluster of
// ClickHouse 18.16 servers (shard 1 with two replicas, shard 2 with one,
// ZooKeeper), through the server of shard 2, so that every read and
// write crosses the Distributed tables: the schema is on every server,
// migrating again changes nothing, replayed findings count once, each
// job's rows stay on one shard, the replicas of shard 1 agree, and the
// readers of serve and top return what they return from one server.
func TestClusterIntegration(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := chtest.StartCluster(t, "skl", 2, 1)
	newStore := func(cfg Config) *Store {
		cfg.FlushInterval = time.Millisecond
		cfg.Retry = retry.Policy{MaxRetries: 5, MinBackoff: 10 * time.Millisecond, MaxBackoff: 500 * time.Millisecond}
		s, err := New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), prometheus.NewRegistry())
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	s := newStore(Config{Addr: c.Shards[1][0].Addr, Database: "skewlens_cluster", Cluster: c.Name})
	if s.Dialect() != DialectLegacy {
		t.Fatalf("dialect %s on %s: the test expects 18.16", s.Dialect(), s.ServerVersion())
	}
	for i := range 2 {
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("Migrate #%d: %v", i+1, err)
		}
	}

	// The schema on every server: each table replicated locally and
	// distributed under its own name.
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	cs, err := newClusterSchema(ms, s.Dialect(), s.cfg.Database, c.Name, s.cfg.TTLDays)
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range c.Addrs() {
		one := newStore(Config{Addr: addr, Database: s.cfg.Database})
		for table := range cs.shardKeys {
			got, err := queryStrings(ctx, one, "SELECT name, engine FROM system.tables WHERE database = ? AND name IN (?, ?) ORDER BY name",
				s.cfg.Database, table, table+"_local")
			if err != nil {
				t.Fatal(err)
			}
			engine := "ReplicatedReplacingMergeTree"
			if table == "schema_migrations" || table == tablePlanAudit {
				engine = "ReplicatedMergeTree"
			}
			want := [][]string{{table, "Distributed"}, {table + "_local", engine}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: tables %v, want %v", addr, got, want)
			}
		}
		// Migration 0004's column is on both tables of subtask_stats.
		got, err := queryStrings(ctx, one, "SELECT table FROM system.columns WHERE database = ? AND name = 'busy_source' ORDER BY table", s.cfg.Database)
		if err != nil {
			t.Fatal(err)
		}
		if want := [][]string{{"subtask_stats"}, {"subtask_stats_local"}}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: busy_source in %v, want %v", addr, got, want)
		}
	}

	// A migration that adds a column, run again as after a crash before
	// it was recorded, succeeds and changes nothing.
	for _, m := range ms {
		stmts, err := m.Render(s.Dialect(), s.cfg.Database, s.cfg.TTLDays)
		if err != nil {
			t.Fatal(err)
		}
		for i, stmt := range stmts {
			if _, ok := parseAddColumn(stmt); !ok {
				continue
			}
			forms, err := cs.rewrite(stmt)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range forms {
				if err := s.applyStatement(ctx, s.conn, fmt.Sprintf("migration %04d statement %d again", m.Version, i+1), f); err != nil {
					t.Errorf("migration %04d statement %d again: %v", m.Version, i+1, err)
				}
			}
		}
	}
	ledger, err := queryStrings(ctx, s, "SELECT DISTINCT version FROM "+s.table("schema_migrations")+" ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	if len(ledger) != len(ms)-1 {
		t.Errorf("schema_migrations through the Distributed table: %v, want %d versions", ledger, len(ms)-1)
	}

	// The fixtures twice (a replay), on the cluster and on one server.
	now := time.Now()
	fs := fixtures(now)
	single, _ := newTestSink(t, Config{Database: testDatabase("cluster_ref")})
	if err := single.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, st := range []*Store{s, single} {
		for i := range 2 {
			if err := st.Writer().Write(ctx, 100, fs); err != nil {
				t.Fatalf("Write #%d: %v", i+1, err)
			}
		}
	}
	checkFinalCounts(ctx, t, s, fs, " through the Distributed table")

	// Each job's rows on one shard, and both shards used.
	shardOf := map[string]int{}
	for i, shard := range c.Shards {
		one := newStore(Config{Addr: shard[0].Addr, Database: s.cfg.Database})
		rows, err := queryStrings(ctx, one, "SELECT DISTINCT job_id FROM "+one.table("findings_local"))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if prev, ok := shardOf[r[0]]; ok {
				t.Errorf("job %q on shards %d and %d", r[0], prev+1, i+1)
			}
			shardOf[r[0]] = i
		}
	}
	used := map[int]bool{}
	for _, sh := range shardOf {
		used[sh] = true
	}
	if len(shardOf) != 3 || len(used) != 2 {
		t.Errorf("jobs by shard %v: want the fixtures' 3 jobs over both shards", shardOf)
	}

	// The replicas of shard 1 hold the same rows once replication caught
	// up.
	r1 := newStore(Config{Addr: c.Shards[0][0].Addr, Database: s.cfg.Database})
	r2 := newStore(Config{Addr: c.Shards[0][1].Addr, Database: s.cfg.Database})
	for _, table := range tableOrder() {
		for _, r := range []*Store{r1, r2} {
			if err := r.conn.Exec(ctx, "SYSTEM SYNC REPLICA "+r.table(table+"_local")); err != nil {
				t.Fatal(err)
			}
		}
		q := "SELECT * FROM " + s.cfg.Database + "." + table + "_local ORDER BY tuple(*)"
		a, err := queryStrings(ctx, r1, q)
		if err != nil {
			t.Fatal(err)
		}
		b, err := queryStrings(ctx, r2, q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: replica r1 has %d rows, r2 %d", table, len(a), len(b))
		}
	}

	// serve's findings reader and top's view: the same through the
	// cluster as from one server.
	t.Run("serve findings", func(t *testing.T) {
		for _, fq := range []servestore.FindingsQuery{{}, {JobID: jobB}, {Kind: "hot_key", Limit: 2}} {
			got, err := s.Findings().Findings(ctx, fq)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := single.Findings().Findings(ctx, fq)
			if err != nil {
				t.Fatal(err)
			}
			if len(ref) == 0 || !reflect.DeepEqual(rawStrings(got), rawStrings(ref)) {
				t.Errorf("%+v: %d findings through the cluster, %d from one server:\n%s\n%s", fq, len(got), len(ref), rawStrings(got), rawStrings(ref))
			}
		}
	})
	t.Run("top view", func(t *testing.T) {
		q := topstore.Query{Since: now.Add(-time.Hour)}
		got, err := s.Top().View(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		checkTopJobs(t, got, topFixtureJobs(now))
		ref, err := single.Top().View(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, ref) {
			t.Errorf("top view through the cluster differs from one server's:\n%+v\n%+v", got, ref)
		}
	})
}

// rawStrings returns the JSON bodies as strings, for comparing and
// printing.
func rawStrings(bodies []json.RawMessage) string {
	var b strings.Builder
	for _, r := range bodies {
		b.Write(r)
		b.WriteByte('\n')
	}
	return b.String()
}
