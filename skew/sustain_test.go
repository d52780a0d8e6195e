package skew

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

// TestSustainFromCounterRun: with the busy counter, a saturation is
// sustained once an unbroken run of saturated readings lasts
// Config.SustainMs, counted from the reading it began at, mid-window or
// not; without such a run, consecutive saturated windows that cover
// SustainMs do; once sustained, a dip inside a saturated window does not
// end it.
func TestSustainFromCounterRun(t *testing.T) {
	const secs = 60 // six 10 s windows, a reading every second
	tests := []struct {
		name  string
		onset int   // second from which subtask 0 is busy 1000 ms/s
		dips  []int // seconds whose interval (from the second before) is at 300 ms/s again
		// late is a second whose reading arrives after the next two.
		late       int
		wantFirst  int   // window (0-5) of the first saturation finding
		wantFor    int64 // its saturated_for_ms
		wantWindow []int // every window with a finding
	}{
		{name: "onset mid-window counts from its start", onset: 14, wantFirst: 2, wantFor: 15000, wantWindow: []int{2, 3, 4, 5}},
		{name: "a dip ends the run: the windows decide", onset: 14, dips: []int{26}, wantFirst: 3, wantFor: 13000, wantWindow: []int{3, 4, 5}},
		{name: "held through a dip once sustained", onset: 0, dips: []int{26}, wantFirst: 1, wantFor: 19000, wantWindow: []int{1, 2, 3, 4, 5}},
		{name: "a reading out of order ends the run", onset: 14, late: 16, wantFirst: 3, wantFor: 21000, wantWindow: []int{3, 4, 5}},
		{name: "onset late in the window: the windows are as quick", onset: 17, wantFirst: 3, wantFor: 22000, wantWindow: []int{3, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rate := func(sec int) float64 {
				if sec > tt.onset && !slices.Contains(tt.dips, sec) {
					return 1000
				}
				return 300
			}
			type reading struct {
				sec int
				v   [4]float64
			}
			var readings []reading
			var c [4]float64
			for sec := range secs {
				for sub := range c {
					if sec > 0 {
						r := 300.0
						if sub == 0 {
							r = rate(sec)
						}
						c[sub] += r
					}
				}
				readings = append(readings, reading{sec, c})
			}
			if tt.late > 0 {
				r := readings[tt.late]
				readings = slices.Delete(readings, tt.late, tt.late+1)
				readings = slices.Insert(readings, tt.late+2, r)
			}
			// run feeds the readings a window at a time; with restore, each
			// window goes to a new engine restored from the last one's
			// saved state, which must change nothing.
			run := func(restore bool) []Finding {
				e, err := New(Config{SustainMs: 15000})
				if err != nil {
					t.Fatal(err)
				}
				var out []Finding
				for w := range secs / 10 {
					for _, r := range readings {
						if r.sec/10 != w {
							continue
						}
						for sub, v := range r.v {
							m := Metric{TS: t0 + int64(r.sec)*1000, JobID: "j", TaskName: "t", Subtask: int32(sub),
								Name: AccumulateBusyTimeMs, Value: v}
							e.AddMetric(&m)
						}
					}
					out = e.Advance(t0+int64(w+1)*10000, out)
					if restore {
						b, err := json.Marshal(e.Snapshot(nil))
						if err != nil {
							t.Fatal(err)
						}
						var states []JobState
						if err := json.Unmarshal(b, &states); err != nil {
							t.Fatal(err)
						}
						if e, err = New(Config{SustainMs: 15000}); err != nil {
							t.Fatal(err)
						}
						if err := restoreAll(e, states); err != nil {
							t.Fatal(err)
						}
					}
				}
				return out
			}
			out := run(false)
			a, _ := json.Marshal(out)
			b, _ := json.Marshal(run(true))
			if string(a) != string(b) {
				t.Errorf("restored after every window:\n%s\nuninterrupted:\n%s", b, a)
			}
			var windows []int
			var first *Finding
			for i := range out {
				f := &out[i]
				if f.SubtaskIndex == nil || *f.SubtaskIndex != 0 || f.Evidence == nil {
					continue
				}
				if first == nil {
					first = f
				}
				windows = append(windows, int((f.WindowStart-t0)/10000))
			}
			if first == nil {
				t.Fatalf("no saturation finding on subtask 0: %s", dump(out))
			}
			if w := int((first.WindowStart - t0) / 10000); w != tt.wantFirst || first.Evidence.SaturatedForMs != tt.wantFor {
				t.Errorf("first finding in window %d, saturated for %d ms; want window %d, %d ms",
					w, first.Evidence.SaturatedForMs, tt.wantFirst, tt.wantFor)
			}
			if !slices.Equal(windows, tt.wantWindow) {
				t.Errorf("findings in windows %v, want %v", windows, tt.wantWindow)
			}
		})
	}
}

// restoreAll restores states into e and fails on any refused one, as the
// tests of a state the engine saved expect.
func restoreAll(e *Engine, states []JobState) error {
	refused, err := e.Restore(states)
	for _, r := range refused {
		err = errors.Join(err, r.Err)
	}
	return err
}
