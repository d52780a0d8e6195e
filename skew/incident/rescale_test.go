package incident

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// Two runs of one job: "old" is stopped with a savepoint, "new" is its
// resubmit (Flink gives it a new id).
const (
	oldRun = "0123456789abcdef0123456789abcdef"
	newRun = "fedcba9876543210fedcba9876543210"
)

// underProv is the under_provisioned finding of task agg of job j at
// parallelism p in window w.
func underProv(j string, w int64, p int, busy float64) skew.Finding {
	return skew.Finding{
		Kind: skew.KindSaturation, JobID: j, JobName: "orders", TaskName: "agg",
		WindowStart: w * win, WindowEnd: (w + 1) * win, Summary: fmt.Sprintf("window %d", w),
		Saturation: &skew.Saturation{Cause: skew.CauseUnderProvisioned, Evidence: &skew.Evidence{
			BusyMsPerSecond: busy, VertexID: "a1b2c3d4e5f60718293a4b5c6d7e8f90", Parallelism: p, MaxParallelism: 128, RecommendedParallelism: 4,
		}},
	}
}

// taskStats is the subtask_stats findings of task agg of job j in window
// w: subtasks 0..p-1 (those in skip left out), each busy busy ms/s.
func taskStats(j string, w int64, p int, busy float64, skip ...int) []skew.Finding {
	var fs []skew.Finding
	for i := range p {
		if slices.Contains(skip, i) {
			continue
		}
		fs = append(fs, skew.Finding{Kind: skew.KindSubtaskStats, JobID: j, JobName: "orders", TaskName: "agg", SubtaskIndex: ptr(i),
			WindowStart: w * win, WindowEnd: (w + 1) * win,
			Stats: &skew.SubtaskStats{BusyMsPerSecond: busy + float64(i), Saturated: busy+float64(i) >= 800}})
	}
	return fs
}

// runWindow is what one run of the job reports in one window.
type runWindow struct {
	job       string
	p         int
	busy      float64
	saturated bool  // with an under_provisioned finding
	skip      []int // subtasks that did not report
	early     bool  // under_provisioned from the run's first window
}

// rescaleScenario builds the findings of windows 0..n-1: the old run at
// parallelism 2, saturated, until window 5; what next returns for the
// later windows; and the old run's job_end (successor newRun) in window
// end, when end > 0. A run's under_provisioned findings start in its
// third window, as the engine's sustain of two windows allows.
func rescaleScenario(n, end int64, next func(w int64) []runWindow) [][]skew.Finding {
	var out [][]skew.Finding
	for w := range n {
		rws := []runWindow{{job: oldRun, p: 2, busy: 1000, saturated: true}}
		if w > 5 {
			rws = next(w)
		}
		var fs []skew.Finding
		for _, rw := range rws {
			fs = append(fs, taskStats(rw.job, w, rw.p, rw.busy, rw.skip...)...)
			if rw.saturated && (rw.job == oldRun || w >= 9 || rw.early) {
				fs = append(fs, underProv(rw.job, w, rw.p, rw.busy))
			}
		}
		if end > 0 && w == end {
			f := ended(oldRun, w, newRun)
			f.JobName = "orders"
			f.JobEnd.LastEventAt = 6 * win
			fs = append(fs, f)
		}
		out = append(out, fs)
	}
	return out
}

func rescaleTracker(t *testing.T) *Tracker {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Hysteresis = Hysteresis{ResolveAfter: 30 * time.Second}
	cfg.RequireReports = true
	cfg.ReliefWithin = time.Minute
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestRescaleReceipt: an under_provisioned incident follows its job
// into the run that replaced it (a stop with a savepoint and a resubmit)
// and closes, resolved by the rescale, in the first window after the one
// that showed every subtask at the higher parallelism if none of them is
// saturated, with the receipt; a new run still saturated keeps it open
// (overdue after ReliefWithin), one at the same parallelism keeps it
// open without a receipt; a rescale in place is the same receipt in one
// run. Other causes close with the run.
func TestRescaleReceipt(t *testing.T) {
	newRunAt := func(p int, busy float64, saturated bool) func(int64) []runWindow {
		return func(w int64) []runWindow {
			if w < 7 {
				return nil // stopped, not resubmitted yet
			}
			return []runWindow{{job: newRun, p: p, busy: busy, saturated: saturated}}
		}
	}
	tests := []struct {
		name string
		end  int64 // the window of the old run's job_end; 0: none
		next func(w int64) []runWindow
		// want: the final state of the incident the old run opened.
		state, reason, resolution, run string
		rescale                        *RescaleEffect
		windows                        int
		// open lists the jobs of the incidents open at the end.
		open []string
	}{
		{
			name: "resubmitted at the recommendation, relieved", end: 8, next: newRunAt(4, 500, false),
			state: StateClosed, reason: ReasonResolvedByRescale, resolution: "resolved by rescale to 4", run: newRun, windows: 6,
			// Window 8 is the new run's first after the follow (window 7
			// is before it: not the incident's); window 9 relieves it.
			rescale: &RescaleEffect{ParallelismBefore: 2, ParallelismAfter: 4, At: 8 * win, BusyBefore: 1000,
				BusyAfter: 501.5, BusyAfterPeak: 503, RelievedAt: 10 * win},
		},
		{
			name: "resubmitted, a subtask missing from a window", end: 8,
			next: func(w int64) []runWindow {
				rw := runWindow{job: newRun, p: 4, busy: 500}
				if w == 9 {
					rw.skip = []int{1} // that window tells nothing
				}
				return []runWindow{rw}
			},
			state: StateClosed, reason: ReasonResolvedByRescale, resolution: "resolved by rescale to 4", run: newRun, windows: 6,
			rescale: &RescaleEffect{ParallelismBefore: 2, ParallelismAfter: 4, At: 8 * win, BusyBefore: 1000,
				BusyAfter: 501.5, BusyAfterPeak: 503, RelievedAt: 11 * win},
		},
		{
			name: "resubmitted, still saturated", end: 8, next: newRunAt(4, 950, true),
			state: StateOpen, run: newRun, windows: 6 + 11, // windows 0-5 of the old run, 9-19 of the new
			rescale: &RescaleEffect{ParallelismBefore: 2, ParallelismAfter: 4, At: 8 * win, BusyBefore: 1000, Overdue: true},
			open:    []string{oldRun},
		},
		{
			// Flink 2.x ignores the override for DataStream jobs
			// (FLINK-38770): the new run is as small as the old.
			name: "resubmitted at the same parallelism", end: 8, next: newRunAt(2, 1000, true),
			state: StateOpen, run: newRun, windows: 17, open: []string{oldRun},
		},
		{
			name: "restarted, load gone, same parallelism", end: 8, next: newRunAt(2, 300, false),
			// Absent for ResolveAfter from the window it followed in.
			state: StateClosed, reason: ReasonAbsent, run: newRun, windows: 6,
		},
		{
			name: "rescaled in place (adaptive scheduler)",
			next: func(w int64) []runWindow {
				if w == 6 {
					return []runWindow{{job: oldRun, p: 4, busy: 700, skip: []int{1}}} // rescaling: a window that tells nothing
				}
				return []runWindow{{job: oldRun, p: 4, busy: 600}}
			},
			state: StateClosed, reason: ReasonResolvedByRescale, resolution: "resolved by rescale to 4", windows: 6,
			rescale: &RescaleEffect{ParallelismBefore: 2, ParallelismAfter: 4, At: 7 * win, BusyBefore: 1000,
				BusyAfter: 601.5, BusyAfterPeak: 603, RelievedAt: 9 * win},
		},
		{
			name: "the new run has an incident of its own already", end: 8,
			next: func(w int64) []runWindow {
				if w < 7 {
					return nil
				}
				return []runWindow{{job: newRun, p: 2, busy: 1000, saturated: true, early: true}}
			},
			state: StateClosed, reason: ReasonJobRestarted, resolution: "job restarted as fedcba98", windows: 6, open: []string{newRun},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := rescaleTracker(t)
			var last Change
			var id string
			for w, fs := range rescaleScenario(20, tt.end, tt.next) {
				if w <= 5 {
					// A data_skew incident of the old run too: it closes
					// with the run.
					fs = append(fs, skewed(oldRun, int64(w), 900, 2))
				}
				for _, c := range append(tr.Observe(fs), tr.Advance(int64(w+1)*win)...) {
					if c.Incident.Cause == skew.CauseDataSkew && c.Kind == Closed && tt.end > 0 && c.Reason != ReasonJobRestarted {
						t.Errorf("the data_skew incident closed %s, want with its run", c.Reason)
					}
					if c.Incident.Cause != skew.CauseUnderProvisioned || c.Incident.JobID != oldRun {
						continue
					}
					if id == "" {
						id = c.Incident.ID
					}
					if c.Incident.ID != id {
						t.Fatalf("a second incident of the old run: %+v", c.Incident)
					}
					last = c
				}
			}
			in := last.Incident
			if in.State != tt.state || last.Reason != tt.reason || in.Resolution != tt.resolution || in.RunJobID != tt.run || in.Windows != tt.windows {
				t.Errorf("last change %s %q: state %s, resolution %q, run %q, windows %d; want %s %q, %q, %q, %d",
					last.Kind, last.Reason, in.State, in.Resolution, in.RunJobID, in.Windows, tt.state, tt.reason, tt.resolution, tt.run, tt.windows)
			}
			if !reflect.DeepEqual(in.Rescale, tt.rescale) {
				t.Errorf("rescale %+v, want %+v", in.Rescale, tt.rescale)
			}
			if in.Parallelism != 2 || in.JobID != oldRun || in.ID != IncidentID(Identity{JobID: oldRun, TaskName: "agg", Subtask: -1, Cause: skew.CauseUnderProvisioned}, "", 0) {
				t.Errorf("incident %+v: want parallelism 2, the old run's job id and id", in)
			}
			if tt.run != "" && in.RunSince != (tt.end+1)*win {
				t.Errorf("run since %d, want the end of window %d", in.RunSince, tt.end)
			}
			var open []string
			for _, o := range tr.Open() {
				open = append(open, o.JobID)
			}
			if !reflect.DeepEqual(open, tt.open) {
				t.Errorf("open incidents of %q, want %q", open, tt.open)
			}
		})
	}
}

func TestRescaleWhy(t *testing.T) {
	in := Incident{Resolution: "resolved by rescale to 4", RunJobID: newRun, Rescale: &RescaleEffect{
		ParallelismBefore: 2, ParallelismAfter: 4, At: 8 * win, BusyBefore: 1000, BusyAfter: 501.5, BusyAfterPeak: 503, RelievedAt: 10 * win}}
	want := "resolved by rescale to 4: parallelism 2 → 4 (run fedcba98), busy 1000 → 502 ms/s (busiest subtask 503), 20s after the change"
	if got := in.Why(); got != want {
		t.Errorf("Why() = %q, want %q", got, want)
	}
	in.RunJobID, in.Rescale.RelievedAt, in.State = "", 0, StateOpen
	in.Resolution = ""
	if got := in.Why(); got != "" {
		t.Errorf("open incident: Why() = %q, want empty", got)
	}
}

// TestRescaleRestoreEqualsUninterrupted: crashing anywhere in the
// follow-and-rescale sequence, restoring from the stored incidents (as
// the incidents table gives them: the open ones, and each job's latest
// window, the followed run's included) and replaying from a few steps
// back leaves the table an uninterrupted run leaves.
func TestRescaleRestoreEqualsUninterrupted(t *testing.T) {
	for _, tc := range []struct {
		name string
		next func(w int64) []runWindow
	}{
		{"relieved", func(w int64) []runWindow {
			if w < 7 {
				return nil
			}
			// Saturated for the new run's first windows (its finding
			// extends the incident), then relieved.
			return []runWindow{{job: newRun, p: 4, busy: map[bool]float64{true: 900, false: 500}[w < 10], saturated: w < 10}}
		}},
		{"still saturated", func(w int64) []runWindow {
			if w < 7 {
				return nil
			}
			return []runWindow{{job: newRun, p: 4, busy: 900, saturated: true}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var steps []step
			for w, fs := range rescaleScenario(20, 8, tc.next) {
				steps = append(steps, step{fs: fs}, step{wm: int64(w+1) * win})
			}
			rescaled := func() *Tracker { return rescaleTracker(t) }
			want := table{}
			want.put(run(rescaled(), steps))
			for crash := 1; crash < len(steps); crash++ {
				for replayFrom := max(0, crash-4); replayFrom <= crash; replayFrom++ {
					got := table{}
					got.put(run(rescaled(), steps[:crash]))
					got.put(run(got.restoreInto(rescaled()), steps[replayFrom:]))
					if !reflect.DeepEqual(got, want) {
						t.Fatalf("crash after step %d, replay from %d: table differs:\n got %+v\nwant %+v", crash, replayFrom, got, want)
					}
				}
			}
		})
	}
}

// TestRescaleBatched: the windows observed in one batch (a consumer
// catching up) give the receipt that window by window gives.
func TestRescaleBatched(t *testing.T) {
	next := func(w int64) []runWindow {
		if w < 7 {
			return nil
		}
		return []runWindow{{job: newRun, p: 4, busy: 500}}
	}
	var all []skew.Finding
	each := table{}
	tr := rescaleTracker(t)
	for _, fs := range rescaleScenario(14, 8, next) {
		all = append(all, fs...)
		each.put(tr.Observe(fs))
	}
	one := table{}
	one.put(rescaleTracker(t).Observe(all))
	if !reflect.DeepEqual(one, each) {
		t.Fatalf("batched %+v\nwindow by window %+v", one, each)
	}
	for _, in := range one {
		if in.Rescale == nil || in.Rescale.RelievedAt == 0 {
			t.Fatalf("no receipt: %+v", in)
		}
	}
}
