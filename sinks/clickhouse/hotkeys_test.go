package clickhouse

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/sinks/topstore"
	"github.com/skewlens/skewlens/skew"
)

// TestHotKeyMarginsUpgrade upgrades a database made by the migrations
// before 0007, with a hot key row as sinks then wrote it, to the current
// schema, and writes a hot key with every field the engine now gives:
// the old row reads with no margin (zeros, an empty rule), the new one
// with its columns, in the table, in skewlens top's view and in the
// findings body the API serves.
func TestHotKeyMarginsUpgrade(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s, _ := newTestSink(t, Config{Database: testDatabase("margins")})
	migrateBefore(ctx, t, s, 7)
	cols, err := queryStrings(ctx, s, "SELECT count() FROM system.columns WHERE database = ? AND table = 'hot_keys' AND name = 'share_margin'", s.cfg.Database)
	if err != nil {
		t.Fatal(err)
	}
	if cols[0][0] != "0" {
		t.Fatalf("hot_keys has share_margin before migration 0007")
	}

	// A hot key row of an older sink: the columns it knew.
	now := time.Now()
	ws := fixtureBase(now)
	wt := time.UnixMilli(ws).UTC().Truncate(time.Second)
	wd := time.Date(wt.Year(), wt.Month(), wt.Day(), 0, 0, 0, 0, time.UTC)
	oldCols := append(commonColumns(), "key", "share", "estimated_records", "summary", "version", "inserted_at")
	old := row{jobA, jobAName, taskA, int32(1), ws, ws + windowMs, wt, wd, "user-7", 0.1, 30000.0, "", uint64(1), now.UTC().Truncate(time.Second)}
	if err := s.insertRows(ctx, tableHotKeys, oldCols, []row{old}); err != nil {
		t.Fatal(err)
	}

	// Migrate applies 0007 only; twice changes nothing.
	for i := 0; i < 2; i++ {
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("Migrate #%d: %v", i+1, err)
		}
	}
	got, err := queryStrings(ctx, s, "SELECT DISTINCT version FROM "+s.table("schema_migrations")+" WHERE version >= 7 ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0][0] != "7" {
		t.Fatalf("ledger after Migrate: %v, want 7", got)
	}

	// A hot key as the engine writes it now.
	hk := skew.Finding{Kind: skew.KindHotKey, JobID: jobA, JobName: jobAName, TaskName: taskA,
		SubtaskIndex: ptr(3), WindowStart: ws, WindowEnd: ws + windowMs,
		HotKey: &skew.HotKey{Key: "user-42", Share: 0.18, EstimatedRecords: 54000, ShareMargin: 0.031,
			Rule: "subtask", ShareLowerBound: 0.41, Threshold: 0.3, EvidenceWindows: 2, EvidenceRecords: 1200,
			SubtaskShare: 0.46, SubtaskShareMargin: 0.081, SubtaskExcess: 0.6, ExcessExplained: 0.77,
			Saturated: new(bool)}}
	*hk.Saturated = true
	if err := s.Writer().Write(ctx, 2, []skew.Finding{hk}); err != nil {
		t.Fatal(err)
	}

	got, err = queryStrings(ctx, s, "SELECT key, share, share_margin, rule, subtask_share, subtask_share_margin, subtask_excess, excess_explained FROM "+
		s.table(tableHotKeys)+" FINAL WHERE job_id = ? ORDER BY key", jobA)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"user-42", "0.18", "0.031", "subtask", "0.46", "0.081", "0.6", "0.77"},
		{"user-7", "0.1", "0", "", "0", "0", "0", "0"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hot_keys rows:\n got %q\nwant %q", got, want)
	}

	// skewlens top reads the margins; the old row has none.
	snap, err := s.Top().View(ctx, topstore.Query{Jobs: []string{jobA}})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Jobs) != 1 || len(snap.Jobs[0].HotKeys) != 2 {
		t.Fatalf("top view: %+v", snap.Jobs)
	}
	byKey := map[string]topstore.HotKey{}
	for _, h := range snap.Jobs[0].HotKeys {
		byKey[h.Key] = h
	}
	if h := byKey["user-42"]; h.Share != 0.18 || h.ShareMargin != 0.031 || h.SubtaskShare != 0.46 || h.SubtaskShareMargin != 0.081 {
		t.Errorf("top view of the new key: %+v", h)
	}
	if h := byKey["user-7"]; h.Share != 0.1 || h.ShareMargin != 0 || h.SubtaskShare != 0 || h.SubtaskShareMargin != 0 {
		t.Errorf("top view of the old key: %+v", h)
	}

	// The API's findings: the body carries every field.
	bodies, err := s.Findings().Findings(ctx, servestore.FindingsQuery{JobID: jobA, Kind: skew.KindHotKey})
	if err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 1 {
		t.Fatalf("%d hot_key findings, want 1", len(bodies))
	}
	var back skew.Finding
	if err := json.Unmarshal(bodies[0], &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, hk) {
		t.Errorf("findings body:\n got %+v\nwant %+v", *back.HotKey, *hk.HotKey)
	}
}

// migrateBefore applies the migrations before version to s's database,
// as a skewlens of that time would have, and records them in the ledger.
func migrateBefore(ctx context.Context, t *testing.T, s *Store, version int) {
	t.Helper()
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS `"+s.cfg.Database+"`"); err != nil {
		t.Fatal(err)
	}
	var ledger []row
	for _, m := range ms {
		if m.Version >= version {
			break
		}
		stmts, err := m.Render(s.Dialect(), s.cfg.Database, s.cfg.TTLDays)
		if err != nil {
			t.Fatal(err)
		}
		for i, stmt := range stmts {
			if err := s.applyStatement(ctx, s.conn, fmt.Sprintf("migration %04d statement %d", m.Version, i+1), stmt); err != nil {
				t.Fatal(err)
			}
		}
		if m.Version > 0 {
			ledger = append(ledger, row{uint32(m.Version), m.Name, string(s.Dialect()), time.Now().UTC().Truncate(time.Second)})
		}
	}
	if err := s.insertRows(ctx, "schema_migrations", []string{"version", "name", "dialect", "applied_at"}, ledger); err != nil {
		t.Fatal(err)
	}
}
