package incident

import (
	"fmt"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// planRuns serves the plan of task agg of each run: v2 of the old run
// from window 4, and, once the old run's job_end carried it over, v1 of
// the new run from the end of that window (when carried is set).
type planRuns struct {
	carried bool
	endAt   int64
}

func (p *planRuns) plan(job, task string) (uint64, int64, bool) {
	switch {
	case task != "agg":
		return 0, 0, false
	case job == oldRun:
		return 2, 4 * win, p.endAt == 0
	case job == newRun && p.carried && p.endAt > 0:
		return 1, p.endAt, true
	}
	return 0, 0, false
}

// followScenario folds windows 0..15: the old run's subtask 1 skewed
// (data_skew, a hot key, a slow subtask elsewhere) until window 5, its
// job_end in window 7 (successor newRun), and the new run reporting from
// window 6 at busy next(w) on subtask 1, skewed while that is saturated
// from window 7 (the engine's sustain: its first window is partial, and
// a condition needs two windows).
func followScenario(t *testing.T, carried bool, next func(w int64) float64) []Change {
	t.Helper()
	p := &planRuns{carried: carried}
	cfg := DefaultConfig()
	cfg.Hysteresis = Hysteresis{For: 20 * time.Second, ResolveAfter: 30 * time.Second}
	cfg.RequireReports = true
	cfg.Plan = p.plan
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out []Change
	for w := range int64(16) {
		var fs []skew.Finding
		run, busy := oldRun, 990.0
		if w >= 6 {
			run, busy = newRun, next(w)
		}
		fs = append(fs, statsOf(run, w, busy))
		if busy >= 800 && w != 6 {
			fs = append(fs, skewed(run, w, busy, 3))
			k := hot("k1", w, 0.4)
			k.JobID = run
			fs = append(fs, k)
		}
		if w < 6 {
			sl := skewed(oldRun, w, 990, 1)
			sl.TaskName, sl.Cause = "sink", skew.CauseSlowSubtask
			fs = append(fs, sl)
		}
		if w == 7 {
			f := ended(oldRun, w, newRun)
			p.endAt = f.WindowEnd // the plan manager carried (or not) the plan in this window
			fs = append(fs, f)
		}
		out = append(out, tr.Observe(fs)...)
		out = append(out, tr.Advance((w+1)*win)...)
	}
	return out
}

// TestFollowCarriedPlan: when a run ends restarted and its task's salting
// plan carried over to the new run, the task's open data_skew and hot_key
// incidents are not closed and not followed by new ones: they continue in
// the new run (same id, RunJobID), and the data_skew one closes resolved
// by the plan once the new run's subtask is relieved, or stays open while
// it is saturated with the plan in force. Without a carried plan they
// close with the run, as the slow subtask does either way.
func TestFollowCarriedPlan(t *testing.T) {
	relieved := func(w int64) float64 {
		if w < 10 {
			return 990
		}
		return 500
	}
	saturated := func(int64) float64 { return 990 }
	tests := []struct {
		name    string
		carried bool
		next    func(int64) float64
		// want: each incident's last change, by cause.
		want map[string]string
		ids  int // incidents in all
	}{
		{"carried, relieved", true, relieved, map[string]string{
			skew.CauseDataSkew:    "closed run=" + newRun + " resolved by plan v1",
			CauseHotKey:           "closed run=" + newRun + " ",
			skew.CauseSlowSubtask: "closed run= job restarted as fedcba98",
		}, 3},
		{"carried, still saturated", true, saturated, map[string]string{
			skew.CauseDataSkew:    "updated run=" + newRun + " ",
			CauseHotKey:           "updated run=" + newRun + " ",
			skew.CauseSlowSubtask: "closed run= job restarted as fedcba98",
		}, 3},
		{"not carried", false, saturated, map[string]string{
			skew.CauseDataSkew:    "updated run= ", // the new run's own incident
			CauseHotKey:           "updated run= ",
			skew.CauseSlowSubtask: "closed run= job restarted as fedcba98",
		}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			last := map[string]Change{}
			ids := map[string]bool{}
			for _, c := range followScenario(t, tt.carried, tt.next) {
				ids[c.Incident.ID] = true
				if c.Incident.JobID == newRun && tt.carried {
					t.Fatalf("a new incident in the new run: %+v", c.Incident)
				}
				if old, ok := last[c.Incident.Cause]; !ok || c.Incident.UpdatedAt >= old.Incident.UpdatedAt {
					last[c.Incident.Cause] = c
				}
			}
			for cause, want := range tt.want {
				c := last[cause]
				got := fmt.Sprintf("%s run=%s %s", c.Kind, c.Incident.RunJobID, c.Incident.Resolution)
				if cause == skew.CauseDataSkew && tt.carried {
					if p := c.Incident.Plan; p == nil || p.Version != 1 || p.At != 8*win {
						t.Errorf("%s: plan effect %+v, want the new run's plan v1", cause, p)
					}
				}
				if got != want {
					t.Errorf("%s: last change %q, want %q", cause, got, want)
				}
			}
			if len(ids) != tt.ids {
				t.Errorf("%d incidents, want %d", len(ids), tt.ids)
			}
		})
	}
}
