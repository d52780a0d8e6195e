package clickhouse

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// colValue returns the value of column col in a row of table.
func colValue(t *testing.T, table string, r row, col string) any {
	t.Helper()
	cols := insertColumns(table)
	if len(cols) != len(r) {
		t.Fatalf("%s row has %d values for %d columns", table, len(r), len(cols))
	}
	for i, c := range cols {
		if c == col {
			return r[i]
		}
	}
	t.Fatalf("%s has no column %s", table, col)
	return nil
}

func TestMapFinding(t *testing.T) {
	now := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	ws := time.Date(2026, 12, 1, 23, 59, 59, 999e6, time.UTC).UnixMilli()
	sat := skew.Finding{Kind: skew.KindSaturation, JobID: "j", JobName: "n", TaskName: "t",
		SubtaskIndex: ptr(3), WindowStart: ws, WindowEnd: ws + 10000,
		Saturation: &skew.Saturation{Cause: skew.CauseDataSkew, Host: "h", TaskAttemptID: "a",
			Evidence: &skew.Evidence{BusyMsPerSecond: 900, SkewScore: 55, PreviousHotSubtask: ptr(2),
				UpstreamBackPressed: []string{"Source"}, RecommendedParallelism: 12}},
		Summary: "s <&> x"}
	under := skew.Finding{Kind: skew.KindSaturation, JobID: "j", TaskName: "t", WindowStart: ws, WindowEnd: ws,
		Saturation: &skew.Saturation{Cause: skew.CauseUnderProvisioned}}
	hot := skew.Finding{Kind: skew.KindHotKey, JobID: "j", TaskName: "t", SubtaskIndex: ptr(1),
		WindowStart: ws, WindowEnd: ws + 1, HotKey: &skew.HotKey{Key: "k\xff", Share: 0.5, EstimatedRecords: 7}}
	plan := skew.Finding{Kind: skew.KindSaltingPlan, JobID: "j", TaskName: "t", WindowStart: ws, WindowEnd: ws + 1,
		Plan: &skew.Plan{Parallelism: 4, MaxParallelism: 128, MaxOverMeanBefore: 3, MaxOverMeanAfter: 1,
			Keys: []skew.SaltedKey{{Key: "a"}, {Key: "b"}}, SQL: "q"}}
	stats := skew.Finding{Kind: skew.KindSubtaskStats, JobID: "j", TaskName: "t", SubtaskIndex: ptr(0),
		WindowStart: ws, WindowEnd: ws + 1, Stats: &skew.SubtaskStats{Host: "h", Saturated: true, SkewScore: 9, CheckpointDelayMs: 4, BusySource: "counter"}}
	future := skew.Finding{Kind: "new_kind", JobID: "j", TaskName: "t", WindowStart: ws, WindowEnd: ws}

	type check struct {
		table, col string
		want       any
	}
	tests := []struct {
		name   string
		f      skew.Finding
		counts map[string]int
		checks []check
	}{
		{name: "saturation", f: sat, counts: map[string]int{tableFindings: 1},
			checks: []check{
				{tableFindings, "kind", "saturation"}, {tableFindings, "cause", "data_skew"},
				{tableFindings, "subtask_index", int32(3)}, {tableFindings, "host", "h"},
				{tableFindings, "busy_ms_per_s", 900.0}, {tableFindings, "skew_score", 55.0},
				{tableFindings, "previous_hot_subtask", int32(2)}, {tableFindings, "recommended_parallelism", int32(12)},
				{tableFindings, "window_time", time.Date(2026, 12, 1, 23, 59, 59, 0, time.UTC)},
				{tableFindings, "window_date", time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
				{tableFindings, "window_start", ws}, {tableFindings, "version", uint64(42)},
				{tableFindings, "inserted_at", now}, {tableFindings, "summary", "s <&> x"},
			}},
		{name: "task-wide", f: under, counts: map[string]int{tableFindings: 1},
			checks: []check{{tableFindings, "subtask_index", int32(-1)}, {tableFindings, "previous_hot_subtask", int32(-1)},
				{tableFindings, "evidence", ""}}},
		{name: "hot key", f: hot, counts: map[string]int{tableFindings: 1, tableHotKeys: 1},
			checks: []check{{tableHotKeys, "key", "k\xff"}, {tableHotKeys, "share", 0.5},
				{tableHotKeys, "estimated_records", 7.0}, {tableFindings, "key", "k\xff"}, {tableFindings, "kind", "hot_key"}}},
		{name: "plan", f: plan, counts: map[string]int{tableFindings: 1, tableSaltingPlans: 1},
			checks: []check{{tableSaltingPlans, "hot_key_count", uint32(2)}, {tableSaltingPlans, "max_over_mean_before", 3.0},
				{tableSaltingPlans, "subtask_index", int32(-1)}, {tableSaltingPlans, "sql", "q"},
				{tableFindings, "parallelism", int32(4)}}},
		{name: "stats go to subtask_stats only", f: stats, counts: map[string]int{tableSubtaskStats: 1},
			checks: []check{{tableSubtaskStats, "saturated", uint8(1)}, {tableSubtaskStats, "task_skew_score", 9.0},
				{tableSubtaskStats, "checkpoint_start_delay_ms", 4.0}, {tableSubtaskStats, "busy_source", "counter"},
				{tableSubtaskStats, "host", "h"}, {tableSubtaskStats, "subtask_index", int32(0)},
				{tableSubtaskStats, "version", uint64(42)}}},
		{name: "unknown kind goes to findings only", f: future, counts: map[string]int{tableFindings: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := tableRows{}
			if err := mapFinding(out, &tt.f, 42, now); err != nil {
				t.Fatal(err)
			}
			for _, table := range tableOrder() {
				if got := len(out[table]); got != tt.counts[table] {
					t.Errorf("%s rows = %d, want %d", table, got, tt.counts[table])
				}
				for _, r := range out[table] {
					if len(r) != len(insertColumns(table)) {
						t.Errorf("%s row has %d values, want %d", table, len(r), len(insertColumns(table)))
					}
				}
			}
			for _, c := range tt.checks {
				got := colValue(t, c.table, out[c.table][0], c.col)
				if gt, ok := got.(time.Time); ok {
					if !gt.Equal(c.want.(time.Time)) {
						t.Errorf("%s.%s = %v, want %v", c.table, c.col, got, c.want)
					}
					continue
				}
				if got != c.want {
					t.Errorf("%s.%s = %#v, want %#v", c.table, c.col, got, c.want)
				}
			}
			if tt.counts[tableFindings] == 0 {
				return
			}
			// The body column is the finding's JSON contract.
			body := colValue(t, tableFindings, out[tableFindings][0], "body").(string)
			var back skew.Finding
			if err := json.Unmarshal([]byte(body), &back); err != nil {
				t.Fatalf("body is not JSON: %v", err)
			}
			if back.Kind != tt.f.Kind || back.WindowStart != tt.f.WindowStart {
				t.Errorf("body = %s", body)
			}
			if strings.Contains(body, `\u003c`) {
				t.Errorf("body escapes HTML: %s", body)
			}
		})
	}
}

func TestMapFindingRejects(t *testing.T) {
	ok := func() skew.Finding {
		return skew.Finding{Kind: skew.KindHotKey, JobID: "j", TaskName: "t", SubtaskIndex: ptr(1),
			WindowStart: 1000, WindowEnd: 2000, HotKey: &skew.HotKey{Key: "k"}}
	}
	tests := []struct {
		name   string
		mutate func(*skew.Finding)
		want   string
	}{
		{"empty job", func(f *skew.Finding) { f.JobID = "" }, "job_id"},
		{"empty task", func(f *skew.Finding) { f.TaskName = "" }, "task_name"},
		{"empty kind", func(f *skew.Finding) { f.Kind = "" }, "kind"},
		{"negative window", func(f *skew.Finding) { f.WindowStart = -1 }, "DateTime range"},
		{"window past 2106", func(f *skew.Finding) { f.WindowStart = maxDateTimeMs + 1; f.WindowEnd = f.WindowStart }, "DateTime range"},
		{"end before start", func(f *skew.Finding) { f.WindowEnd = 999 }, "before"},
		{"negative subtask", func(f *skew.Finding) { f.SubtaskIndex = ptr(-2) }, "subtask_index"},
		{"hot key without body", func(f *skew.Finding) { f.HotKey = nil }, "without key"},
		{"saturation without body", func(f *skew.Finding) { f.Kind = skew.KindSaturation; f.HotKey = nil }, "without cause"},
		{"plan without body", func(f *skew.Finding) { f.Kind = skew.KindSaltingPlan }, "without plan"},
		{"stats without body", func(f *skew.Finding) { f.Kind = skew.KindSubtaskStats }, "without stats"},
		{"stats without subtask", func(f *skew.Finding) {
			f.Kind, f.SubtaskIndex, f.Stats = skew.KindSubtaskStats, nil, &skew.SubtaskStats{}
		}, "without subtask_index"},
		{"NaN in stats", func(f *skew.Finding) {
			f.Kind, f.Stats = skew.KindSubtaskStats, &skew.SubtaskStats{InPoolUsage: math.NaN()}
		}, "in_pool_usage"},
		{"infinite stats", func(f *skew.Finding) {
			f.Kind, f.Stats = skew.KindSubtaskStats, &skew.SubtaskStats{RecordsInPerSecond: math.Inf(1)}
		}, "records_in_per_s"},
		{"NaN cannot be encoded", func(f *skew.Finding) { f.Share = math.NaN() }, "encode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := ok()
			tt.mutate(&f)
			out := tableRows{}
			err := mapFinding(out, &f, 1, time.Now())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want containing %q", err, tt.want)
			}
			if len(out) != 0 {
				t.Errorf("rows added despite the error: %v", out)
			}
		})
	}
}

// TestFixturesMap checks that every fixture finding maps (the integration
// tests rely on it).
func TestFixturesMap(t *testing.T) {
	fs := fixtures(time.Now())
	out := tableRows{}
	for i := range fs {
		if err := mapFinding(out, &fs[i], 1, time.Now()); err != nil {
			t.Fatalf("fixture %d: %v", i, err)
		}
	}
	for table, n := range fixtureCounts(fs) {
		if len(out[table]) != n {
			t.Errorf("%s: %d rows, want %d", table, len(out[table]), n)
		}
	}
}
