package clickhouse

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew"
)

// TestStatsQuery writes the fixtures, then their statistics again at a
// higher version with other numbers, and reads them back with the
// StatsReader: each row once, as last written, byte for byte the JSON of
// the finding that was written, newest window first, then by job, task
// and subtask; and nothing of it in the findings table.
func TestStatsQuery(t *testing.T) {
	t.Parallel()
	ctx, s, _ := newMigratedSink(t, "statsq")
	now := time.Now()
	fs := fixtures(now)
	if err := s.Writer().Write(ctx, 1, fs); err != nil {
		t.Fatal(err)
	}
	var stats []skew.Finding
	for _, f := range fs {
		if f.Kind != skew.KindSubtaskStats {
			continue
		}
		st := *f.Stats
		st.BusySource = "gauge"
		st.CheckpointAlignMs += 0.5
		f.Stats = &st
		stats = append(stats, f)
	}
	// A job and task of their own with the highest subtask index first,
	// and strings JSON escapes.
	for sub := 2; sub >= 0; sub-- {
		stats = append(stats, skew.Finding{Kind: skew.KindSubtaskStats, JobID: jobB, JobName: "n\"ame\n",
			TaskName: "Sink: <es> & co", SubtaskIndex: ptr(sub), WindowStart: fixtureBase(now), WindowEnd: fixtureBase(now) + windowMs,
			Stats: &skew.SubtaskStats{Host: "h\xff", QueueCapacity: 12, InputShare: 1.0 / 3, Saturated: sub == 1}})
	}
	if err := s.Writer().Write(ctx, 2, stats); err != nil {
		t.Fatal(err)
	}

	// want returns the JSON of the statistics q selects, in the reader's
	// order.
	want := func(q servestore.StatsQuery) []string {
		sel := []skew.Finding{}
		for _, f := range stats {
			if q.JobID != "" && f.JobID != q.JobID || q.TaskName != "" && f.TaskName != q.TaskName ||
				!q.Since.IsZero() && f.WindowStart < q.Since.UnixMilli() {
				continue
			}
			sel = append(sel, f)
		}
		sort.Slice(sel, func(i, j int) bool {
			a, b := sel[i], sel[j]
			switch {
			case a.WindowStart != b.WindowStart:
				return a.WindowStart > b.WindowStart
			case a.JobID != b.JobID:
				return a.JobID < b.JobID
			case a.TaskName != b.TaskName:
				return a.TaskName < b.TaskName
			}
			return *a.SubtaskIndex < *b.SubtaskIndex
		})
		out := []string{}
		for i := range sel {
			b, err := marshalJSON(&sel[i])
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
		limit := q.Limit
		if limit == 0 {
			limit = DefaultStatsLimit
		}
		return out[:min(len(out), limit)]
	}
	base := fixtureBase(now)
	tests := []struct {
		name string
		q    servestore.StatsQuery
		n    int // the number of rows, when known
	}{
		{name: "all", q: servestore.StatsQuery{Limit: MaxStatsLimit}, n: len(stats)},
		{name: "default limit", q: servestore.StatsQuery{}},
		{name: "limit", q: servestore.StatsQuery{Limit: 5}, n: 5},
		{name: "job", q: servestore.StatsQuery{JobID: jobB, Limit: 100}, n: 3},
		{name: "task in every job", q: servestore.StatsQuery{TaskName: taskA, Limit: 100}, n: 4 * fixtureWin},
		{name: "job and task since", q: servestore.StatsQuery{JobID: jobA, TaskName: taskA, Since: time.UnixMilli(base + 4*windowMs), Limit: 100}, n: 8},
		{name: "job without statistics", q: servestore.StatsQuery{JobID: jobHostile}, n: 0},
		{name: "since the future", q: servestore.StatsQuery{Since: now.Add(time.Hour)}, n: 0},
		{name: "injection", q: servestore.StatsQuery{JobID: "x' OR 1=1 --", TaskName: "'; DROP TABLE subtask_stats; --"}, n: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := s.Stats().Stats(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, r := range raw {
				got = append(got, string(r))
			}
			w := want(tt.q)
			if tt.name != "default limit" && len(w) != tt.n {
				t.Fatalf("test expects %d rows, the fixtures give %d", tt.n, len(w))
			}
			if !reflect.DeepEqual(got, w) {
				t.Errorf("got %d rows, want %d", len(got), len(w))
				for i := range max(len(got), len(w)) {
					var g, x string
					if i < len(got) {
						g = got[i]
					}
					if i < len(w) {
						x = w[i]
					}
					if g != x {
						t.Errorf("row %d:\n got %s\nwant %s", i, g, x)
						break
					}
				}
			}
		})
	}

	// The statistics are not in findings, and the findings are all there.
	got, err := queryStrings(ctx, s, "SELECT count(), countIf(kind = ?) FROM "+s.table(tableFindings)+" FINAL", skew.KindSubtaskStats)
	if err != nil {
		t.Fatal(err)
	}
	if want := [][]string{{fmt.Sprint(fixtureCounts(fs)[tableFindings]), "0"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("findings table: (rows, statistics rows) = %v, want %v", got, want)
	}
	// Every row is a finding of the contract.
	raw, err := s.Stats().Stats(ctx, servestore.StatsQuery{JobID: jobB})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range raw {
		var f skew.Finding
		if err := json.Unmarshal(r, &f); err != nil || f.Kind != skew.KindSubtaskStats || f.Stats == nil || f.SubtaskIndex == nil {
			t.Errorf("row %s: not a subtask_stats finding (%v)", r, err)
		}
	}
}

// TestMigrateAddColumnTwice runs migration 0004, which adds a column,
// again on a migrated database, as after a crash before it was recorded:
// on 18.16, which has no ADD COLUMN IF NOT EXISTS, as on newer servers,
// it changes nothing and succeeds.
func TestMigrateAddColumnTwice(t *testing.T) {
	t.Parallel()
	ctx, s, _ := newMigratedSink(t, "addcol")
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	var adds int
	for _, m := range ms {
		stmts, err := m.Render(s.Dialect(), s.cfg.Database, s.cfg.TTLDays)
		if err != nil {
			t.Fatal(err)
		}
		for i, stmt := range stmts {
			ac, ok := parseAddColumn(stmt)
			if !ok {
				continue
			}
			adds++
			if err := s.applyStatement(ctx, s.conn, fmt.Sprintf("migration %04d statement %d again", m.Version, i+1), stmt); err != nil {
				t.Errorf("migration %04d statement %d again: %v", m.Version, i+1, err)
			}
			got, err := queryStrings(ctx, s, "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = ?",
				ac.database, ac.table, ac.column)
			if err != nil {
				t.Fatal(err)
			}
			if got[0][0] != "1" {
				t.Errorf("%s.%s: %s columns named %s, want 1", ac.database, ac.table, got[0][0], ac.column)
			}
		}
	}
	if adds == 0 {
		t.Fatal("no migration adds a column")
	}
}
