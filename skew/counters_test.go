package skew

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// reading of one subtask in a test: the busy gauge and, when set, the
// accumulateBusyTimeMs counter, at second sec of window w.
type busyReading struct {
	w, sec  int
	gauge   float64 // < 0: not reported
	counter float64 // < 0: not reported
}

// TestBusyFromCounters: per subtask and window, busy time comes from the
// counter's difference when the subtask reports the counter, else from
// the gauge; a difference that cannot be computed leaves the window
// unobserved rather than falling back to the gauge.
func TestBusyFromCounters(t *testing.T) {
	const none = -1.0
	type want struct {
		busy   float64
		source string // "": no subtask_stats row (not observed)
	}
	tests := []struct {
		name     string
		readings []busyReading
		want     []want // per window 0..2
	}{
		{"counter lags nothing, gauge does", []busyReading{
			{0, 5, 1000, 0}, {1, 5, 1000, 9500}, {2, 5, 900, 11500},
		}, []want{{}, {950, "counter"}, {200, "counter"}}},
		{"first window: first to last", []busyReading{
			{0, 1, 1000, 1000}, {0, 6, 1000, 1500}, {1, 6, 1000, 4000},
		}, []want{{100, "counter"}, {250, "counter"}, {}}},
		{"clamped to 1000", []busyReading{
			{0, 5, 500, 0}, {1, 5, 500, 20000},
		}, []want{{}, {1000, "counter"}, {}}},
		{"restart between windows starts over", []busyReading{
			{0, 5, 100, 50000}, {1, 2, 100, 100}, {1, 8, 100, 1900}, {2, 5, 100, 4900},
		}, []want{{}, {300, "counter"}, {428.6, "counter"}}},
		{"restart inside the window", []busyReading{
			{0, 5, 100, 50000}, {1, 2, 100, 60000}, {1, 8, 100, 200}, {2, 5, 100, 1200},
		}, []want{{}, {}, {142.9, "counter"}}},
		{"restart with a single reading", []busyReading{
			{0, 5, 100, 50000}, {1, 5, 100, 100}, {2, 5, 100, 2100},
		}, []want{{}, {}, {200, "counter"}}},
		{"gauges only", []busyReading{
			{0, 5, 300, none}, {1, 5, 400, none}, {2, 5, 500, none},
		}, []want{{300, "gauge"}, {400, "gauge"}, {500, "gauge"}}},
		{"counter missing in a window: the gauge", []busyReading{
			{0, 5, 300, 0}, {1, 5, 400, none}, {2, 5, 500, 7000},
		}, []want{{}, {400, "gauge"}, {350, "counter"}}},
		{"gauge start-up reading of 1000", []busyReading{
			{0, 5, 1000, none}, {1, 5, 1000, none}, {2, 5, 250, none},
		}, []want{{}, {1000, "gauge"}, {250, "gauge"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := New(Config{EmitStats: true})
			for _, r := range tt.readings {
				m := Metric{TS: t0 + int64(r.w)*10000 + int64(r.sec)*1000, JobID: "j", TaskName: "t"}
				if r.gauge >= 0 {
					m.Name, m.Value = BusyTimeMsPerSecond, r.gauge
					e.AddMetric(&m)
				}
				if r.counter >= 0 {
					m.Name, m.Value = AccumulateBusyTimeMs, r.counter
					e.AddMetric(&m)
				}
			}
			got := make([]want, len(tt.want))
			for _, f := range e.Flush(nil) {
				if f.Stats != nil {
					got[(f.WindowStart-t0)/10000] = want{f.Stats.BusyMsPerSecond, f.Stats.BusySource}
				}
			}
			for w := range tt.want {
				if got[w] != tt.want[w] {
					t.Errorf("window %d: %+v, want %+v", w, got[w], tt.want[w])
				}
			}
		})
	}
}

// TestUnknownBusyNeitherCountsNorResets: a window whose counter
// difference cannot be computed keeps the sustain count where it was.
func TestUnknownBusyNeitherCountsNorResets(t *testing.T) {
	e, _ := New(Config{})
	counter := []float64{0, 9900, 19800, 0 /* restarted, single reading */, 9900}
	var out []Finding
	for w, c := range counter {
		m := Metric{TS: t0 + int64(w)*10000 + 5000, JobID: "j", TaskName: "t", Name: AccumulateBusyTimeMs, Value: c}
		e.AddMetric(&m)
		m.Name, m.Value = BusyTimeMsPerSecond, 100 // a lagging gauge, ignored
		e.AddMetric(&m)
		out = e.Advance(t0+int64(w+1)*10000, out)
	}
	// Windows 1 and 2 saturate (990 ms/s), 3 is unknown, 4 saturates.
	var sustained []int
	for _, f := range out {
		sustained = append(sustained, int((f.WindowStart-t0)/10000)*10+f.Evidence.SustainedWindows)
	}
	if len(sustained) != 2 || sustained[0] != 22 || sustained[1] != 43 {
		t.Fatalf("findings (window*10+sustained) %v, want [22 43]: %s", sustained, dump(out))
	}
}

// TestCounterBeatsLaggingGauge: a hot key with a time bucket moves from
// one subtask to another. The counters show the move at once: the new
// owner is saturated, the old one is not, and the finding is a rotating
// hot key as soon as the new owner's saturation is sustained. The 60 s
// gauges (BusyFromGauges) still show the old owner saturated for a
// minute, misread as a slow subtask, and the new one late.
func TestCounterBeatsLaggingGauge(t *testing.T) {
	const p = 8
	keyA, keyB := "u42|1593004200000", "u42|1593004260000"
	a, b := hotSubtask(keyA, p), hotSubtask(keyB, p)
	if a == b {
		t.Fatal("both buckets route to one subtask; pick others")
	}
	const move = 4 // the window in which the key moves
	run := func(gauges bool) []Finding {
		j := newTJob(t, Config{BusyFromGauges: gauges})
		counter := make([]float64, p)
		for w := range 10 {
			hot, key := a, keyA
			if w >= move {
				hot, key = b, keyB
			}
			for i := range p {
				busy, rate := 250.0, 300.0
				if i == hot {
					busy, rate = 990, 1400
				}
				counter[i] += busy * 10
				// The gauge: the old owner stays saturated for six
				// windows after the move, the new one ramps up.
				gauge := busy
				switch since := w - move; {
				case since < 0:
				case i == a && since < 6:
					gauge = 990
				case i == b:
					gauge = min(990, 250+float64(since)*150)
				}
				j.metric(w, 5, "", "", "agg", i, AccumulateBusyTimeMs, counter[i])
				j.metric(w, 5, "", "", "agg", i, BusyTimeMsPerSecond, gauge)
				j.metric(w, 5, "", "", "agg", i, NumRecordsInPerSecond, rate)
			}
			j.samples(w, "", "", "agg", p, key, 0.4, 1000)
			j.close(w)
		}
		return j.kind(KindSaturation)
	}
	at := func(fs []Finding, w, sub int) *Finding {
		for i := range fs {
			if fs[i].WindowStart == t0+int64(w)*10000 && *fs[i].SubtaskIndex == sub {
				return &fs[i]
			}
		}
		return nil
	}

	counters := run(false)
	for _, f := range counters {
		w := int((f.WindowStart - t0) / 10000)
		if w >= move && *f.SubtaskIndex != b || w < move && *f.SubtaskIndex != a {
			t.Errorf("counters: window %d finding on subtask %d: %s", w, *f.SubtaskIndex, f.Summary)
		}
	}
	if f := at(counters, move+1, b); f == nil || f.Cause != CauseRotatingHotKey {
		t.Fatalf("counters: no rotating_hot_key on subtask %d one window after the move: %s", b, dump(counters))
	}
	// The summary says where the hot spot was before, and since when it is here.
	since := time.UnixMilli(t0 + move*10000).UTC().Format("2006-01-02 15:04:05 UTC")
	wantBefore := fmt.Sprintf("the hot spot was on subtask %d before and moved here in the window starting %s", a, since)
	if f := at(counters, move+1, b); !strings.Contains(f.Summary, wantBefore) {
		t.Errorf("counters: summary lacks %q: %s", wantBefore, f.Summary)
	}

	gauges := run(true)
	if f := at(gauges, move+1, a); f == nil || f.Cause != CauseSlowSubtask {
		t.Errorf("gauges: the old owner is not misread as slow after the move: %s", dump(gauges))
	}
	if f := at(gauges, move+1, b); f != nil {
		t.Errorf("gauges: the new owner is found as early as with counters")
	}
}

// TestGaugeStartupReading: Flink's gauges read 1000 ms/s on every subtask
// right after a deployment. A subtask's (attempt's) first window with
// busy time from the gauge does not count when it reads 1000, so two
// such windows in a row make no under_provisioned finding; a new attempt
// starts over.
func TestGaugeStartupReading(t *testing.T) {
	run := func(busy []float64, attempt func(w int) string) []Finding {
		e, _ := New(Config{})
		var out []Finding
		for w, b := range busy {
			for i := range 4 {
				m := Metric{TS: t0 + int64(w)*10000 + 5000, JobID: "j", TaskName: "agg", Subtask: int32(i),
					Name: BusyTimeMsPerSecond, Value: b, TaskAttemptID: attempt(w) + string(rune('a'+i))}
				e.AddMetric(&m)
				m.Name, m.Value = NumRecordsInPerSecond, 100
				e.AddMetric(&m)
			}
			out = e.Advance(t0+int64(w+1)*10000, out)
		}
		return out
	}
	same := func(int) string { return "x" }
	if out := run([]float64{1000, 1000, 300, 300}, same); len(out) != 0 {
		t.Errorf("start-up reading made findings: %s", dump(out))
	}
	// Truly saturated from the start: found one window later than without
	// the rule.
	if out := run([]float64{1000, 1000, 1000, 1000}, same); len(out) != 2 || out[0].WindowStart != t0+20000 {
		t.Errorf("saturated job: %s", dump(out))
	}
	// A restarted attempt reads 1000 again.
	restart := func(w int) string {
		if w >= 3 {
			return "y"
		}
		return "x"
	}
	if out := run([]float64{300, 300, 300, 1000, 1000, 300}, restart); len(out) != 0 {
		t.Errorf("restart's start-up reading made findings: %s", dump(out))
	}
}
