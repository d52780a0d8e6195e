package incident

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
)

const win = 10_000 // window length (ms)

// skewed is a data_skew finding of subtask 1 of job j in window w.
func skewed(j string, w int64, busy, ratio float64) skew.Finding {
	return skew.Finding{
		Kind: skew.KindSaturation, JobID: j, TaskName: "agg", SubtaskIndex: ptr(1),
		WindowStart: w * win, WindowEnd: (w + 1) * win, Summary: fmt.Sprintf("window %d", w),
		Saturation: &skew.Saturation{Cause: skew.CauseDataSkew, Evidence: &skew.Evidence{
			BusyMsPerSecond: busy, InputRatio: ratio, InputShare: 0.5, HotKeys: []skew.KeyShare{{Key: "k1", Share: 0.4}},
		}},
	}
}

// hot is a hot_key finding of key k on subtask 0 in window w.
func hot(k string, w int64, share float64) skew.Finding {
	return skew.Finding{
		Kind: skew.KindHotKey, JobID: "j", TaskName: "agg", SubtaskIndex: ptr(0),
		WindowStart: w * win, WindowEnd: (w + 1) * win, HotKey: &skew.HotKey{Key: k, Share: share},
	}
}

func newTracker(t *testing.T) *Tracker {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Hysteresis = Hysteresis{ResolveAfter: 30 * time.Second}
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// step is one call: findings (Observe) or a watermark (Advance).
type step struct {
	fs []skew.Finding
	wm int64
}

func run(tr *Tracker, steps []step) []Change {
	var out []Change
	for _, s := range steps {
		if s.fs != nil {
			out = append(out, tr.Observe(s.fs)...)
		} else {
			out = append(out, tr.Advance(s.wm)...)
		}
	}
	return out
}

func TestTracker(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
		// want lists the final state of each incident, by id order of
		// appearance: state, start, end, windows.
		want []string
		// kinds lists the change kinds in order.
		kinds []ChangeKind
	}{
		{
			name:  "consecutive windows make one incident that closes after the hysteresis",
			steps: []step{{fs: []skew.Finding{skewed("j", 0, 900, 3)}}, {fs: []skew.Finding{skewed("j", 1, 950, 4)}}, {fs: []skew.Finding{skewed("j", 2, 800, 2)}}, {wm: 50_000}, {wm: 60_000}},
			want:  []string{"closed 0 30000 3"},
			kinds: []ChangeKind{Opened, Updated, Updated, Closed},
		},
		{
			name:  "a gap shorter than the hysteresis keeps the incident open",
			steps: []step{{fs: []skew.Finding{skewed("j", 0, 900, 3)}}, {fs: []skew.Finding{skewed("j", 3, 900, 3)}}, {wm: 60_000}},
			want:  []string{"open 0 0 2"},
			kinds: []ChangeKind{Opened, Updated},
		},
		{
			name:  "a gap of the hysteresis makes two incidents",
			steps: []step{{fs: []skew.Finding{skewed("j", 0, 900, 3)}}, {fs: []skew.Finding{skewed("j", 4, 900, 3)}}},
			want:  []string{"closed 0 10000 1", "open 40000 0 1"},
			kinds: []ChangeKind{Opened, Closed, Opened},
		},
		{
			name:  "hot keys are incidents per key",
			steps: []step{{fs: []skew.Finding{hot("a", 0, 0.3), hot("b", 0, 0.2)}}, {fs: []skew.Finding{hot("a", 1, 0.4)}}, {wm: 40_000}},
			want:  []string{"open 0 0 2", "closed 0 10000 1"},
			kinds: []ChangeKind{Opened, Opened, Updated, Closed},
		},
		{
			name:  "the same findings again change nothing",
			steps: []step{{fs: []skew.Finding{skewed("j", 0, 900, 3)}}, {fs: []skew.Finding{skewed("j", 0, 900, 3)}}},
			want:  []string{"open 0 0 1"},
			kinds: []ChangeKind{Opened},
		},
		{
			name:  "findings that make no alert make no incident",
			steps: []step{{fs: []skew.Finding{{Kind: skew.KindSubtaskStats, JobID: "j", TaskName: "agg", WindowStart: 0, WindowEnd: win}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes := run(newTracker(t), tt.steps)
			var kinds []ChangeKind
			final := map[string]Incident{}
			var order []string
			for _, c := range changes {
				kinds = append(kinds, c.Kind)
				if _, ok := final[c.Incident.ID]; !ok {
					order = append(order, c.Incident.ID)
				}
				final[c.Incident.ID] = c.Incident
			}
			var got []string
			for _, id := range order {
				in := final[id]
				got = append(got, fmt.Sprintf("%s %d %d %d", in.State, in.Start, in.End, in.Windows))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("incidents = %q, want %q", got, tt.want)
			}
			if !reflect.DeepEqual(kinds, tt.kinds) {
				t.Errorf("changes = %v, want %v", kinds, tt.kinds)
			}
		})
	}
}

func TestTrackerNumbers(t *testing.T) {
	tr := newTracker(t)
	run(tr, []step{{fs: []skew.Finding{skewed("j", 0, 900, 3)}}, {fs: []skew.Finding{skewed("j", 1, 1000, 5)}}, {fs: []skew.Finding{skewed("j", 2, 800, 1)}}})
	open := tr.Open()
	if len(open) != 1 {
		t.Fatalf("open = %d incidents, want 1", len(open))
	}
	in := open[0]
	if in.Busy.Peak != 1000 || in.Busy.Mean != 900 || in.InputRatio.Peak != 5 || in.InputRatio.Mean != 3 || in.Share.Peak != 0.5 {
		t.Errorf("numbers = busy %+v ratio %+v share %+v", in.Busy, in.InputRatio, in.Share)
	}
	if in.Summary != "window 2" || !reflect.DeepEqual(in.HotKeys, []string{"k1"}) || in.UpdatedAt != 30_000 {
		t.Errorf("summary %q, hot keys %q, updated at %d", in.Summary, in.HotKeys, in.UpdatedAt)
	}
	want := IncidentID(Identity{JobID: "j", TaskName: "agg", Subtask: 1, Cause: skew.CauseDataSkew}, "", 0)
	if in.ID != want {
		t.Errorf("id = %s, want %s", in.ID, want)
	}
}

// table keeps the latest state of each incident by UpdatedAt, as the
// incidents table (ReplacingMergeTree by version) does.
type table map[string]Incident

func (tb table) put(cs []Change) {
	for _, c := range cs {
		if old, ok := tb[c.Incident.ID]; !ok || c.Incident.UpdatedAt >= old.UpdatedAt {
			tb[c.Incident.ID] = c.Incident
		}
	}
}

// restore builds a Tracker from the table, as the pipeline does at start.
func (tb table) restore(t *testing.T) *Tracker { return tb.restoreInto(newTracker(t)) }

// restoreInto restores tr from the table as the pipeline does, with what
// sinks/clickhouse's LoadIncidents reads: the open incidents, and each
// job's latest window over the incidents of it, by JobID and by
// RunJobID.
func (tb table) restoreInto(tr *Tracker) *Tracker {
	var open []Incident
	seen := map[string]int64{}
	for _, in := range tb {
		if in.State == StateOpen {
			open = append(open, in)
		}
		seen[in.JobID] = max(seen[in.JobID], in.LastSeen)
		if in.RunJobID != "" {
			seen[in.RunJobID] = max(seen[in.RunJobID], in.LastSeen)
		}
	}
	tr.Restore(open, seen)
	return tr
}

// TestRestoreEqualsUninterrupted crashes after every call, at every
// point where some incident changes were stored but the input was not
// committed, replays from there, and checks that the table is the one an
// uninterrupted run leaves.
func TestRestoreEqualsUninterrupted(t *testing.T) {
	var steps []step
	for w := int64(0); w < 20; w++ {
		var fs []skew.Finding
		if w < 6 || (w > 9 && w < 14) {
			fs = append(fs, skewed("j", w, 900+float64(w), 3), hot("a", w, 0.3))
		}
		if w%3 == 0 {
			fs = append(fs, skewed("k", w, 700, 2))
		}
		// The jobs report every window (subtask_stats, as the pipeline
		// writes by default).
		for _, j := range []string{"j", "k"} {
			fs = append(fs, skew.Finding{Kind: skew.KindSubtaskStats, JobID: j, TaskName: "agg", SubtaskIndex: ptr(0),
				WindowStart: w * win, WindowEnd: (w + 1) * win, Stats: &skew.SubtaskStats{}})
		}
		steps = append(steps, step{fs: fs})
		steps = append(steps, step{wm: (w + 1) * win})
	}
	want := table{}
	want.put(run(newTracker(t), steps))
	for crash := 1; crash < len(steps); crash++ {
		for replayFrom := max(0, crash-4); replayFrom <= crash; replayFrom++ {
			got := table{}
			got.put(run(newTracker(t), steps[:crash]))
			got.put(run(got.restore(t), steps[replayFrom:]))
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("crash after step %d, replay from %d: table differs:\n got %+v\nwant %+v", crash, replayFrom, got, want)
			}
		}
	}
	if len(want) < 4 {
		t.Fatalf("only %d incidents: the test needs several", len(want))
	}
}

// ended is the job_end finding of job j's run in window w.
func ended(j string, w int64, successor string) skew.Finding {
	e := &skew.JobEnd{Reason: skew.EndStopped}
	if successor != "" {
		e.Reason, e.Successor = skew.EndRestarted, successor
	}
	return skew.Finding{Kind: skew.KindJobEnd, JobID: j, WindowStart: w * win, WindowEnd: (w + 1) * win, JobEnd: e}
}

// TestJobEndClosesIncidents: a run's end closes its open incidents at
// once, with the reason, and only its own; the job is forgotten, and a
// finding in the same window as the end is closed with it.
func TestJobEndClosesIncidents(t *testing.T) {
	tests := []struct {
		name string
		end  skew.Finding
		want string
	}{
		{"restarted", ended("j", 3, "0123456789abcdef"), "job restarted as 01234567"},
		{"stopped", ended("j", 3, ""), "job stopped reporting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTracker(t)
			tr.Observe([]skew.Finding{skewed("j", 0, 900, 2), skewed("other", 0, 900, 2)})
			cs := tr.Observe([]skew.Finding{hot("k", 3, 0.5), tt.end})
			var closed []string
			for _, c := range cs {
				if c.Kind == Closed {
					if c.Incident.Resolution != tt.want || c.Incident.End != c.Incident.LastSeen || c.Incident.UpdatedAt < 4*win || c.Incident.UpdatedAt <= c.Incident.LastSeen {
						t.Errorf("closed %+v", c.Incident)
					}
					closed = append(closed, c.Incident.Cause)
				}
			}
			if !reflect.DeepEqual(closed, []string{CauseHotKey, skew.CauseDataSkew}) {
				t.Fatalf("closed %v, want the hot_key and the data_skew incident of j, in condition order", closed)
			}
			if tr.OpenCount() != 1 || tr.Open()[0].JobID != "other" {
				t.Fatalf("open %+v, want other's only", tr.Open())
			}
			if _, ok := tr.seen["j"]; ok {
				t.Error("the ended job is still remembered")
			}
		})
	}
}

// stats is a subtask_stats finding of job j in window w: a report.
func stats(j string, w int64) skew.Finding {
	return skew.Finding{Kind: skew.KindSubtaskStats, JobID: j, TaskName: "agg", SubtaskIndex: ptr(0),
		WindowStart: w * win, WindowEnd: (w + 1) * win, Stats: &skew.SubtaskStats{}}
}

// TestRequireReports: with RequireReports, a condition is absent only in
// windows its job reported in: the incident of a job that goes on
// reporting closes after ResolveAfter, that of a silent job stays open
// until its run ends, and closes with the reason.
func TestRequireReports(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Hysteresis = Hysteresis{ResolveAfter: 30 * time.Second}
	cfg.RequireReports = true
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr.Observe([]skew.Finding{skewed("live", 0, 900, 2), stats("live", 0), skewed("silent", 0, 900, 2), stats("silent", 0)})
	var got []string
	for w := int64(1); w <= 9; w++ {
		fs := []skew.Finding{stats("live", w)}
		if w == 9 {
			fs = append(fs, ended("silent", w, "0123456789abcdef"))
		}
		for _, c := range tr.Observe(fs) {
			got = append(got, fmt.Sprintf("%s %s @%d %s", c.Kind, c.Incident.JobID, c.Incident.UpdatedAt/win, c.Incident.Resolution))
		}
		for _, c := range tr.Advance((w + 1) * win) {
			got = append(got, fmt.Sprintf("%s %s @%d %s", c.Kind, c.Incident.JobID, c.Incident.UpdatedAt/win, c.Incident.Resolution))
		}
	}
	want := []string{"closed live @4 ", "closed silent @10 job restarted as 01234567"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("changes %q, want %q", got, want)
	}
	if len(tr.reports) != 1 {
		t.Errorf("reports kept for %v, want live's only", tr.reports)
	}
}
