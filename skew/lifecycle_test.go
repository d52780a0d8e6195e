package skew

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// run is one run of a job in a lifecycle test: it reports busy time for
// par subtasks every 5 s, from second from to second to (inclusive).
type lifeRun struct {
	id, name string
	from, to int
	par      int
}

// lifeEvents returns the metrics of runs in event time order.
func lifeEvents(runs []lifeRun) []Metric {
	var out []Metric
	for sec := 0; sec <= 600; sec += 5 {
		for _, r := range runs {
			if sec < r.from || sec > r.to {
				continue
			}
			for sub := range r.par {
				out = append(out, Metric{TS: t0 + int64(sec)*1000, JobID: r.id, JobName: r.name, TaskName: "Sum",
					Subtask: int32(sub), Name: BusyTimeMsPerSecond, Value: 300})
			}
		}
	}
	return out
}

// ends returns the job_end findings of fs as "id reason successor @window".
func ends(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		if f.Kind == KindJobEnd {
			out = append(out, fmt.Sprintf("%s %s %s @%d", f.JobID, f.JobEnd.Reason, f.JobEnd.Successor, (f.WindowStart-t0)/1000))
		}
	}
	return out
}

// TestJobEnd: a run that a later run of the same job name follows ends
// as restarted once the later run has a whole window; a run silent for
// JobEndAfterMs ends as stopped; runs of one name side by side do not end
// each other; a run with no name ends only by silence. Its state is freed.
func TestJobEnd(t *testing.T) {
	tests := []struct {
		name string
		runs []lifeRun
		want []string
	}{
		{
			name: "restarted with a new id",
			runs: []lifeRun{{"a1", "orders", 0, 95, 4}, {"a2", "orders", 120, 600, 4}},
			// a2's first window is [120,130); the next closes the run.
			want: []string{"a1 restarted a2 @130"},
		},
		{
			name: "restarted within a window: the windows may overlap",
			runs: []lifeRun{{"a1", "orders", 0, 100, 4}, {"a2", "orders", 105, 600, 2}},
			want: []string{"a1 restarted a2 @110"},
		},
		{
			name: "stopped for good",
			runs: []lifeRun{{"a1", "orders", 0, 95, 4}, {"b", "other", 0, 600, 2}},
			// The last event at 95 s; 60 s later, in the window [150,160).
			want: []string{"a1 stopped  @150"},
		},
		{
			name: "two runs side by side end only by silence",
			runs: []lifeRun{{"a1", "orders", 0, 600, 4}, {"a2", "orders", 50, 300, 4}},
			want: []string{"a2 stopped  @350"},
		},
		{
			name: "runs without a name are not linked",
			runs: []lifeRun{{"a1", "", 0, 95, 4}, {"a2", "", 120, 600, 4}},
			want: []string{"a1 stopped  @150"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(Config{})
			if err != nil {
				t.Fatal(err)
			}
			var fs []Finding
			for _, m := range lifeEvents(tt.runs) {
				if v := e.AddMetric(&m); v != Accepted {
					t.Fatalf("metric at %d of %s: verdict %d", m.TS-t0, m.JobID, v)
				}
				fs = e.Advance(m.TS-5000, fs)
			}
			if got := ends(fs); !slices.Equal(got, tt.want) {
				t.Fatalf("job ends %q, want %q", got, tt.want)
			}
			for _, f := range fs {
				if f.Kind != KindJobEnd {
					continue
				}
				if _, ok := e.jobs[f.JobID]; ok {
					t.Errorf("job %s ended and still tracked", f.JobID)
				}
				if !strings.Contains(f.Summary, JobLabel(f.JobName, f.JobID)) || f.TaskName != "" || f.SubtaskIndex != nil {
					t.Errorf("job_end finding %+v", f)
				}
				if f.JobEnd.Reason == EndRestarted {
					want := []TaskShape{{Name: "Sum", Parallelism: tt.runs[1].par}}
					if !slices.Equal(f.JobEnd.SuccessorTasks, want) {
						t.Errorf("successor tasks %+v, want %+v", f.JobEnd.SuccessorTasks, want)
					}
				}
			}
			// An ended job's saved state is deleted: the snapshot has a
			// tombstone for it, once.
			for _, s := range e.Snapshot(nil) {
				for _, f := range fs {
					if f.Kind == KindJobEnd && f.JobID == s.JobID && !s.Ended {
						t.Errorf("ended job %s in the snapshot", s.JobID)
					}
				}
			}
			for _, s := range e.Snapshot(nil) {
				if s.Ended {
					t.Errorf("tombstone of %s in a second snapshot", s.JobID)
				}
			}
		})
	}
}

// TestJobEndAcrossRestore: a run's first and last events are saved with
// its state, so an engine restored between its windows ends it as the
// first would, and a restored job that sends nothing more ends as
// stopped (the pipeline restores only the jobs whose sources it reads).
func TestJobEndAcrossRestore(t *testing.T) {
	runs := []lifeRun{{"a1", "orders", 0, 95, 4}, {"a2", "orders", 120, 600, 4}, {"b", "idle", 0, 20, 1}}
	evs := lifeEvents(runs)
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	var fs []Finding
	i := 0
	for ; evs[i].TS < t0+90000; i++ {
		e.AddMetric(&evs[i])
		fs = e.Advance(evs[i].TS-5000, fs)
	}
	if got := ends(fs); !slices.Equal(got, []string{"b stopped  @70"}) {
		t.Fatalf("before the restore: %q", got)
	}
	// Through JSON, as the store keeps it; it deletes b's state for its
	// tombstone.
	snap := e.Snapshot(nil)
	if n := len(snap); n == 0 || !snap[n-1].Ended || snap[n-1].JobID != "b" {
		t.Fatalf("no tombstone of b last in %+v", snap)
	}
	b, err := json.Marshal(snap[:len(snap)-1])
	if err != nil {
		t.Fatal(err)
	}
	var states []JobState
	if err := json.Unmarshal(b, &states); err != nil {
		t.Fatal(err)
	}
	// A job silent since its first window comes with the state.
	other := JobState{JobID: "x", JobName: "elsewhere", WindowMs: 10000, ClosedUpTo: t0 + 10000, LastSeen: t0, FirstEvent: ptr(t0), LastEvent: ptr(t0)}
	r, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := restoreAll(r, append(states, other)); err != nil {
		t.Fatal(err)
	}
	fs = fs[:0]
	for ; i < len(evs); i++ {
		r.AddMetric(&evs[i])
		fs = r.Advance(evs[i].TS-5000, fs)
	}
	if got := ends(fs); !slices.Equal(got, []string{"x stopped  @90", "a1 restarted a2 @130"}) {
		t.Fatalf("after the restore: %q", got)
	}
	if _, ok := r.jobs["x"]; ok {
		t.Error("the stopped job x is still tracked")
	}
}

// TestMaxJobs: at MaxJobs the events of new jobs are rejected and
// counted; once a run ends there is room again.
func TestMaxJobs(t *testing.T) {
	e, err := New(Config{MaxJobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	add := func(id string, sec int) Verdict {
		m := Metric{TS: t0 + int64(sec)*1000, JobID: id, JobName: id, TaskName: "t", Name: BusyTimeMsPerSecond, Value: 1}
		return e.AddMetric(&m)
	}
	add("a", 0)
	add("b", 0)
	if v := add("c", 0); v != Rejected || e.RefusedJobs() != 1 || e.Jobs() != 2 {
		t.Fatalf("third job: verdict %d, refused %d, jobs %d", v, e.RefusedJobs(), e.Jobs())
	}
	ks := KeySample{TS: t0, JobID: "c", TaskName: "t", Key: "k", Weight: 1, SampleRate: 1}
	if v := e.AddSample(&ks); v != Rejected || e.RefusedJobs() != 2 {
		t.Fatalf("third job's sample: verdict %d, refused %d", v, e.RefusedJobs())
	}
	for sec := 5; sec <= 80; sec += 5 {
		add("b", sec)
		e.Advance(t0+int64(sec)*1000-5000, nil)
	}
	if v := add("c", 80); v != Accepted || e.Jobs() != 2 {
		t.Fatalf("after a's end: verdict %d, jobs %d", v, e.Jobs())
	}
}

func ptr[T any](v T) *T { return &v }

// TestJobEndWhenForgotten: a run whose windows all closed and that the
// next window to close finds past the history horizon (the next event
// came an hour later) ends as stopped in that window, rather than being
// freed without a job_end; so does one forgotten before JobEndAfterMs
// passed (longer than the history). A job without events since the
// engine was restored is freed silently: it may be another instance's.
func TestJobEndWhenForgotten(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		lastSec int // the later job's one event, in seconds after t0
		want    []string
	}{
		{"past the horizon", Config{}, 4000, []string{"a stopped  @4000"}},
		{"before job-end-after", Config{HistoryWindows: 6, RotationLookbackWindows: 6, SustainMs: 60000, JobEndAfterMs: 300000}, 200, []string{"a stopped  @200"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			// A silent restored job, never heard of since.
			if err := restoreAll(e, []JobState{{JobID: "old", JobName: "old", WindowMs: 10000, ClosedUpTo: t0, LastSeen: t0 - 10000}}); err != nil {
				t.Fatal(err)
			}
			var fs []Finding
			for _, m := range lifeEvents([]lifeRun{{"a", "orders", 0, 25, 2}}) {
				e.AddMetric(&m)
				fs = e.Advance(m.TS-5000, fs)
			}
			fs = e.Flush(fs) // every window of a closes
			if got := ends(fs); len(got) != 0 {
				t.Fatalf("ends before the gap: %q", got)
			}
			later := Metric{TS: t0 + int64(tt.lastSec)*1000, JobID: "b", JobName: "later", TaskName: "Sum", Name: BusyTimeMsPerSecond, Value: 1}
			if v := e.AddMetric(&later); v != Accepted {
				t.Fatalf("later event: verdict %d", v)
			}
			fs = e.Flush(fs[:0])
			if got := ends(fs); !slices.Equal(got, tt.want) {
				t.Fatalf("job ends %q, want %q", got, tt.want)
			}
			if _, ok := e.jobs["a"]; ok {
				t.Error("a is still tracked")
			}
			for _, f := range fs {
				if f.Kind == KindJobEnd && (f.JobEnd.LastEventAt != t0+25000 || !strings.Contains(f.Summary, "stopped")) {
					t.Errorf("job_end %+v", f)
				}
			}
			if _, ok := e.jobs["old"]; ok {
				t.Error("the silent restored job is still tracked past the horizon")
			}
		})
	}
}

// TestAdvanceQuiet: with the input quiet, a processing-time watermark
// ends each run in the first window after its last event plus
// JobEndAfterMs, and not before: its open windows close first, their
// findings ahead of the job_end, and a run with a later last event waits
// for its own end.
func TestAdvanceQuiet(t *testing.T) {
	e, err := New(Config{EmitStats: true}) // a finding per window and subtask
	if err != nil {
		t.Fatal(err)
	}
	var fs []Finding
	// a reports to 95 s, b to 102 s; then nothing.
	for _, m := range lifeEvents([]lifeRun{{"a", "orders", 0, 95, 2}, {"b", "other", 0, 100, 2}}) {
		e.AddMetric(&m)
		fs = e.Advance(m.TS-5000, fs)
	}
	last := Metric{TS: t0 + 102000, JobID: "b", JobName: "other", TaskName: "Sum", Subtask: 0, Name: BusyTimeMsPerSecond, Value: 300}
	e.AddMetric(&last)
	if e.OpenWindows() == 0 {
		t.Fatal("no window open at the end of the input")
	}
	var steps []string
	for sec := int64(102); sec <= 200; sec++ {
		n := len(fs)
		var to int64
		fs, to = e.AdvanceQuiet(t0+sec*1000, fs)
		if got := ends(fs[n:]); len(got) > 0 {
			steps = append(steps, fmt.Sprintf("%d: %s to %d", sec, strings.Join(got, ","), (to-t0)/1000))
		} else if to != math.MinInt64 {
			t.Fatalf("at %d s: moved to %d without ending a run", sec, to)
		}
	}
	// a: 95+60 = 155, in the window [150,160); b: 102+60 = 162, [160,170).
	want := []string{"160: a stopped  @150 to 160", "170: b stopped  @160 to 170"}
	if !slices.Equal(steps, want) {
		t.Fatalf("ends %q, want %q", steps, want)
	}
	if e.OpenWindows() != 0 || e.Jobs() != 0 {
		t.Fatalf("%d windows open, %d jobs after both ended", e.OpenWindows(), e.Jobs())
	}
	// b's last window [100,110) was written before b's end.
	lastWin, end := -1, -1
	for i, f := range fs {
		switch {
		case f.JobID == "b" && f.Kind == KindJobEnd:
			end = i
		case f.JobID == "b" && f.WindowStart == t0+100000:
			lastWin = i
		}
	}
	if lastWin < 0 || lastWin > end {
		t.Fatalf("b's last window at %d, its end at %d", lastWin, end)
	}
	// Event time at the end's window is late from then on, later is not.
	if v := e.AddMetric(&Metric{TS: t0 + 165000, JobID: "b", JobName: "other", TaskName: "Sum", Name: BusyTimeMsPerSecond, Value: 1}); v != Late {
		t.Errorf("an event of the ended window: verdict %d", v)
	}
	if v := e.AddMetric(&Metric{TS: t0 + 175000, JobID: "b", JobName: "other", TaskName: "Sum", Name: BusyTimeMsPerSecond, Value: 1}); v != Accepted {
		t.Errorf("an event after the ended window: verdict %d", v)
	}
}
