package clickhouse

import (
	"context"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// TestStateRoundTrip saves engine state twice for one consumer group and
// once for another: LoadState returns the latest version of each job of
// the group asked for, with hostile job IDs and sources intact, and
// without the jobs a tombstone deleted.
func TestStateRoundTrip(t *testing.T) {
	s, _ := newTestSink(t, Config{Database: testDatabase("state")})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	failed := 3.0
	hostile := "j'); DROP TABLE engine_state; --\n\\"
	v1 := []skew.JobState{
		{WindowMs: 10000, JobID: "a", ClosedUpTo: 10000, Tasks: []skew.TaskState{{Name: "t", LastDominant: -1, PrevDominant: -1}}},
		{WindowMs: 10000, JobID: hostile, ClosedUpTo: 10000, Sources: []skew.Source{{Topic: "flink-metrics", Partition: 3}}},
		{WindowMs: 10000, JobID: "ends", ClosedUpTo: 10000},
	}
	v2 := []skew.JobState{
		{WindowMs: 10000, JobID: "a", JobName: "billing", ClosedUpTo: 20000, LastFailed: &failed, Tasks: []skew.TaskState{{
			Name: "t", Parallelism: 4, MaxParallelism: 128, LastDominant: 2, PrevDominant: 1, UpSustained: 3,
			Subtasks: []skew.SubtaskState{{Host: "10.0.0.1", Sustained: 2, Count: 5, CountTS: 19000, HasCount: true}},
		}}},
		{JobID: "ends", Ended: true},
	}
	other := []skew.JobState{{WindowMs: 10000, JobID: "a", ClosedUpTo: 99000}}
	for _, step := range []struct {
		group   string
		version uint64
		states  []skew.JobState
	}{{"g", 1, v1}, {"g", 2, v2}, {"other", 5, other}} {
		if err := s.Writer().SaveState(ctx, step.group, step.version, step.states); err != nil {
			t.Fatalf("SaveState %s v%d: %v", step.group, step.version, err)
		}
	}
	// A state that does not decode (corrupt, or of another version) is
	// refused with its job; the others load.
	if err := s.Writer().saveJobStates(ctx, "save", "g", partEngine, 3, []jobPart{{"corrupt", `{"job_id":"corrupt","window_ms":"ten"}`}}); err != nil {
		t.Fatal(err)
	}
	got, refused, err := s.Writer().LoadState(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	want := []skew.JobState{v2[0], v1[1]}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadState:\n got %+v\nwant %+v", got, want)
	}
	if len(refused) != 1 || refused[0].JobID != "corrupt" || !strings.Contains(refused[0].Err.Error(), `job "corrupt"`) {
		t.Fatalf("refused %v, want the corrupt job, named", refused)
	}
	none, refused, err := s.Writer().LoadState(ctx, "nobody")
	if err != nil || len(none) != 0 || len(refused) != 0 {
		t.Fatalf("LoadState of an unknown group: %v, %v, %v", none, refused, err)
	}
	// The restored states are valid engine state.
	eng, err := skew.New(skew.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if refused, err := eng.Restore(got); err != nil || refused != nil {
		t.Fatal(err, refused)
	}
}

// TestJobStateUpgrade upgrades a database made by the migrations before
// 0008, with engine and alert state in their old tables, to the current
// schema: the latest state of each part and job is read from job_state,
// a state saved now replaces the copied one, and the parts of one job do
// not mix.
func TestJobStateUpgrade(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, _ := newTestSink(t, Config{Database: testDatabase("jobstate_upgrade")})
	migrateBefore(ctx, t, s, 8)
	// The old tables, as the retired migrations 0002 and 0006 created
	// them (engine_state had closed_up_to too).
	for table, extra := range map[string]string{"engine_state": "closed_up_to Int64,", "alert_state": ""} {
		if err := s.conn.Exec(ctx, "CREATE TABLE "+s.table(table)+" (consumer_group String, job_id String, "+extra+
			" state String, version UInt64, saved_at DateTime) ENGINE = ReplacingMergeTree(version) ORDER BY (consumer_group, job_id)"); err != nil {
			t.Fatal(err)
		}
	}
	saved := time.Now().UTC().Truncate(time.Second)
	engine := func(job string, closed int64) string {
		b, err := json.Marshal(skew.JobState{JobID: job, WindowMs: 10000, ClosedUpTo: closed})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// As older sinks wrote them: two versions of a, one of b; b's alerts
	// are over.
	if err := s.insertRows(ctx, "engine_state", []string{"consumer_group", "job_id", "closed_up_to", "state", "version", "saved_at"}, []row{
		{"g", "a", int64(10000), engine("a", 10000), uint64(1), saved},
		{"g", "a", int64(20000), engine("a", 20000), uint64(2), saved},
		{"g", "b", int64(10000), engine("b", 10000), uint64(1), saved},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.insertRows(ctx, "alert_state", []string{"consumer_group", "job_id", "state", "version", "saved_at"}, []row{
		{"g", "a", `{"v":1,"job_id":"a","now":2}`, uint64(2), saved},
		{"g", "b", `{"v":1,"job_id":"b","now":1}`, uint64(1), saved},
		{"g", "b", "", uint64(2), saved},
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 { // the copy, twice, changes nothing
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("Migrate #%d: %v", i+1, err)
		}
	}
	w := s.Writer()
	states, _, err := w.LoadState(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 2 || states[0].JobID != "a" || states[0].ClosedUpTo != 20000 || states[1].JobID != "b" {
		t.Fatalf("engine states after the upgrade: %+v, want a at 20000 and b", states)
	}
	alerts, err := w.LoadAlertState(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if len(alerts) != 1 || alerts[0].JobID != "a" || string(alerts[0].State) != `{"v":1,"job_id":"a","now":2}` {
		t.Fatalf("alert states after the upgrade: %q, want a's latest only", alerts)
	}
	// Saved now (wall-clock versions): a ends, b goes on; the alert part
	// of b stays deleted.
	if err := w.SaveState(ctx, "g", uint64(time.Now().UnixNano()), []skew.JobState{
		{JobID: "a", Ended: true}, {JobID: "b", WindowMs: 10000, ClosedUpTo: 30000},
	}); err != nil {
		t.Fatal(err)
	}
	if states, _, err = w.LoadState(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if len(states) != 1 || states[0].JobID != "b" || states[0].ClosedUpTo != 30000 {
		t.Fatalf("engine states after a save: %+v, want b at 30000", states)
	}
	if alerts, err = w.LoadAlertState(ctx, "g"); err != nil || len(alerts) != 1 || alerts[0].JobID != "a" {
		t.Fatalf("alert states after an engine save: %q, %v, want a's", alerts, err)
	}
}

// TestFreshDatabaseHasNoRetiredTables: a database this release sets up
// has job_state and none of the tables retired migrations created; the
// upgrade finds nothing to copy, and a second Migrate changes nothing.
func TestFreshDatabaseHasNoRetiredTables(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, _ := newTestSink(t, Config{Database: testDatabase("fresh")})
	for range 2 {
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	count := func(table string) uint64 {
		var n uint64
		if err := s.conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name = ?", s.cfg.Database, table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if count("job_state") != 1 || count("engine_state")+count("alert_state") != 0 {
		t.Fatalf("tables job_state %d, engine_state %d, alert_state %d: want job_state only", count("job_state"), count("engine_state"), count("alert_state"))
	}
}

// TestWriteDDL checks the printed schema: the legacy form has nothing
// ClickHouse 18.16 lacks, the cluster form names the cluster, and the
// upgrades are comments only.
func TestWriteDDL(t *testing.T) {
	render := func(d Dialect, cluster string) string {
		var b strings.Builder
		cfg := DefaultConfig()
		cfg.Cluster = cluster
		if err := WriteDDL(&b, d, cfg); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	legacy, modern := render(DialectLegacy, ""), render(DialectModern, "")
	for _, no := range []string{"LowCardinality", "CODEC", "TTL ", "ADD COLUMN IF NOT EXISTS", "\nINSERT"} {
		if strings.Contains(legacy, no) {
			t.Errorf("legacy DDL has %q", no)
		}
	}
	for _, want := range []string{"LowCardinality(String)", "TTL window_date + INTERVAL 30 DAY", "ADD COLUMN IF NOT EXISTS", "-- upgrade: only if the database has the table engine_state"} {
		if !strings.Contains(modern, want) {
			t.Errorf("modern DDL lacks %q", want)
		}
	}
	if c := render(DialectModern, "prod"); !strings.Contains(c, "ON CLUSTER `prod`") || !strings.Contains(c, "ENGINE = Distributed") {
		t.Errorf("cluster DDL:\n%s", c)
	}
	if err := WriteDDL(io.Discard, "mysql", DefaultConfig()); err == nil {
		t.Error("WriteDDL of an unknown dialect succeeded")
	}
}

// TestWriteDDLInstalls applies the printed schema of the server's dialect
// by hand, statement by statement, as a DBA would: the tables are there,
// and Migrate then finds nothing it cannot apply again.
func TestWriteDDLInstalls(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, _ := newTestSink(t, Config{Database: testDatabase("ddl")})
	var b strings.Builder
	if err := WriteDDL(&b, s.Dialect(), s.cfg); err != nil {
		t.Fatal(err)
	}
	var sql []string
	for line := range strings.SplitSeq(b.String(), "\n") {
		if !strings.HasPrefix(line, "--") {
			sql = append(sql, line)
		}
	}
	n := 0
	for stmt := range strings.SplitSeq(strings.Join(sql, "\n"), ";\n") {
		if stmt = strings.TrimSpace(stmt); stmt != "" {
			if err := s.conn.Exec(ctx, stmt); err != nil {
				t.Fatalf("statement %d: %v\n%s", n+1, err, stmt)
			}
			n++
		}
	}
	for _, table := range append(tableOrder(), "job_state", "incidents", "plans") {
		var c uint64
		if err := s.conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name = ?", s.cfg.Database, table).Scan(&c); err != nil || c != 1 {
			t.Fatalf("table %s after the printed DDL: %d, %v", table, c, err)
		}
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
}
