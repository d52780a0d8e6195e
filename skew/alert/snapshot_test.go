package alert

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
)

// snapshotWindows returns findings window by window for two jobs: a
// slow_subtask that lasts the first 12 windows, a hot key that starts in
// window 3 and goes on, and a data_skew of another job that lasts from
// window 2 to 8, each job also reporting statistics every window.
func snapshotWindows(n int) [][]skew.Finding {
	var out [][]skew.Finding
	for i := range n {
		ws := int64(i) * win
		fs := []skew.Finding{statsOf("j1", ws), statsOf("j2", ws)}
		if i < 12 {
			fs = append(fs, sat("j1", "sink", 1, skew.CauseSlowSubtask, ws))
		}
		if i >= 3 {
			fs = append(fs, hot("j1", "agg", 3, "k1", 0.4, ws), hot("j1", "agg", 3, "k2", 0.2+float64(i%2)/10, ws))
		}
		if i >= 2 && i <= 8 {
			fs = append(fs, sat("j2", "agg", 0, skew.CauseDataSkew, ws))
		}
		out = append(out, fs)
	}
	return out
}

// feed runs windows through tr as the pipeline does (Observe, then
// Advance to the window's end) and returns the events as JSON lines.
func feed(t *testing.T, tr *pipe, windows [][]skew.Finding, first int) []string {
	t.Helper()
	var out []string
	for i, fs := range windows {
		events := append(tr.Observe(fs), tr.Advance(int64(first+i+1)*win)...)
		for _, e := range events {
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(b))
		}
	}
	return out
}

func newTestTracker(t *testing.T) *pipe {
	t.Helper()
	return newPipe(t, Config{RenotifyInterval: 40 * time.Second})
}

// TestSnapshotRestoreMatchesUninterrupted: a state machine snapshotted after
// any window and restored into a new state machine then gives the events an
// uninterrupted state machine gives: no second firing of an ongoing condition,
// the resolutions of conditions that ended, renotifications on time.
func TestSnapshotRestoreMatchesUninterrupted(t *testing.T) {
	windows := snapshotWindows(24)
	want := feed(t, newTestTracker(t), windows, 0)
	var firing int
	for _, e := range want {
		if strings.Contains(e, `"Kind":"firing"`) {
			firing++
		}
	}
	if firing < 3 || !slices.ContainsFunc(want, func(e string) bool { return strings.Contains(e, `"Kind":"resolved"`) }) {
		t.Fatalf("the fixture fires %d alerts and resolves none:\n%s", firing, joinLines(want))
	}
	for cut := 1; cut < len(windows); cut++ {
		before := newTestTracker(t)
		got := feed(t, before, windows[:cut], 0)
		after := newTestTracker(t)
		if events, err := after.restore(before.save(t)); err != nil || len(events) > 0 {
			t.Fatalf("cut %d: %v, events %v", cut, err, evs(events))
		}
		got = append(got, feed(t, after, windows[cut:], cut)...)
		if !slices.Equal(got, want) {
			t.Fatalf("restored after window %d:\n%s\nwant (uninterrupted):\n%s", cut, joinLines(got), joinLines(want))
		}
	}
}

// TestSnapshotDeterministic: equal state machines give byte-identical
// snapshots, a restored state machine snapshots what it was restored from once
// its jobs report again, and snapshots are ordered by job.
func TestSnapshotDeterministic(t *testing.T) {
	windows := snapshotWindows(6)
	a, b := newTestTracker(t), newTestTracker(t)
	feed(t, a, windows, 0)
	for _, fs := range windows { // another order within each window
		in := slices.Clone(fs)
		rand.New(rand.NewPCG(7, 7)).Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
		b.Observe(in)
	}
	b.Advance(int64(len(windows)) * win)
	sa, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sb, _ := b.Snapshot()
	if len(sa) != 2 || sa[0].JobID != "j1" || sa[1].JobID != "j2" {
		t.Fatalf("snapshot of jobs %v, want j1 and j2", sa)
	}
	for i := range sa {
		if !bytes.Equal(sa[i].State, sb[i].State) {
			t.Fatalf("job %s:\n%s\n%s", sa[i].JobID, sa[i].State, sb[i].State)
		}
		if !bytes.HasPrefix(sa[i].State, []byte(`{"v":1,`)) {
			t.Fatalf("state without its version first: %s", sa[i].State)
		}
	}
	again, _ := a.Snapshot()
	if !slices.EqualFunc(sa, again, func(x, y JobSnapshot) bool { return x.JobID == y.JobID && bytes.Equal(x.State, y.State) }) {
		t.Fatal("a second Snapshot differs from the first")
	}
	r := newTestTracker(t)
	if _, err := r.restore(a.save(t)); err != nil {
		t.Fatal(err)
	}
	if got, want := r.Active(), a.Active(); len(want) == 0 || !sameJSON(t, got, want) {
		t.Fatalf("restored Active %v, want %v", got, want)
	}
	rs, _ := r.Snapshot()
	if len(rs) != len(sa) {
		t.Fatalf("restored tracker snapshots %d jobs, want %d", len(rs), len(sa))
	}
	for i := range rs {
		if !bytes.Equal(rs[i].State, sa[i].State) {
			t.Fatalf("job %s snapshotted after restore:\n%s\nwant\n%s", rs[i].JobID, rs[i].State, sa[i].State)
		}
	}
}

func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}

// TestRestoredAlertsResolve: a restored job's alerts are the state machine's
// own: once their incidents close (the job reports without them, or
// stays silent) they resolve as an uninterrupted state machine's do.
func TestRestoredAlertsResolve(t *testing.T) {
	before := newTestTracker(t)
	feed(t, before, snapshotWindows(8), 0) // j1's slow_subtask fires
	tr := newTestTracker(t)
	if _, err := tr.restore(before.save(t)); err != nil {
		t.Fatal(err)
	}
	firing := tr.Firing()
	if firing == 0 {
		t.Fatal("nothing firing after restore")
	}
	// The same input after the snapshot, to the state machine that never
	// stopped and to the restored one: j1 reports without its
	// conditions, j2 stays silent.
	next := int64(9) * win
	in := func(tr *pipe) []string {
		ev := tr.Observe([]skew.Finding{statsOf("j1", next)})
		return evs(append(ev, tr.Advance(next+incident.DefaultConfig().Hysteresis.ResolveAfter.Milliseconds()+win)...))
	}
	want, got := in(before), in(tr)
	if !slices.Equal(got, want) {
		t.Fatalf("restored tracker:\n%s\nwant (uninterrupted):\n%s", joinLines(got), joinLines(want))
	}
	var j1, j2 int
	for _, e := range got {
		j1 += strings.Count(e, "resolved j1/")
		j2 += strings.Count(e, "resolved j2/")
	}
	if j1 == 0 || j2 == 0 || j1+j2 != firing || tr.Firing() != 0 {
		t.Fatalf("resolved %d of j1 and %d of j2, %d firing before: want all", j1, j2, firing)
	}
}

// TestRestoreRefusesBadState: a state that does not decode or validate
// costs its job its alert state, and only its job: the job is refused,
// named with why, and the other job's alerts are restored.
func TestRestoreRefusesBadState(t *testing.T) {
	before := newTestTracker(t)
	feed(t, before, snapshotWindows(8), 0)
	good, _ := before.Snapshot()
	edit := func(f func(m map[string]any)) []JobSnapshot {
		var m map[string]any
		if err := json.Unmarshal(good[0].State, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, _ := json.Marshal(m)
		return []JobSnapshot{{JobID: good[0].JobID, State: b}, good[1]}
	}
	alert0 := func(m map[string]any) map[string]any { return m["alerts"].([]any)[0].(map[string]any) }
	for _, tc := range []struct {
		name  string
		snaps []JobSnapshot
		want  string
		job   string // refused; "" for j1
	}{
		{"not JSON", []JobSnapshot{{JobID: "j1", State: []byte("{")}, good[1]}, "decode", ""},
		{"other version", edit(func(m map[string]any) { m["v"] = 2 }), "version 2", ""},
		{"other job", []JobSnapshot{{JobID: "j9", State: good[0].State}, good[1]}, "state of job", "j9"},
		{"duplicate job", []JobSnapshot{good[0], good[0], good[1]}, "two states", ""},
		{"bad cause", edit(func(m map[string]any) { alert0(m)["cause"] = "nonsense" }), "not of the alert", ""},
		{"times", edit(func(m map[string]any) { alert0(m)["start"] = 1e12 }), "out of order", ""},
		{"bad utf8", edit(func(m map[string]any) { alert0(m)["task_name"] = "a\xffb" }), "not of the alert", ""},
		{"no labels", edit(func(m map[string]any) {
			for _, a := range m["alerts"].([]any) {
				if a.(map[string]any)["firing"] == true {
					delete(a.(map[string]any), "labels")
				}
			}
		}), "without labels", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestTracker(t)
			want := cmp.Or(tc.job, good[0].JobID)
			_, refused, err := tr.Restore(tc.snaps, before.save(t).open)
			if err != nil || len(refused) != 1 || refused[0].JobID != want || !strings.Contains(refused[0].Error(), tc.want) {
				t.Fatalf("Restore = %v, refused %v: want job %s refused with %q", err, refused, want, tc.want)
			}
			snaps, _ := tr.Snapshot()
			if len(snaps) != 1 || snaps[0].JobID != good[1].JobID || !bytes.Equal(snaps[0].State, good[1].State) {
				t.Fatalf("restored %v, want %s's state only", snaps, good[1].JobID)
			}
		})
	}
	used := newTestTracker(t)
	used.Observe(snapshotWindows(1)[0])
	if _, _, err := used.Restore(good, nil); err == nil {
		t.Fatal("Restore on a used tracker succeeded")
	}
	empty := newTestTracker(t)
	if _, _, err := empty.Restore([]JobSnapshot{{JobID: "gone"}}, nil); err != nil || empty.Now() != 0 {
		t.Fatalf("an empty state: %v, now %d", err, empty.Now())
	}
}

// TestRestoreGroupAtDifferentTimes: the saved states of the jobs a state
// machine restores are at different event times. The state machine's time
// is not that of the job ahead: the job behind, at its next window, gets
// the events of an uninterrupted state machine of that job (it is not
// resolved and fired again). The job ahead goes on as uninterrupted too; by
// its time the incident of the job behind, absent since, has closed, and
// its alert resolves, as it would have in a state machine that never
// stopped.
func TestRestoreGroupAtDifferentTimes(t *testing.T) {
	jobWindows := func(job string, first, n int) [][]skew.Finding {
		var out [][]skew.Finding
		for i := range n {
			ws := int64(first+i) * win
			out = append(out, []skew.Finding{statsOf(job, ws), sat(job, "agg", 2, skew.CauseSlowSubtask, ws)})
		}
		return out
	}
	// Both jobs' conditions go on for 7 windows: they fire in the 6
	// before the snapshot, and the 7th is the first after the restore.
	tests := []struct {
		name, job string
		first     int // the job's first window; the other job is far apart
	}{
		{"behind", "j1", 0},
		{"ahead", "j2", 200},
	}
	windows := map[string][][]skew.Finding{}
	var group []saved
	for _, tt := range tests {
		windows[tt.job] = jobWindows(tt.job, tt.first, 7)
		tr := newTestTracker(t)
		feed(t, tr, windows[tt.job][:6], tt.first)
		if tr.Firing() != 1 {
			t.Fatalf("%s: %d alerts firing before the snapshot, want 1", tt.job, tr.Firing())
		}
		group = append(group, tr.save(t))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job, windows := tt.job, windows[tt.job]
			uninterrupted := newTestTracker(t)
			feed(t, uninterrupted, windows[:6], tt.first)
			want := feed(t, uninterrupted, windows[6:], tt.first+6)

			r := newTestTracker(t)
			if _, err := r.restore(join(group...)); err != nil {
				t.Fatal(err)
			}
			var got, others []string
			for _, e := range feed(t, r, windows[6:], tt.first+6) {
				if strings.Contains(e, `"job_id":"`+job+`"`) {
					got = append(got, e)
				} else {
					others = append(others, e)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s's first window after the restore:\n%s\nwant (uninterrupted):\n%s", job, joinLines(got), joinLines(want))
			}
			for _, e := range got {
				if strings.Contains(e, `"Kind":"resolved"`) || strings.Contains(e, `"Kind":"firing"`) {
					t.Fatalf("%s resolved or fired again: %s", job, e)
				}
			}
			behind := tt.first == 0
			if behind && (r.Firing() != 2 || len(others) != 0) {
				t.Fatalf("%d alerts firing after %s's window, want both jobs' 2; the other job's events: %s", r.Firing(), job, joinLines(others))
			}
			if !behind && (r.Firing() != 1 || len(others) != 1 || !strings.Contains(others[0], `"Kind":"resolved"`)) {
				t.Fatalf("%d alerts firing after %s's window, want its own; the other job's events %s, want its resolution", r.Firing(), job, joinLines(others))
			}
		})
	}
}
