package incident

import (
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// statsOf is the subtask_stats finding of subtask 1 of job j's task agg
// in window w.
func statsOf(j string, w int64, busy float64) skew.Finding {
	return skew.Finding{Kind: skew.KindSubtaskStats, JobID: j, TaskName: "agg", SubtaskIndex: ptr(1),
		WindowStart: w * win, WindowEnd: (w + 1) * win, Stats: &skew.SubtaskStats{BusyMsPerSecond: busy, Saturated: busy >= 800}}
}

// TestPlanReceipt: a data_skew incident whose task gets a plan closes,
// resolved by it, in the first window after the plan in which its
// subtask is not saturated, with the receipt (busy before and after, the
// salted key's spread, when); a plan that does not relieve it within
// ReliefWithin marks it overdue, and it stays open.
func TestPlanReceipt(t *testing.T) {
	tests := []struct {
		name    string
		relief  int64 // the window whose subtask is no longer saturated; 0: none
		want    PlanEffect
		closed  bool
		overdue int64 // the window that marks it overdue
	}{
		{name: "relieved", relief: 6, closed: true,
			want: PlanEffect{Version: 2, At: 4 * win, BusyBefore: 950, BusyAfter: 500, KeySubtasks: 4, RelievedAt: 7 * win}},
		{name: "not relieved", overdue: 21,
			want: PlanEffect{Version: 2, At: 4 * win, BusyBefore: 950, KeySubtasks: 4, Overdue: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Hysteresis = Hysteresis{ResolveAfter: 30 * time.Second}
			cfg.RequireReports = true
			var plan struct {
				v  uint64
				at int64
			}
			cfg.Plan = func(job, task string) (uint64, int64, bool) {
				return plan.v, plan.at, job == "j" && task == "agg" && plan.v > 0
			}
			tr, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var last Change
			overdue := int64(0)
			for w := int64(0); w < 25; w++ {
				if w == 4 { // the plan, made from window 3's findings
					plan.v, plan.at = 2, 4*win
				}
				busy := 950.0
				if tt.relief > 0 && w >= tt.relief {
					busy = 500
				}
				fs := []skew.Finding{statsOf("j", w, busy)}
				if busy >= 800 {
					fs = append(fs, skewed("j", w, busy, 2))
				}
				if w >= 5 {
					k := hot("k1", w, 0.4)
					k.SubtaskIndex, k.HotKey.Subtasks, k.HotKey.Saturated = nil, []int{0, 1, 2, 3}, ptr(busy >= 800)
					fs = append(fs, k)
				}
				for _, c := range tr.Observe(fs) {
					if c.Incident.Cause == skew.CauseDataSkew {
						last = c
						if p := c.Incident.Plan; p != nil && p.Overdue && overdue == 0 {
							overdue = w
						}
					}
				}
			}
			in := last.Incident
			if in.Plan == nil || *in.Plan != tt.want {
				t.Fatalf("plan effect %+v, want %+v", in.Plan, tt.want)
			}
			if tt.closed != (last.Kind == Closed) || tt.closed && (in.Resolution != "resolved by plan v2" || in.End != 6*win) {
				t.Fatalf("last change %s: %+v", last.Kind, in)
			}
			if overdue != tt.overdue {
				t.Errorf("overdue from window %d, want %d", overdue, tt.overdue)
			}
			// Not relieved, the salted key is on a saturated subtask: an
			// incident of its own.
			if !tt.closed && tr.OpenCount() != 2 {
				t.Fatalf("open incidents %+v, want the overdue one and the salted key's", tr.Open())
			}
		})
	}
}

// TestPlanReceiptBatched: the windows observed in one batch (a consumer
// catching up after a restart) give the receipt that window by window
// gives.
func TestPlanReceiptBatched(t *testing.T) {
	run := func(batched bool) Incident {
		cfg := DefaultConfig()
		cfg.Hysteresis = Hysteresis{ResolveAfter: 30 * time.Second}
		var v uint64
		cfg.Plan = func(job, task string) (uint64, int64, bool) { return v, 4 * win, v > 0 }
		tr, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var all []skew.Finding
		var last Incident
		for w := int64(0); w < 12; w++ {
			busy := 900 + 10*float64(w)
			fs := []skew.Finding{statsOf("j", w, busy), skewed("j", w, busy, 2)}
			if batched {
				all = append(all, fs...)
				continue
			}
			if w == 4 {
				v = 2
			}
			for _, c := range tr.Observe(fs) {
				last = c.Incident
			}
		}
		if batched {
			v = 2 // the batch's plans are made before its incidents are observed
			for _, c := range tr.Observe(all) {
				last = c.Incident
			}
		}
		return last
	}
	one, each := run(true), run(false)
	if each.Plan == nil || each.Plan.BusyBefore == 0 {
		t.Fatalf("window by window: no receipt: %+v", each)
	}
	if one.Plan == nil || *one.Plan != *each.Plan {
		t.Fatalf("batched plan effect %+v, window by window %+v", one.Plan, each.Plan)
	}
}
