package forecasteval

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// risk is a checkpoint_risk finding of job in the window starting at ws
// whose forecast says a timeout in inMs (nil: no forecast) at a 30 s
// interval.
func risk(job string, ws int64, inMs *int64) skew.Finding {
	ev := &skew.Evidence{ForecastTimeoutInMs: inMs}
	if inMs != nil {
		ev.CheckpointIntervalMs = 30000
	}
	return skew.Finding{Kind: skew.KindSaturation, JobID: job, WindowStart: ws, WindowEnd: ws + 10000,
		Saturation: &skew.Saturation{Cause: skew.CauseCheckpointRisk, Evidence: ev}}
}

func ms(v int64) *int64 { return &v }

func TestScore(t *testing.T) {
	opt := Options{WindowMs: 10000, Intervals: 3}
	// Windows from 100 s to 160 s are scored (the horizon after the last
	// one ends at the run's end, 200 s). Timeouts at 160 s and 175 s make
	// the windows ending 130 s to 170 s positive.
	timedOut := Run{Name: "a", JobID: "a", From: 100000, To: 200000, IntervalMs: 10000,
		Checkpoints: []Checkpoint{{End: 100000}, {End: 130000}, {End: 160000, TimedOut: true}, {End: 175000, TimedOut: true}},
		Findings: []skew.Finding{
			risk("a", 110000, ms(100000)), // beyond 3 intervals: not a forecast of one
			risk("a", 120000, ms(60000)), risk("a", 130000, ms(30000)), risk("a", 140000, ms(20000)), risk("a", 150000, ms(0)),
			risk("a", 160000, nil),   // raised by the fraction alone
			risk("b", 160000, ms(0)), // another job's
		}}
	quiet := Run{Name: "b", JobID: "b", From: 100000, To: 200000, IntervalMs: 10000,
		Checkpoints: []Checkpoint{{End: 130000}, {End: 160000}},
		Findings:    []skew.Finding{risk("b", 100000, ms(10000))}}
	got, err := Score([]Run{timedOut, quiet}, opt)
	if err != nil {
		t.Fatal(err)
	}
	want := Result{Windows: 14, TP: 4, FP: 1, FN: 1, TN: 8, Precision: 0.8, Recall: 0.8, BeforeTP: 4,
		Runs: 2, TimedOut: 1, Warned: 1, Leads: []time.Duration{30 * time.Second}, LeadMedian: 30 * time.Second, LeadP10: 30 * time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Score = %+v\nwant    %+v", got, want)
	}
	if s := got.String(); !strings.Contains(s, "precision 0.80, recall 0.80") || !strings.Contains(s, "1 of 1 runs that timed out warned, lead median 30s") {
		t.Errorf("String() = %q", s)
	}
	// The window before the first timeout not forecast: no warning, a
	// lead of 0.
	late := timedOut
	late.Findings = late.Findings[:4]
	got, err = Score([]Run{late}, opt)
	if err != nil || got.Warned != 0 || !reflect.DeepEqual(got.Leads, []time.Duration{0}) || got.BeforeFN != 1 {
		t.Errorf("Score of a late warning = %+v, %v", got, err)
	}
	for _, bad := range []Options{{}, {WindowMs: 10000}, {WindowMs: -1, Intervals: 1}} {
		if _, err := Score(nil, bad); err == nil {
			t.Errorf("Score accepted %+v", bad)
		}
	}
	if _, err := Score([]Run{{Name: "x", From: 5, To: 5, IntervalMs: 1}}, opt); err == nil {
		t.Error("Score accepted an empty span")
	}
	if _, err := Score([]Run{{Name: "x", From: 5, To: 50}}, opt); err == nil {
		t.Error("Score accepted a run without its interval")
	}
}
