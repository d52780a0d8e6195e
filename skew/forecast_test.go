package skew

import (
	"math"
	"strings"
	"testing"
)

// TestFitTrend: of a line and an exponential through the checkpoints,
// the one that fits them better forecasts.
func TestFitTrend(t *testing.T) {
	xs := []float64{0, 30000, 60000, 90000}
	tests := []struct {
		name string
		ys   []float64
		exp  bool
		at   float64 // the trend 30 s on from the last checkpoint
	}{
		{"steady growth", []float64{10000, 15000, 20000, 25000}, false, 30000},
		{"growth that grows", []float64{2000, 4000, 8000, 16000}, true, 32000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, ok := fitTrend(xs, tt.ys)
			if got := tr.at(tt.ys[3], 30000); !ok || tr.exp != tt.exp || math.Abs(got-tt.at) > 1 {
				t.Errorf("fitTrend = %+v (%v): exponential %v and %.0f ms 30 s on, want %v and %.0f", tr, ok, tr.exp, got, tt.exp, tt.at)
			}
		})
	}
}

func TestTheilSen(t *testing.T) {
	tests := []struct {
		name        string
		xs, ys      []float64
		slope, icpt float64
		ok          bool
	}{
		{"a line", []float64{0, 1, 2, 3}, []float64{1, 3, 5, 7}, 2, 1, true},
		{"one stray point moves nothing", []float64{0, 1, 2, 3}, []float64{1, 3, 50, 7}, 2, 1, true},
		{"flat", []float64{0, 10, 20}, []float64{4, 4, 4}, 0, 4, true},
		{"one x", []float64{5, 5}, []float64{1, 2}, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, i, ok := theilSen(tt.xs, tt.ys)
			if ok != tt.ok || ok && (math.Abs(s-tt.slope) > 1e-9 || math.Abs(i-tt.icpt) > 1e-9) {
				t.Errorf("theilSen = %v, %v, %v; want %v, %v, %v", s, i, ok, tt.slope, tt.icpt, tt.ok)
			}
		})
	}
}

// TestCkptFailure checks the schedule the forecast walks: the next
// checkpoint an interval after the last trigger or when the last one
// ends, each as long as the line says, the first at the timeout failing
// the timeout after its trigger.
func TestCkptFailure(t *testing.T) {
	tests := []struct {
		name                                  string
		level, slope, timeout, interval, want float64
	}{
		// 40 s, +0.5 s per s: the next trigger comes when it ends, at
		// 40 s; that one takes 60 s and fails at 100 s.
		{"longer than the interval", 40000, 0.5, 60000, 30000, 100000},
		// 10 s, +1/3 s per s: triggers at 30 s (20 s), 60 s (30 s),
		// 90 s (40 s), 130 s (53.3 s), 183.3 s (71.1 s): fails at 243.3 s.
		{"from short checkpoints", 10000, 1.0 / 3, 60000, 30000, 183333.33 + 60000},
		// Far away: where the line reaches the timeout, plus the timeout.
		{"beyond the steps", 1000, 1e-9, 60000, 30000, 59000/1e-9 + 60000},
		// Timing out, and a trend that does not fall: the next one,
		// triggered when the last failed at 60 s, fails at 120 s.
		{"timing out", 60000, 0, 60000, 30000, 120000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ckptFailure(0, tt.level, ckptTrend{slope: tt.slope}, tt.timeout, tt.interval)
			if !ok || math.Abs(got-tt.want) > 1 && math.Abs(got-tt.want)/tt.want > 0.02 {
				t.Errorf("ckptFailure = %.0f, want %.0f", got, tt.want)
			}
		})
	}
}

// ckptRun is the job-scoped readings of a job whose checkpoints took
// durations (ms; 60000 or more: it timed out at 60 s), triggered every
// 30 s or when the last one ended, read every 10 s; failAt adds a failure
// that is no timeout at that time. counter: the readings carry
// numberOfCompletedCheckpoints.
func ckptRun(durations []float64, counter bool, failAt int64) []*jobWindow {
	var end []int64
	next := int64(0)
	for _, d := range durations {
		d = min(d, 60000)
		end = append(end, next+int64(d))
		next = max(next+30000, next+int64(d))
	}
	var out []*jobWindow
	lastFailed := 0
	for ts := int64(10000); ts < end[len(end)-1]+10000; ts += 10000 {
		jw := &jobWindow{failTS: ts, ckTS: ts}
		done, n := 0, 0 // completed and failed so far
		for i := range durations {
			switch {
			case end[i] > ts:
			case durations[i] >= 60000:
				n++
			default:
				jw.ckLast, jw.lastCkptMs, jw.hasLastCkptTime = durations[i], durations[i], true
				done++
			}
		}
		if failAt > 0 && failAt <= ts {
			n++
		}
		if n > lastFailed {
			jw.failed, jw.hasFailed = float64(n-lastFailed), true
		}
		lastFailed = n
		if counter {
			jw.completed, jw.hasCompleted = float64(done), true
		}
		out = append(out, jw)
	}
	return out
}

func TestCkptHistory(t *testing.T) {
	rising := []float64{1000, 2000, 4000, 8000, 16000, 30000}
	with := func(ds []float64, more ...float64) []float64 { return append(append([]float64(nil), ds...), more...) }
	tests := []struct {
		name         string
		durations    []float64
		counter      bool
		failAt       int64
		after        int64 // forecast this long after the last reading
		ok, now      bool
		minIn, maxIn int64
		measured     bool
	}{
		// Doubling: the next one, at 180 s, takes the timeout and fails
		// at 240 s.
		{"rising", rising, true, 0, 10000, true, false, 45000, 55000, true},
		{"rising, without the counter", rising, false, 0, 10000, true, false, 45000, 55000, true},
		// +5 s per 30 s, too long for the interval to show (a gap shows
		// it only when the checkpoint before took under half of it):
		// by the configured 60 s, the next ones at 210 s (40 s), 270 s
		// (51 s), 330 s (61 s), which fails at 390 s.
		{"rising steadily", []float64{5000, 10000, 15000, 20000, 25000, 30000}, true, 0, 10000, true, false, 190000, 210000, false},
		// Too slow for the interval to show: each gap is the last
		// checkpoint's duration.
		{"steep", []float64{1000, 4000, 12000, 28000, 50000}, true, 0, 10000, true, false, 0, 90000, false},
		{"too few", rising[:3], true, 0, 10000, false, false, 0, 0, false},
		{"flat", []float64{5000, 5100, 5000, 5100, 5000}, true, 0, 10000, false, false, 0, 0, true},
		{"recovering", with(rising, 9000), true, 0, 10000, false, false, 0, 0, true},
		{"timing out", with(rising, 40000, 60000), true, 0, 10000, true, true, 0, 0, true},
		// A failure sooner than a timeout after the last checkpoint is
		// some other failure: no point, and no gap measured across it.
		{"other failure", rising, true, 125000, 10000, true, false, 75000, 85000, false},
		{"stale", rising, true, 0, 2*(60000+30000) + 1, false, false, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h ckptHistory
			jws := ckptRun(tt.durations, tt.counter, tt.failAt)
			for _, jw := range jws {
				h.observe(jw, 60000, 10000, 0, false)
			}
			f := h.forecast(jws[len(jws)-1].ckTS+tt.after, 60000, 60000)
			if f.ok != tt.ok || f.now != tt.now || f.ok && !f.now && (f.inMs < tt.minIn || f.inMs > tt.maxIn) {
				t.Errorf("forecast %+v, want ok %v, now %v, in %d to %d ms; points %+v", f, tt.ok, tt.now, tt.minIn, tt.maxIn, h.points)
			}
			// Readings every 10 s date the triggers to within 10 s.
			if f.measured != tt.measured || tt.measured && (f.intervalMs < 25000 || f.intervalMs > 35000) {
				t.Errorf("interval %d ms (measured %v), want about 30000 measured %v; gaps %v", f.intervalMs, f.measured, tt.measured, h.gaps)
			}
		})
	}
}

// TestForecastAllocs: a forecast is made per job and window, for every
// job of a fleet: it allocates nothing.
func TestForecastAllocs(t *testing.T) {
	var h ckptHistory
	for _, jw := range ckptRun([]float64{1000, 2000, 4000, 8000, 16000, 30000}, true, 0) {
		h.observe(jw, 60000, 10000, 500, true)
	}
	var f ckptForecast
	if n := testing.AllocsPerRun(100, func() { f = h.forecast(200000, 60000, 60000) }); n != 0 || !f.ok {
		t.Errorf("%v allocs per forecast (%+v)", n, f)
	}
}

// TestCkptHistoryCounts: a counter that rose by two between readings
// halves the gap, and the first reading only sets the baseline.
func TestCkptHistoryCounts(t *testing.T) {
	var h ckptHistory
	for _, w := range [][3]float64{{60000, 1000, 2}, {120000, 1000, 4}, {180000, 1200, 6}, {240000, 1100, 8}} {
		jw := &jobWindow{ckTS: int64(w[0]), ckLast: w[1], hasLastCkptTime: true, completed: w[2], hasCompleted: true}
		h.observe(jw, 60000, 10000, 0, false)
	}
	if len(h.points) != 3 || len(h.gaps) != 2 || h.gaps[0] != 29900 || h.gaps[1] != 30050 {
		t.Fatalf("points %+v, gaps %v; want 3 points and gaps of 29.9 and 30.05 s", h.points, h.gaps)
	}
}

// TestCheckpointForecast runs the engine over a job whose sink is
// saturated while its checkpoints slow down until they time out:
// checkpoint_risk comes from the forecast before the first timeout, names
// the subtask holding the barrier and says when; a recovering or flat
// trend, or one with no subtask behind it, raises none.
func TestCheckpointForecast(t *testing.T) {
	// The simulator's slowing sink (pipeline/simulate, Slowdown).
	creep := []float64{300, 700, 500, 2800, 6700, 11000, 18700, 27400, 40600, 60000, 60000}
	tests := []struct {
		name      string
		durations []float64 // as ckptRun's
		saturated bool
		counter   bool
		want      bool // a forecast finding, before the first timeout if there is one
		stopAfter int  // no forecast finding once the checkpoint of this index has been seen; 0: not checked
	}{
		{"creep", creep, true, true, true, 0},
		{"creep without the counter", creep, true, false, true, 0},
		{"creep, nothing saturated", creep, false, true, false, 0},
		{"flat at 40% of the timeout", []float64{24000, 24500, 23800, 24200, 24100, 23900, 24300, 24000}, true, true, false, 0},
		{"recovers", []float64{300, 700, 500, 2800, 6700, 11000, 18700, 27400, 40600, 52000, 20000, 8000, 1000, 900}, true, true, true, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newJob(t, Config{CheckpointTimeoutMs: 60000, CheckpointIntervalMs: 10000})
			jws := ckptRun(tt.durations, tt.counter, 0)
			firstOut := int64(-1)
			next, shown := int64(0), -1 // the checkpoints' schedule, and the last one a reading showed
			var end []int64
			for _, d := range tt.durations {
				end = append(end, next+int64(min(d, 60000)))
				if d >= 60000 && firstOut < 0 {
					firstOut = next + 60000
				}
				next = max(next+30000, next+int64(min(d, 60000)))
			}
			forecasts, late, failed := 0, 0, 0.0
			for w, jw := range jws {
				busy := 300.0
				if tt.saturated {
					busy = 990
				}
				j.metrics(w, "source", balanced(2, 100, 0, 100))
				j.metrics(w, "sink", balanced(3, busy, 0, 100))
				ts := t0 + int64(w)*10000 + 6000
				for i, e := range end {
					if e <= jw.ckTS && tt.durations[i] < 60000 {
						shown = i
					}
				}
				for i := range 3 {
					delay := 1e6 * float64(i+1)
					if i == 1 && jw.hasLastCkptTime {
						delay = jw.ckLast * 0.9 * 1e6 // the barrier waits at subtask 1
					}
					m := Metric{TS: ts, JobID: j.id, JobName: j.name, TaskName: "sink", Subtask: int32(i), Name: CheckpointStartDelayNanos, Value: delay}
					j.e.AddMetric(&m)
				}
				var job []Metric
				if jw.hasLastCkptTime {
					job = append(job, Metric{Name: LastCheckpointDuration, Value: jw.ckLast}, Metric{Name: LastCheckpointSize, Value: 4e6})
				}
				if tt.counter {
					job = append(job, Metric{Name: NumberOfCompletedCheckpoints, Value: jw.completed})
				}
				failed += jw.failed
				job = append(job, Metric{Name: NumberOfFailedCheckpoints, Value: failed})
				for _, m := range job {
					m.TS, m.JobID, m.JobName, m.Subtask = ts, j.id, j.name, -1
					if v := j.e.AddMetric(&m); v != Accepted {
						t.Fatalf("job metric: %v", v)
					}
				}
				n := len(j.out)
				j.close(w)
				for _, f := range j.out[n:] {
					if f.Cause != CauseCheckpointRisk || f.Evidence.ForecastTimeoutInMs == nil || *f.Evidence.ForecastIntervals > 3 {
						continue
					}
					ev := f.Evidence
					if forecasts == 0 {
						if firstOut >= 0 && f.WindowEnd > t0+firstOut {
							t.Errorf("first forecast in the window ending %d s, after the first timeout at %d s", (f.WindowEnd-t0)/1000, firstOut/1000)
						}
						if f.TaskName != "sink" || f.SubtaskIndex == nil || *f.SubtaskIndex != 1 ||
							!strings.Contains(f.Summary, `are forecast to reach the 1.0 min checkpoint timeout in about `) ||
							!strings.Contains(f.Summary, `subtask 1 of "sink" holds up the barrier (start delay `) ||
							!strings.Contains(f.Summary, "the checkpoint size holds at 4.0 MB") ||
							ev.ForecastPoints != ckptFitPoints || ev.CheckpointTrendMsPerInterval <= 0 || ev.BarrierTrendMsPerInterval <= 0 ||
							!ev.CheckpointIntervalMeasured || ev.CheckpointIntervalMs < 25000 || ev.CheckpointIntervalMs > 35000 {
							t.Errorf("first forecast finding: %s", dump([]Finding{f}))
						}
					}
					if forecasts == 0 && testing.Verbose() {
						t.Log(f.Summary)
					}
					forecasts++
					if tt.stopAfter > 0 && shown >= tt.stopAfter {
						late++
					}
				}
			}
			timingOut := 0
			for _, f := range j.kinds(KindSaturation, CauseCheckpointRisk) {
				if strings.Contains(f.Summary, "time out at the 1.0 min checkpoint timeout, and by their trend the next one will too, ") {
					timingOut++
				}
			}
			if (firstOut >= 0 && tt.saturated) != (timingOut > 0) {
				t.Errorf("%d findings say checkpoints time out, want some: %v", timingOut, firstOut >= 0 && tt.saturated)
			}
			if tt.want != (forecasts > 0) {
				t.Errorf("%d forecast findings, want some: %v; %s", forecasts, tt.want, dump(j.kinds(KindSaturation, CauseCheckpointRisk)))
			}
			if late > 0 {
				t.Errorf("%d forecast findings after the trend turned", late)
			}
		})
	}
}

// TestRestoreCkptTrims: a saved history longer than the engine keeps (a
// version that kept more) restores as its newest part.
func TestRestoreCkptTrims(t *testing.T) {
	cs := &CheckpointState{}
	for i := range 6 {
		cs.Points = append(cs.Points, CheckpointPoint{Trigger: int64(i) * 30000, DurationMs: float64(i+1) * 1000})
	}
	for i := range 20 {
		cs.TriggerGapsMs = append(cs.TriggerGapsMs, float64(30000+i))
	}
	h, err := restoreCkpt(cs)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.points) != ckptFitPoints || h.points[0].trig != 60000 || len(h.gaps) != ckptMaxGaps || h.gaps[0] != 30004 {
		t.Errorf("restored %d points from %d, %d gaps from %.0f: want the newest %d and %d", len(h.points), h.points[0].trig, len(h.gaps), h.gaps[0], ckptFitPoints, ckptMaxGaps)
	}
	// And it saves as it restored.
	if got := h.state(); len(got.Points) != ckptFitPoints || len(got.TriggerGapsMs) != ckptMaxGaps {
		t.Errorf("saved %+v", got)
	}
}
