package clickhouse

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/sinks/topstore"
	"github.com/skewlens/skewlens/skew"
)

// topFixtureJobs returns what TopView should read from fixtures(now) with
// the default query: for each fixture job, the job as TopView returns it.
func topFixtureJobs(now time.Time) map[string]topstore.Job {
	base := fixtureBase(now)
	win := func(w int) topstore.Window {
		s := base + int64(w)*windowMs
		return topstore.Window{Start: s, End: s + windowMs}
	}
	newest := []topstore.Window{win(5), win(4), win(3)}
	jobs := map[string]topstore.Job{
		jobA: {
			JobID: jobA, JobName: jobAName, Windows: newest,
			Tasks: []topstore.Task{
				{TaskName: taskA, SkewScore: 62, MaxMedianRatio: 5, Window: win(5)},
				{TaskName: taskADedup, SkewScore: 40, MaxMedianRatio: 3, Window: win(5)},
			},
			TasksTotal: 2,
			HotKeys: []topstore.HotKey{
				{TaskName: taskA, SubtaskIndex: 3, Key: "user-42", KeyBytes: 7, Share: 0.4, EstimatedRecords: 120000, Window: win(5), Windows: 3,
					ShareMargin: 0.03, SubtaskShare: 0.64, SubtaskShareMargin: 0.05},
				{TaskName: taskA, SubtaskIndex: 1, Key: "user-7", KeyBytes: 6, Share: 0.1, EstimatedRecords: 30000, Window: win(5), Windows: 3},
			},
			HotKeysTotal: 2,
			Saturated: []topstore.Saturated{
				{TaskName: taskA, SubtaskIndex: 3, Cause: skew.CauseDataSkew, BusyMsPerSecond: 950,
					Host: "tm-3.flink.internal", Summary: "Subtask 3 of SessionWindow is saturated by hot key user-42.",
					SummaryBytes: 59, Window: win(5), Windows: 3},
				{TaskName: taskADedup, SubtaskIndex: 1, Cause: skew.CauseRotatingHotKey, BusyMsPerSecond: 920,
					Host: "tm-1.flink.internal", Summary: "The hot key of Dedup moves every 5 minutes.",
					SummaryBytes: 43, Window: win(5), Windows: 1},
			},
			SaturatedTotal: 2,
		},
		jobB: {
			JobID: jobB, JobName: jobBName, Windows: newest,
			Tasks: []topstore.Task{
				{TaskName: taskBUnder, SkewScore: 4, MaxMedianRatio: 1.05, Window: win(5)},
				{TaskName: taskBSlow, SkewScore: 3, MaxMedianRatio: 1.1, Window: win(5)},
			},
			TasksTotal: 2,
			Saturated: []topstore.Saturated{
				{TaskName: taskBSlow, SubtaskIndex: 5, Cause: skew.CauseSlowSubtask, BusyMsPerSecond: 990,
					Host:    "tm-9.flink.internal",
					Summary: "Subtask 5 of FraudScore on tm-9.flink.internal is slow; look at its sink client.",
					Window:  win(5), Windows: 3},
				{TaskName: taskBUnder, SubtaskIndex: -1, Cause: skew.CauseUnderProvisioned, BusyMsPerSecond: 900,
					Summary: "Enrich needs parallelism 8 instead of 4.", Window: win(5), Windows: 3},
			},
			SaturatedTotal: 2,
		},
	}
	for i := range jobs[jobB].Saturated {
		s := &jobs[jobB].Saturated[i]
		s.SummaryBytes = len(s.Summary)
	}
	// The hostile job: one window, ten hot keys of equal share, ordered by
	// task name, subtask and key; keys cut to topstore.DefaultMaxStringBytes.
	h := topstore.Job{JobID: jobHostile, Windows: []topstore.Window{win(0)}}
	for i, k := range hostileStrings() {
		h.HotKeys = append(h.HotKeys, topstore.HotKey{TaskName: "task\t" + k[:min(len(k), 20)], SubtaskIndex: i,
			Key: k[:min(len(k), topstore.DefaultMaxStringBytes)], KeyBytes: len(k), Share: 0.05,
			EstimatedRecords: float64(i), Window: win(0), Windows: 1})
	}
	sort.Slice(h.HotKeys, func(a, b int) bool {
		ka, kb := h.HotKeys[a], h.HotKeys[b]
		if ka.TaskName != kb.TaskName {
			return ka.TaskName < kb.TaskName
		}
		return ka.SubtaskIndex < kb.SubtaskIndex
	})
	h.HotKeysTotal = len(h.HotKeys)
	jobs[jobHostile] = h
	return jobs
}

// checkTopJobs compares the jobs of snap with want by job id; the hostile
// job's name is not compared (its findings carry ten different names).
func checkTopJobs(t *testing.T, snap topstore.Snapshot, want map[string]topstore.Job) {
	t.Helper()
	got := map[string]topstore.Job{}
	for _, j := range snap.Jobs {
		if j.JobID == jobHostile {
			j.JobName = ""
		}
		got[j.JobID] = j
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			t.Errorf("job %q missing", id)
			continue
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("job %q:\n got %s\nwant %s", id, topJobString(g), topJobString(w))
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("unexpected job %q", id)
		}
	}
}

// topJobString prints a job with long keys shortened, for test failures.
func topJobString(j topstore.Job) string {
	for i := range j.HotKeys {
		if k := j.HotKeys[i].Key; len(k) > 40 {
			j.HotKeys = append([]topstore.HotKey(nil), j.HotKeys...)
			j.HotKeys[i].Key = k[:40] + "..."
		}
	}
	return fmt.Sprintf("%+v", j)
}

func TestTopView(t *testing.T) {
	t.Parallel()
	ctx, s, _ := newMigratedSink(t, "top")

	// Before any finding: no jobs, and the defaults are filled in.
	before := time.Now()
	snap, err := s.Top().View(ctx, topstore.Query{})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	if len(snap.Jobs) != 0 {
		t.Errorf("empty tables: %d jobs", len(snap.Jobs))
	}
	q := snap.Query
	if q.Windows != topstore.DefaultWindows || q.Limit != topstore.DefaultLimit || q.MaxStringBytes != topstore.DefaultMaxStringBytes {
		t.Errorf("defaults not filled in: %+v", q)
	}
	if q.Since.Before(before.Add(-topstore.DefaultLookback).Truncate(time.Millisecond)) || q.Since.After(after.Add(-topstore.DefaultLookback)) {
		t.Errorf("default Since %v, want %v before the call (%v..%v)", q.Since, topstore.DefaultLookback, before, after)
	}

	// The fixtures, twice (a replay): TopView sees each finding once.
	now := time.Now()
	fs := fixtures(now)
	for i := 0; i < 2; i++ {
		if err := s.Writer().Write(ctx, 100, fs); err != nil {
			t.Fatal(err)
		}
	}
	want := topFixtureJobs(now)

	t.Run("default", func(t *testing.T) {
		snap, err := s.Top().View(ctx, topstore.Query{})
		if err != nil {
			t.Fatal(err)
		}
		checkTopJobs(t, snap, want)
		// jobA ("clickstream-sessions") sorts before jobB ("payments-fraud").
		var order []string
		for _, j := range snap.Jobs {
			if j.JobID != jobHostile {
				order = append(order, j.JobID)
			}
		}
		if !reflect.DeepEqual(order, []string{jobA, jobB}) {
			t.Errorf("job order %v, want [%s %s]", order, jobA, jobB)
		}
	})

	tests := []struct {
		name string
		q    topstore.Query
		want func() map[string]topstore.Job
	}{
		{
			name: "jobs filter with a hostile id",
			q:    topstore.Query{Jobs: []string{jobB, jobHostile, "no-such-job"}},
			want: func() map[string]topstore.Job {
				return map[string]topstore.Job{jobB: want[jobB], jobHostile: want[jobHostile]}
			},
		},
		{
			name: "newest window only",
			q:    topstore.Query{Jobs: []string{jobA}, Windows: 1},
			want: func() map[string]topstore.Job {
				j := want[jobA]
				j.Windows = j.Windows[:1]
				j.HotKeys = append([]topstore.HotKey(nil), j.HotKeys...)
				for i := range j.HotKeys {
					j.HotKeys[i].Windows = 1
				}
				j.Saturated = append([]topstore.Saturated(nil), j.Saturated...)
				j.Saturated[0].Windows = 1
				return map[string]topstore.Job{jobA: j}
			},
		},
		{
			name: "limit one row per section",
			q:    topstore.Query{Jobs: []string{jobA, jobB}, Limit: 1},
			want: func() map[string]topstore.Job {
				out := map[string]topstore.Job{}
				for _, id := range []string{jobA, jobB} {
					j := want[id]
					j.Tasks = j.Tasks[:1]
					if len(j.HotKeys) > 0 {
						j.HotKeys = j.HotKeys[:1]
					}
					j.Saturated = j.Saturated[:1]
					out[id] = j
				}
				return out
			},
		},
		{
			name: "short strings",
			q:    topstore.Query{Jobs: []string{jobA}, MaxStringBytes: 4},
			want: func() map[string]topstore.Job {
				j := want[jobA]
				j.HotKeys = append([]topstore.HotKey(nil), j.HotKeys...)
				for i := range j.HotKeys {
					j.HotKeys[i].Key = j.HotKeys[i].Key[:4]
				}
				j.Saturated = append([]topstore.Saturated(nil), j.Saturated...)
				for i := range j.Saturated {
					j.Saturated[i].Summary = j.Saturated[i].Summary[:4]
				}
				return map[string]topstore.Job{jobA: j}
			},
		},
		{
			name: "since after every window",
			q:    topstore.Query{Since: now.Add(time.Hour)},
			want: func() map[string]topstore.Job { return map[string]topstore.Job{} },
		},
		{
			name: "since between windows",
			q:    topstore.Query{Jobs: []string{jobHostile}, Since: time.UnixMilli(fixtureBase(now) + 1)},
			want: func() map[string]topstore.Job { return map[string]topstore.Job{} },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap, err := s.Top().View(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			checkTopJobs(t, snap, tc.want())
		})
	}

	t.Run("a job with statistics only", func(t *testing.T) {
		const jobC = "c0ffee00c0ffee00c0ffee00c0ffee00"
		base := fixtureBase(now)
		var stats []skew.Finding
		for w := 0; w < 2; w++ {
			for sub := 0; sub < 2; sub++ {
				stats = append(stats, skew.Finding{Kind: skew.KindSubtaskStats, JobID: jobC, JobName: "quiet",
					TaskName: "Map", SubtaskIndex: ptr(sub), WindowStart: base + int64(w)*windowMs,
					WindowEnd: base + int64(w+1)*windowMs,
					Stats:     &skew.SubtaskStats{BusyMsPerSecond: 100, SkewScore: float64(3 + w), MaxMedianRatio: 1.5}})
			}
		}
		if err := s.Writer().Write(ctx, 100, stats); err != nil {
			t.Fatal(err)
		}
		snap, err := s.Top().View(ctx, topstore.Query{Jobs: []string{jobC}})
		if err != nil {
			t.Fatal(err)
		}
		w1 := topstore.Window{Start: base + windowMs, End: base + 2*windowMs}
		checkTopJobs(t, snap, map[string]topstore.Job{jobC: {
			JobID: jobC, JobName: "quiet",
			Windows:    []topstore.Window{w1, {Start: base, End: base + windowMs}},
			Tasks:      []topstore.Task{{TaskName: "Map", SkewScore: 4, MaxMedianRatio: 1.5, Window: w1}},
			TasksTotal: 1,
		}})
	})

	t.Run("a higher version replaces", func(t *testing.T) {
		var newest []skew.Finding
		for _, f := range fs {
			if f.JobID == jobA && f.Kind == skew.KindHotKey && f.Key == "user-42" && f.WindowStart == want[jobA].Windows[0].Start {
				hk := *f.HotKey
				hk.Share, hk.ShareMargin, hk.SubtaskShare = 0.5, 0.02, 0.7
				f.HotKey = &hk
				newest = append(newest, f)
			}
		}
		if len(newest) != 1 {
			t.Fatalf("%d fixture findings for user-42 in the newest window, want 1", len(newest))
		}
		if err := s.Writer().Write(ctx, 101, newest); err != nil {
			t.Fatal(err)
		}
		snap, err := s.Top().View(ctx, topstore.Query{Jobs: []string{jobA}})
		if err != nil {
			t.Fatal(err)
		}
		j := want[jobA]
		j.HotKeys = append([]topstore.HotKey(nil), j.HotKeys...)
		j.HotKeys[0].Share, j.HotKeys[0].ShareMargin, j.HotKeys[0].SubtaskShare = 0.5, 0.02, 0.7
		checkTopJobs(t, snap, map[string]topstore.Job{jobA: j})
	})
}

func TestTopViewErrors(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// No Migrate: the tables do not exist.
	s, _ := newTestSink(t, Config{Database: testDatabase("top_errors")})

	tests := []struct {
		name  string
		q     topstore.Query
		close bool
		want  string
	}{
		{name: "missing tables", want: "read newest windows"},
		{name: "negative windows", q: topstore.Query{Windows: -1}, want: "windows -1"},
		{name: "limit too large", q: topstore.Query{Limit: topstore.MaxLimit + 1}, want: "limit"},
		{name: "negative max string bytes", q: topstore.Query{MaxStringBytes: -5}, want: "max string bytes"},
		{name: "closed", close: true, want: ErrClosed.Error()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.close {
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			_, err := s.Top().View(ctx, tc.q)
			if !retry.IsPermanent(err) {
				t.Fatalf("err = %v, want a a permanent error", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// TestTopViewModernChDB runs TopView's queries on chDB (a current
// ClickHouse, modern dialect) and checks that their rows build the same
// jobs as on 18.16. chdbexec runs a batch, so the detail queries use the
// windows the fixtures are known to have, and the windows query is checked
// against them too. The hostile job is left out: chdbexec returns output
// as JSON, which cannot carry invalid UTF-8.
func TestTopViewModernChDB(t *testing.T) {
	t.Parallel()
	lib := installChDB(t)
	bin := buildChdbExec(t)
	const db = "skewlens"
	s := &Store{cfg: Config{Database: db}}

	var reqs chdbBatch
	add := reqs.add
	reqs.migrate(t, db, "")
	now := time.Now()
	fs := fixtures(now)
	rows := findingRows(t, fs, 100, now)
	for pass := 0; pass < 2; pass++ { // a replay: TopView must deduplicate
		for _, table := range tableOrder() {
			reqs.insert(t, fmt.Sprintf("insert %s pass %d", table, pass), db, table, insertColumns(table), rows[table])
		}
	}

	q, err := topstore.Query{Jobs: []string{jobA, jobB}}.WithDefaults(now)
	if err != nil {
		t.Fatal(err)
	}
	all := topFixtureJobs(now)
	want := map[string]topstore.Job{jobA: all[jobA], jobB: all[jobB]}
	known := map[string]*topstore.Job{}
	for id, j := range want {
		known[id] = &topstore.Job{JobID: id, Windows: j.Windows}
	}
	reads := append([]topRead{s.topWindowsRead(q)}, s.topDetailReads(newTopFilter(s, q, known))...)
	for _, r := range reads {
		add("top "+r.op, bindForTest(t, r.sql, r.args))
	}

	res := runChDB(t, lib, bin, reqs)
	for _, r := range reqs {
		if got := res[r.Name]; !got.OK {
			t.Fatalf("%s: %s\n%s", r.Name, got.Error, firstLines(r.SQL, 10))
		}
	}
	jobs := map[string]*topstore.Job{}
	for _, r := range reads {
		for _, line := range strings.Split(strings.TrimSuffix(res["top "+r.op].Output, "\n"), "\n") {
			if line == "" {
				continue
			}
			if err := r.row(jobs, tsvScanner(strings.Split(line, "\t"))); err != nil {
				t.Fatalf("%s: %v in row %q", r.op, err, line)
			}
		}
	}
	checkTopJobs(t, topSnapshot(q, jobs), want)
}

// bindForTest replaces the ? placeholders of query with SQL literals of
// args (strings quoted and escaped as clickhouse-go does, integers), for
// chDB, which gets plain SQL text.
func bindForTest(t *testing.T, query string, args []any) string {
	t.Helper()
	quote := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\x00", `\0`)
	var b strings.Builder
	n := 0
	for _, c := range query {
		if c != '?' {
			b.WriteRune(c)
			continue
		}
		if n == len(args) {
			t.Fatalf("more placeholders than %d arguments in %s", len(args), query)
		}
		switch v := args[n].(type) {
		case string:
			b.WriteString("'" + quote.Replace(v) + "'")
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		default:
			t.Fatalf("bindForTest: argument %d has type %T", n, v)
		}
		n++
	}
	if n != len(args) {
		t.Fatalf("%d placeholders for %d arguments", n, len(args))
	}
	return b.String()
}

// tsvScanner scans the fields of one TabSeparated row into the types
// topRead rows scan into.
func tsvScanner(fields []string) func(dest ...any) error {
	return func(dest ...any) error {
		if len(dest) != len(fields) {
			return fmt.Errorf("%d fields for %d destinations", len(fields), len(dest))
		}
		for i, d := range dest {
			f := fields[i]
			var err error
			switch d := d.(type) {
			case *string:
				*d = tsvUnescape(f)
			case *int64:
				*d, err = strconv.ParseInt(f, 10, 64)
			case *int32:
				var v int64
				v, err = strconv.ParseInt(f, 10, 32)
				*d = int32(v)
			case *uint64:
				*d, err = strconv.ParseUint(f, 10, 64)
			case *float64:
				*d, err = strconv.ParseFloat(f, 64)
			default:
				return fmt.Errorf("tsvScanner: destination %d has type %T", i, d)
			}
			if err != nil {
				return fmt.Errorf("field %d %q: %w", i, f, err)
			}
		}
		return nil
	}
}

// tsvUnescape undoes ClickHouse's TabSeparated escaping of a string.
func tsvUnescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case '0':
			b.WriteByte(0)
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
