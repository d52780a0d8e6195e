package alert

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
)

// TestRestartedRunContinuesAlert: a job restarted (a new job id) whose
// task's salting plan carried over to the new run: its data_skew alert
// neither resolves nor fires again; it goes on in the new run, pointing
// at the new run's plan, and resolves, resolved by the plan, once the new
// run's subtask is relieved. Restoring the pipeline in between changes
// nothing.
func TestRestartedRunContinuesAlert(t *testing.T) {
	const oldRun, newRun = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
	var endAt int64 // the old run's job_end window end: the plan carried over then
	plan := func(job, task string) (uint64, int64, bool) {
		switch {
		case task != "agg":
		case job == oldRun:
			return 2, 4 * win, endAt == 0
		case job == newRun && endAt > 0:
			return 1, endAt, true
		}
		return 0, 0, false
	}
	newFold := func() *pipe {
		return newPipe(t, Config{SaltingURL: "http://skewlens:8080", PlanVersion: func(job, task string) (uint64, bool) {
			v, _, ok := plan(job, task)
			return v, ok
		}}, func(c *incident.Config) {
			c.Hysteresis = incident.Hysteresis{For: 20 * time.Second, ResolveAfter: 30 * time.Second}
			c.RequireReports = true
			c.Plan = plan
		})
	}
	window := func(w int64) []skew.Finding {
		run, busy := oldRun, 990.0
		if w >= 6 {
			run = newRun
		}
		if w >= 10 {
			busy = 500
		}
		st := statsOf(run, w*win)
		st.TaskName, st.SubtaskIndex, st.Stats = "agg", intp(1), &skew.SubtaskStats{BusyMsPerSecond: busy, Saturated: busy >= 800}
		fs := []skew.Finding{st}
		if busy >= 800 && w != 6 {
			fs = append(fs, sat(run, "agg", 1, skew.CauseDataSkew, w*win))
		}
		if w == 7 {
			endAt = (w + 1) * win
			e := jobEnd(oldRun, w*win, skew.EndRestarted)
			e.JobEnd.Successor = newRun
			fs = append(fs, e)
		}
		return fs
	}
	for _, cut := range []int64{0, 5, 7, 8, 11} { // 0: uninterrupted
		t.Run("", func(t *testing.T) {
			endAt = 0
			p := newFold()
			var got []Event
			for w := range int64(14) {
				if cut > 0 && w == cut {
					s := p.save(t)
					p = newFold()
					if events, err := p.restore(s); err != nil || len(events) > 0 {
						t.Fatalf("restore after window %d: %v, events %v", w, err, evs(events))
					}
				}
				got = append(got, p.Observe(window(w))...)
				got = append(got, p.Advance((w+1)*win)...)
			}
			want := []string{
				"pending " + oldRun + "/agg/1/data_skew @10000",
				"firing " + oldRun + "/agg/1/data_skew @20000",
				"resolved " + oldRun + "/agg/1/data_skew @110000 resolved_by_plan",
			}
			if g := evs(got); !slices.Equal(g, want) {
				t.Fatalf("cut at %d: events\n%s\nwant\n%s", cut, joinLines(g), joinLines(want))
			}
			res := got[len(got)-1].Alert
			if !strings.HasPrefix(res.Annotations["resolution"], "resolved by plan v1") || res.Finding.JobID != newRun {
				t.Errorf("resolution %q, latest finding of %s: want the new run's plan and finding", res.Annotations["resolution"], res.Finding.JobID)
			}
		})
	}
}
