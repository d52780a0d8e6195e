package clickhouse

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/keygroup"
	"github.com/skewlens/skewlens/skew/plans"
)

// testPlan returns a valid plan for job and task with two buckets per
// key, routed as Flink routes them at parallelism 4 / max parallelism 128.
func testPlan(job, task string, version uint64, updated time.Time, keys ...string) *plans.Plan {
	r := keygroup.Router{Parallelism: 4, MaxParallelism: 128}
	p := &plans.Plan{
		JobID: job, TaskName: task, Parallelism: 4, MaxParallelism: 128, Version: version,
		GeneratedAt: updated.UTC(), UpdatedAt: updated.UTC(), ExpiresAt: updated.Add(10 * time.Minute).UTC(),
		Separator: "#", Source: plans.SourceEngine, MaxOverMeanBefore: 2, MaxOverMeanAfter: 1.1,
	}
	for _, k := range keys {
		hk := plans.HotKey{Key: k, Share: 0.3, Subtask: r.Subtask(k), Buckets: 2, LastHotAt: updated.UTC()}
		for b := 0; b < 2; b++ {
			sk := fmt.Sprintf("%s#%d", k, b)
			kg, st := r.Route(keygroup.StringHash(sk))
			hk.Salted = append(hk.Salted, skew.SaltTarget{Key: sk, KeyGroup: kg, Subtask: st})
		}
		p.HotKeys = append(p.HotKeys, hk)
	}
	return p
}

func planSummaries(ps []plans.Plan) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s v%d %s", plans.Key(p.JobID, p.TaskName), p.Version, p.UpdatedAt.Format(time.TimeOnly)))
	}
	return out
}

func TestPlansLifecycle(t *testing.T) {
	t.Parallel()
	ctx, s, _ := newMigratedSink(t, "plans")
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now := t0.Add(time.Minute)
	const job = "84dce1ec8aa5a4df2d1758d6e9278693"

	pinned := testPlan(job, "Pinned", 4, t0, "p")
	pinned.Pinned, pinned.ExpiresAt = true, time.Time{}
	expired := testPlan(job, "Expired", 1, t0.Add(-time.Hour), "e")
	steps := []struct {
		name    string
		changes []plans.Change
		now     time.Time
		want    []string
	}{
		{
			name: "first versions",
			changes: []plans.Change{
				{JobID: job, TaskName: "A", Plan: testPlan(job, "A", 1, t0, "k1")},
				{JobID: job, TaskName: "Expired", Plan: expired},
				{JobID: job, TaskName: "Pinned", Plan: pinned},
			},
			now:  now,
			want: []string{job + "/A v1 12:00:00", job + "/Pinned v4 12:00:00"},
		},
		{
			name:    "new version and a confirmation of it",
			changes: []plans.Change{{JobID: job, TaskName: "A", Plan: testPlan(job, "A", 2, t0.Add(time.Second), "k1", "k2")}, {JobID: job, TaskName: "A", Plan: testPlan(job, "A", 2, t0.Add(2*time.Second), "k1", "k2")}},
			now:     now,
			want:    []string{job + "/A v2 12:00:02", job + "/Pinned v4 12:00:00"},
		},
		{
			name:    "replay of older states changes nothing",
			changes: []plans.Change{{JobID: job, TaskName: "A", Plan: testPlan(job, "A", 1, t0, "k1")}, {JobID: job, TaskName: "A", Plan: testPlan(job, "A", 2, t0.Add(time.Second), "k1", "k2")}},
			now:     now,
			want:    []string{job + "/A v2 12:00:02", job + "/Pinned v4 12:00:00"},
		},
		{
			name:    "pinned plans do not expire, others do",
			now:     t0.Add(24 * time.Hour),
			want:    []string{job + "/Pinned v4 12:00:00"},
			changes: nil,
		},
		{
			name:    "retirement, twice, and of a task without plan",
			changes: []plans.Change{{JobID: job, TaskName: "A", Retired: true}, {JobID: job, TaskName: "A", Retired: true}, {JobID: job, TaskName: "None", Retired: true}},
			now:     now,
			want:    []string{job + "/Pinned v4 12:00:00"},
		},
		{
			name:    "a replayed older state does not undo the retirement",
			changes: []plans.Change{{JobID: job, TaskName: "A", Plan: testPlan(job, "A", 2, t0.Add(2*time.Second), "k1", "k2")}},
			now:     now,
			want:    []string{job + "/Pinned v4 12:00:00"},
		},
		{
			name:    "a new version after the retirement",
			changes: []plans.Change{{JobID: job, TaskName: "A", Plan: testPlan(job, "A", 3, t0.Add(time.Minute), "k3")}},
			now:     now,
			want:    []string{job + "/A v3 12:01:00", job + "/Pinned v4 12:00:00"},
		},
		{
			name: "changes apply in order within one call",
			changes: []plans.Change{
				{JobID: job, TaskName: "B", Plan: testPlan(job, "B", 1, t0, "b")},
				{JobID: job, TaskName: "B", Retired: true, Version: 1, At: t0.Add(5 * time.Second)},
				{JobID: job, TaskName: "C", Plan: testPlan(job, "C", 1, t0, "c")},
				{JobID: job, TaskName: "C", Retired: true},
				{JobID: job, TaskName: "C", Plan: testPlan(job, "C", 2, t0.Add(time.Second), "c", "d")},
			},
			now:  now,
			want: []string{job + "/A v3 12:01:00", job + "/C v2 12:00:01", job + "/Pinned v4 12:00:00"},
		},
	}
	for _, st := range steps {
		if err := s.Writer().WritePlans(ctx, st.changes); err != nil {
			t.Fatalf("%s: WritePlans: %v", st.name, err)
		}
		got, err := s.Plans().CurrentPlans(ctx, st.now)
		if err != nil {
			t.Fatalf("%s: CurrentPlans: %v", st.name, err)
		}
		if sum := planSummaries(got); !reflect.DeepEqual(sum, st.want) {
			t.Errorf("%s: CurrentPlans = %q, want %q", st.name, sum, st.want)
		}
	}
	// The zero time filters nothing but retirements (Manager.Restore).
	all, err := s.Plans().CurrentPlans(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if sum, want := planSummaries(all), []string{job + "/A v3 12:01:00", job + "/C v2 12:00:01", job + "/Expired v1 11:00:00", job + "/Pinned v4 12:00:00"}; !reflect.DeepEqual(sum, want) {
		t.Errorf("CurrentPlans(zero time) = %q, want %q", sum, want)
	}
	// Exactly one retirement row was written for the two retirements.
	rows, err := queryStrings(ctx, s, "SELECT count() FROM "+s.table(tablePlans)+" WHERE job_id = ? AND task_name = 'A' AND retired = 1", job)
	if err != nil {
		t.Fatal(err)
	}
	if rows[0][0] != "1" {
		t.Errorf("retirement rows = %s, want 1", rows[0][0])
	}

	// Plan reads one task and round-trips the plan exactly.
	want := testPlan(job, "A", 3, t0.Add(time.Minute), "k3")
	got, err := s.Plans().Plan(ctx, job, "A", now)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Plan = %+v\nwant %+v", got, want)
	}
	for _, tc := range []struct{ job, task string }{{job, "Expired"}, {job, "None"}, {"", "A"}, {job, "'; DROP TABLE plans; --"}} {
		got, err := s.Plans().Plan(ctx, tc.job, tc.task, now)
		if err != nil || got != nil {
			t.Errorf("Plan(%q, %q) = %v, %v; want nil, nil", tc.job, tc.task, got, err)
		}
	}

	// A restart restores the plans not retired, expired or not, and the
	// retirements with their version and time (Manager.Restore); a row
	// whose body does not decode is its job's, refused, and readers of
	// current plans skip it.
	bad := planRow{job: "broken", task: "X", version: 1, body: `{"job_id": 7`, revision: 1}
	s.mu.Lock()
	err = s.insertRows(ctx, tablePlans, planColumns(), []row{bad.values(time.Now())})
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	stored, err := s.Plans().RestorablePlans(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum, want := planSummaries(stored.Plans), []string{job + "/A v3 12:01:00", job + "/C v2 12:00:01", job + "/Expired v1 11:00:00", job + "/Pinned v4 12:00:00"}; !reflect.DeepEqual(sum, want) {
		t.Errorf("RestorablePlans: plans %q, want %q", sum, want)
	}
	wantRetired := []plans.RetiredTask{{JobID: job, TaskName: "B", Version: 1, At: t0.Add(5 * time.Second)}}
	if !reflect.DeepEqual(stored.Retired, wantRetired) {
		t.Errorf("RestorablePlans: retired %+v, want %+v", stored.Retired, wantRetired)
	}
	if u := stored.Unreadable; len(u) != 1 || u[0].JobID != "broken" || !strings.Contains(u[0].Err.Error(), "does not decode") {
		t.Errorf("RestorablePlans: unreadable %v, want job broken", u)
	}
	if cur, err := s.Plans().CurrentPlans(ctx, time.Time{}); err != nil || len(cur) != 4 {
		t.Errorf("CurrentPlans with a corrupt row = %d plans, %v; want the 4 others", len(cur), err)
	}

	// Bad changes are permanent errors and insert nothing.
	for _, bad := range [][]plans.Change{
		{{JobID: "", TaskName: "A", Plan: want}},
		{{JobID: job, TaskName: "A"}},
		{{JobID: job, TaskName: "B", Plan: want}},
	} {
		if err := s.Writer().WritePlans(ctx, bad); !retry.IsPermanent(err) {
			t.Errorf("WritePlans(%+v): err = %v, want a permanent error", bad, err)
		}
	}
}

func TestOverridesAndAudit(t *testing.T) {
	t.Parallel()
	ctx, s, _ := newMigratedSink(t, "overrides")
	const job = "84dce1ec8aa5a4df2d1758d6e9278693"
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	tick := func() time.Time { at = at.Add(time.Millisecond); return at }
	audit := func(method string, o plans.Override, result string) servestore.AuditEntry {
		what, _ := json.Marshal(o)
		return servestore.AuditEntry{At: o.At, By: "alice", Method: method, Action: o.Action, JobID: o.JobID,
			TaskName: o.TaskName, Key: o.Key, What: what, RemoteAddr: "192.0.2.1:5555", Result: result}
	}
	put := func(o plans.Override, result string) {
		t.Helper()
		o.At, o.By = tick(), "alice"
		if err := s.Writer().PutOverride(ctx, o, audit("POST", o, result)); err != nil {
			t.Fatalf("PutOverride(%s %s %.20q): %v", o.TaskName, o.Action, o.Key, err)
		}
	}
	var hostile []string
	for _, k := range hostileStrings() {
		// Keys must be valid UTF-8 of at most 64 KiB.
		if !strings.ContainsRune(strings.ToValidUTF8(k, "\uFFFD"), '\uFFFD') && len(k) <= plans.MaxKeyBytes {
			hostile = append(hostile, k)
		}
	}
	hostile = append(hostile, "'); DROP TABLE plans; --", "k", strings.Repeat("\\'\n", plans.MaxKeyBytes/3))
	for _, k := range hostile {
		put(plans.Override{JobID: job, TaskName: "T", Action: plans.ActionExclude, Key: k, Reason: "noisy"}, "created")
	}
	put(plans.Override{JobID: job, TaskName: "T", Action: plans.ActionPin}, "created")
	put(plans.Override{JobID: job, TaskName: "Source: clicks -> \"Map\"", Action: plans.ActionOverride,
		Plan: testPlan(job, "Source: clicks -> \"Map\"", 1, at, "user-42")}, "created")
	// Replacing an override keeps one.
	put(plans.Override{JobID: job, TaskName: "T", Action: plans.ActionExclude, Key: "k", Reason: "again"}, "replaced")

	ovs, err := s.Plans().Overrides(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]plans.Override{}
	for _, o := range ovs {
		byID[o.TaskName+"|"+o.Action+"|"+o.Key] = o
	}
	if len(ovs) != len(hostile)+2 || len(byID) != len(ovs) {
		t.Fatalf("Overrides: %d (%d distinct), want %d", len(ovs), len(byID), len(hostile)+2)
	}
	for _, k := range hostile {
		o, ok := byID["T|exclude|"+k]
		if !ok {
			t.Errorf("exclude %.40q: not read back verbatim", k)
			continue
		}
		if o.By != "alice" || o.At.IsZero() || o.Reason == "" {
			t.Errorf("exclude %.40q: %+v", k, o)
		}
	}
	if o := byID["T|exclude|k"]; o.Reason != "again" {
		t.Errorf("replaced override has reason %q, want again", o.Reason)
	}
	if o := byID["Source: clicks -> \"Map\"|override|"]; o.Plan == nil || len(o.Plan.HotKeys) != 1 || o.Plan.HotKeys[0].Key != "user-42" {
		t.Errorf("override plan not read back: %+v", o)
	}

	// Delete: the override is gone, the others stay.
	del := plans.Override{JobID: job, TaskName: "T", Action: plans.ActionExclude, Key: "'); DROP TABLE plans; --", At: tick()}
	if err := s.Writer().DeleteOverride(ctx, del.JobID, del.TaskName, del.Action, del.Key, audit("DELETE", del, "deleted")); err != nil {
		t.Fatal(err)
	}
	ovs, err = s.Plans().Overrides(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ovs) != len(hostile)+1 {
		t.Errorf("after delete: %d overrides, want %d", len(ovs), len(hostile)+1)
	}
	for _, o := range ovs {
		if o.Key == del.Key {
			t.Errorf("deleted override still there: %+v", o)
		}
	}
	// The tables survived the injection attempts.
	for _, table := range []string{tablePlans, tablePlanOverrides, tablePlanAudit} {
		if _, err := queryStrings(ctx, s, "SELECT count() FROM "+s.table(table)); err != nil {
			t.Errorf("table %s: %v", table, err)
		}
	}

	// Audit: newest first, per job, limited.
	entries, err := s.Audit().Audit(ctx, job, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(hostile) + 4; len(entries) != want {
		t.Fatalf("Audit: %d entries, want %d", len(entries), want)
	}
	first := entries[0]
	if first.Method != "DELETE" || first.Key != del.Key || first.Result != "deleted" || first.By != "alice" ||
		first.RemoteAddr != "192.0.2.1:5555" || !first.At.Equal(del.At.Truncate(time.Millisecond)) {
		t.Errorf("newest audit entry = %+v", first)
	}
	var back plans.Override
	if err := json.Unmarshal(first.What, &back); err != nil || back.Key != del.Key {
		t.Errorf("audit what = %s (%v)", first.What, err)
	}
	for i := 1; i < len(entries); i++ {
		if entries[i].At.After(entries[i-1].At) {
			t.Errorf("audit not newest first at %d", i)
		}
	}
	if entries, err := s.Audit().Audit(ctx, job, 2); err != nil || len(entries) != 2 {
		t.Errorf("Audit limit 2: %d entries, %v", len(entries), err)
	}
	if entries, err := s.Audit().Audit(ctx, "other'job", 0); err != nil || len(entries) != 0 {
		t.Errorf("Audit of another job: %d entries, %v", len(entries), err)
	}

	// Invalid overrides are permanent errors and write nothing, not even an audit row.
	for _, bad := range []plans.Override{
		{JobID: job, TaskName: "T", Action: "drop", At: tick()},
		{JobID: job, TaskName: "T", Action: plans.ActionExclude, Key: "\xff", At: tick()},
		{JobID: job, TaskName: "T", Action: plans.ActionExclude, Key: strings.Repeat("k", plans.MaxKeyBytes+1), At: tick()},
		{JobID: job, TaskName: "T\n", Action: plans.ActionPin, At: tick()},
		{JobID: job, TaskName: "T", Action: plans.ActionPin},
	} {
		if err := s.Writer().PutOverride(ctx, bad, audit("POST", bad, "created")); !retry.IsPermanent(err) {
			t.Errorf("PutOverride(%.60q): err = %v, want a permanent error", fmt.Sprint(bad), err)
		}
	}
	if entries, err := s.Audit().Audit(ctx, "", MaxAuditLimit+5); err != nil || len(entries) != len(hostile)+4 {
		t.Errorf("Audit after rejected overrides: %d entries, %v", len(entries), err)
	}

	// A closed Sink refuses.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Plans().Overrides(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Overrides after Close: %v", err)
	}
	o := plans.Override{JobID: job, TaskName: "T", Action: plans.ActionPin, At: tick()}
	if err := s.Writer().PutOverride(ctx, o, audit("POST", o, "created")); !errors.Is(err, ErrClosed) {
		t.Errorf("PutOverride after Close: %v", err)
	}
}

func TestFindingsQuery(t *testing.T) {
	t.Parallel()
	ctx, s, _ := newMigratedSink(t, "findq")
	now := time.Now()
	fs := fixtures(now)
	// Written twice, the second time with other summaries at a higher
	// version: each finding is returned once, as last written.
	if err := s.Writer().Write(ctx, 1, fs); err != nil {
		t.Fatal(err)
	}
	changed := make([]skew.Finding, len(fs))
	copy(changed, fs)
	for i := range changed {
		changed[i].Summary = "v2"
	}
	if err := s.Writer().Write(ctx, 2, changed); err != nil {
		t.Fatal(err)
	}
	// A statistics row as sinks before migration 0004 also wrote it to
	// findings: never returned.
	old := tableRows{}
	oldStats := fs[0]
	oldStats.Kind = "old_kind"
	if err := mapFinding(old, &oldStats, 3, now); err != nil {
		t.Fatal(err)
	}
	for i, c := range insertColumns(tableFindings) {
		if c == "kind" {
			old[tableFindings][0][i] = skew.KindSubtaskStats
		}
	}
	if err := s.insertRows(ctx, tableFindings, insertColumns(tableFindings), old[tableFindings]); err != nil {
		t.Fatal(err)
	}
	base := fixtureBase(now)
	// count counts the findings of fs pred selects; statistics are not
	// findings.
	count := func(pred func(f *skew.Finding) bool) int {
		n := 0
		for i := range fs {
			if fs[i].Kind != skew.KindSubtaskStats && pred(&fs[i]) {
				n++
			}
		}
		return n
	}
	all := count(func(*skew.Finding) bool { return true })
	if all == len(fs) || all == 0 {
		t.Fatalf("%d findings of %d fixtures: want statistics among the fixtures", all, len(fs))
	}
	tests := []struct {
		name string
		q    servestore.FindingsQuery
		want int
	}{
		{"all", servestore.FindingsQuery{Limit: MaxFindingsLimit}, all},
		{"default limit", servestore.FindingsQuery{}, min(all, DefaultFindingsLimit)},
		{"no statistics", servestore.FindingsQuery{Kind: skew.KindSubtaskStats, Limit: 1000}, 0},
		{"limit", servestore.FindingsQuery{Limit: 3}, 3},
		{"job", servestore.FindingsQuery{JobID: jobA, Limit: 1000}, count(func(f *skew.Finding) bool { return f.JobID == jobA })},
		{"hostile job", servestore.FindingsQuery{JobID: jobHostile, Limit: 1000}, count(func(f *skew.Finding) bool { return f.JobID == jobHostile })},
		{"kind", servestore.FindingsQuery{Kind: skew.KindHotKey, Limit: 1000}, count(func(f *skew.Finding) bool { return f.Kind == skew.KindHotKey })},
		{"since", servestore.FindingsQuery{Since: time.UnixMilli(base + 3*windowMs), Limit: 1000}, count(func(f *skew.Finding) bool { return f.WindowStart >= base+3*windowMs })},
		{"since the future", servestore.FindingsQuery{Since: now.Add(time.Hour)}, 0},
		{"injection", servestore.FindingsQuery{JobID: "x' OR 1=1 --", Kind: "'; DROP TABLE findings; --"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Findings().Findings(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Fatalf("%d findings, want %d", len(got), tt.want)
			}
			prev := int64(1 << 62)
			for _, raw := range got {
				var f skew.Finding
				if err := json.Unmarshal(raw, &f); err != nil {
					t.Fatalf("body %s: %v", raw, err)
				}
				if f.Summary != "v2" {
					t.Errorf("finding %s/%s %d: summary %q, want the last version's", f.JobID, f.TaskName, f.WindowStart, f.Summary)
				}
				if f.WindowStart > prev {
					t.Errorf("not newest first: %d after %d", f.WindowStart, prev)
				}
				prev = f.WindowStart
				if tt.q.JobID != "" && f.JobID != tt.q.JobID || tt.q.Kind != "" && f.Kind != tt.q.Kind {
					t.Errorf("finding %s %s does not match the query", f.JobID, f.Kind)
				}
				if f.Kind == skew.KindSubtaskStats || f.Stats != nil {
					t.Errorf("statistics among the findings: %s", raw)
				}
			}
		})
	}
	if _, err := queryStrings(ctx, s, "SELECT count() FROM "+s.table("findings")); err != nil {
		t.Errorf("findings table after the injection attempt: %v", err)
	}
}

// inlineArgs replaces each ? of a query with its argument as a SQL
// literal, for chDB, which has no binding. The test's values are plain.
func inlineArgs(t *testing.T, q string, args []any) string {
	t.Helper()
	quote := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	var b strings.Builder
	for _, part := range strings.Split(q, "?") {
		b.WriteString(part)
		if len(args) == 0 {
			continue
		}
		switch v := args[0].(type) {
		case string:
			b.WriteString("'" + quote.Replace(v) + "'")
		case int, int64, uint64:
			fmt.Fprint(&b, v)
		default:
			t.Fatalf("inlineArgs: %T", v)
		}
		args = args[1:]
	}
	return b.String()
}

// TestPlanQueriesChDB runs the readers' SQL in the modern dialect, in
// chDB, on rows shaped as the writers make them.
func TestPlanQueriesChDB(t *testing.T) {
	t.Parallel()
	lib := installChDB(t)
	bin := buildChdbExec(t)
	const db = "skewlens"
	table := func(name string) string { return "`" + db + "`.`" + name + "`" }

	var reqs chdbBatch
	add := reqs.add
	reqs.migrate(t, db, "")
	insert := func(name, tbl string, cols []string, rows []row) {
		reqs.insert(t, "insert "+name, db, tbl, cols, rows)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ins := now.Truncate(time.Second)
	const job = "84dce1ec8aa5a4df2d1758d6e9278693"
	ms0 := now.UnixMilli()
	insert("plans", tablePlans, planColumns(), []row{
		{job, "A", uint64(1), ms0, ms0, ms0 + 1000, uint8(0), `{"v":"A1"}`, uint64(10), ins},
		{job, "A", uint64(2), ms0, ms0, ms0 + 1000, uint8(0), `{"v":"A2"}`, uint64(20), ins},
		{job, "A", uint64(2), ms0, ms0, ms0 + 1000, uint8(1), `{"v":"A2"}`, uint64(21), ins},
		{job, "B", uint64(1), ms0, ms0, int64(0), uint8(0), `{"v":"B1"}`, uint64(10), ins},
		{job, "C", uint64(3), ms0, ms0, ms0 - 1, uint8(0), `{"v":"C3"}`, uint64(10), ins},
		{job, "D", uint64(1), ms0, ms0, ms0 + 1000, uint8(0), `{"v":"D1"}`, uint64(10), ins},
		{job, "D", uint64(1), ms0, ms0 + 500, ms0 + 2000, uint8(0), `{"v":"D1b"}`, uint64(11), ins},
	})
	insert("overrides", tablePlanOverrides, overrideColumns(), []row{
		{job, "T", "exclude", "k1", `{"key":"k1"}`, "alice", ms0, uint8(0), uint64(1), ins},
		{job, "T", "exclude", "k1", "", "bob", ms0, uint8(1), uint64(2), ins},
		{job, "T", "exclude", "k2", `{"key":"k2"}`, "alice", ms0, uint8(0), uint64(3), ins},
		{job, "T", "pin", "", `{"action":"pin"}`, "alice", ms0, uint8(0), uint64(4), ins},
	})
	a1, err := auditRow(servestore.AuditEntry{At: now, By: "alice", Method: "POST", Action: "pin", JobID: job, TaskName: "T", Result: "created", What: json.RawMessage(`{"a":1}`)})
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := auditRow(servestore.AuditEntry{At: now.Add(time.Second), By: "bob", Method: "DELETE", Action: "pin", JobID: job, TaskName: "T", Result: "deleted"})
	a3, _ := auditRow(servestore.AuditEntry{At: now.Add(2 * time.Second), By: "bob", Method: "DELETE", Action: "pin", JobID: "other", TaskName: "T", Result: "deleted"})
	insert("audit", tablePlanAudit, auditColumns(), []row{a1, a2, a3})
	fsNow := time.Now()
	fs := fixtures(fsNow)
	for v := uint64(1); v <= 2; v++ {
		rows := findingRows(t, fs, v, time.Now())
		insert(fmt.Sprintf("findings %d", v), tableFindings, insertColumns(tableFindings), rows[tableFindings])
	}

	for v := uint64(1); v <= 2; v++ {
		rows := tableRows{}
		for i := range fs {
			f := fs[i]
			if f.Stats != nil && v == 2 {
				st := *f.Stats
				st.BusySource = "gauge"
				f.Stats = &st
			}
			if err := mapFinding(rows, &f, v, time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		insert(fmt.Sprintf("stats %d", v), tableSubtaskStats, insertColumns(tableSubtaskStats), rows[tableSubtaskStats])
	}
	base := fixtureBase(fsNow)

	queries := map[string]func() (string, []any){
		"current plans": func() (string, []any) { return currentPlansQuery(table(tablePlans), "", "", now) },
		"plan D":        func() (string, []any) { return currentPlansQuery(table(tablePlans), job, "D", now) },
		"last plan A":   func() (string, []any) { return lastPlanQuery(table(tablePlans), job, "A") },
		"overrides":     func() (string, []any) { return overridesQuery(table(tablePlanOverrides)), nil },
		"audit":         func() (string, []any) { return auditQuery(table(tablePlanAudit), job, 10) },
		"findings": func() (string, []any) {
			return findingsQuery(table(tableFindings), servestore.FindingsQuery{Limit: MaxFindingsLimit})
		},
		"stats": func() (string, []any) {
			return statsQuery(table(tableSubtaskStats), servestore.StatsQuery{Limit: MaxStatsLimit})
		},
		"stats of a task since": func() (string, []any) {
			return statsQuery(table(tableSubtaskStats), servestore.StatsQuery{JobID: jobA, TaskName: taskA, Since: time.UnixMilli(base + 3*windowMs), Limit: 5})
		},
		"findings of a job since": func() (string, []any) {
			return findingsQuery(table(tableFindings), servestore.FindingsQuery{JobID: jobA, Kind: skew.KindHotKey, Since: time.UnixMilli(base), Limit: 3})
		},
	}
	for name, q := range queries {
		sql, args := q()
		add(name, inlineArgs(t, sql, args))
	}
	res := runChDB(t, lib, bin, reqs)
	for _, r := range reqs {
		if got := res[r.Name]; !got.OK {
			t.Errorf("%s: %s\n%s", r.Name, got.Error, firstLines(r.SQL, 10))
		}
	}
	column := func(name string, i int) []string {
		var out []string
		for _, line := range strings.Split(strings.TrimRight(res[name].Output, "\n"), "\n") {
			if line == "" {
				continue
			}
			out = append(out, strings.Split(line, "\t")[i])
		}
		return out
	}
	checks := []struct {
		name string
		col  int
		want []string
	}{
		{"current plans", 2, []string{`{"v":"B1"}`, `{"v":"D1b"}`}},
		{"plan D", 2, []string{`{"v":"D1b"}`}},
		{"last plan A", 4, []string{"1"}},
		{"overrides", 3, []string{"k2", ""}},
		{"audit", 1, []string{"bob", "alice"}},
		{"findings of a job since", 0, nil}, // checked below
	}
	for _, c := range checks {
		if c.want == nil {
			continue
		}
		if got := column(c.name, c.col); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: column %d = %q, want %q", c.name, c.col, got, c.want)
		}
	}
	if got, want := len(column("findings", 0)), fixtureCounts(fs)[tableFindings]; got != want {
		t.Errorf("findings: %d rows, want %d (one per finding)", got, want)
	}
	// Statistics: the latest version of each row, newest window first,
	// then by job, task and subtask.
	if got, want := len(column("stats", 0)), fixtureCounts(fs)[tableSubtaskStats]; got != want {
		t.Errorf("stats: %d rows, want %d (one per row)", got, want)
	}
	busySource := slices.Index(statsColumns(), "busy_source")
	for i, src := range column("stats", busySource) {
		if src != "gauge" {
			t.Errorf("stats row %d: busy_source %q, want the last version's", i, src)
			break
		}
	}
	newest := fmt.Sprint(base + 5*windowMs)
	wantStarts := []string{newest, newest, newest, newest, fmt.Sprint(base + 4*windowMs)}
	if got := column("stats of a task since", slices.Index(statsColumns(), "window_start")); !reflect.DeepEqual(got, wantStarts) {
		t.Errorf("stats of a task since: window starts %q, want %q", got, wantStarts)
	}
	if got, want := column("stats of a task since", slices.Index(statsColumns(), "subtask_index")), []string{"0", "1", "2", "3", "0"}; !reflect.DeepEqual(got, want) {
		t.Errorf("stats of a task since: subtasks %q, want %q", got, want)
	}
	if got := column("findings of a job since", 0); len(got) != 3 {
		t.Errorf("findings of a job since: %d rows, want 3", len(got))
	}
}
