package app

import (
	"fmt"
	"testing"
	"time"

	"github.com/skewlens/skewlens/pipeline/simulate"
)

// TestSimulationEventTimeNeverPassesNow: `run --simulate` plays each
// job's reporting intervals one per Interval/Speed of wall-clock time (as
// simfeed does); at every speed, the newest event time of what has been
// written by then is never after the wall clock, and the simulation is
// recent (it ends within one interval before it starts playing).
func TestSimulationEventTimeNeverPassesNow(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 7, 0, time.UTC)
	names := []string{}
	for _, s := range simulate.Scenarios() {
		names = append(names, string(s))
	}
	for _, speed := range []float64{0.5, 1, 10, 100} {
		t.Run(fmt.Sprint("speed ", speed), func(t *testing.T) {
			jobs := simJobs(names, now)
			if len(jobs) != len(names) {
				t.Fatalf("%d jobs for %d scenarios", len(jobs), len(names))
			}
			for _, jc := range jobs {
				iv := jc.Interval.Milliseconds()
				n := int64(jc.Duration / jc.Interval)
				for k := range n {
					newest := time.UnixMilli(jc.Start + (k+1)*iv)
					wall := now.Add(time.Duration(float64(k) * float64(jc.Interval) / speed))
					if newest.After(wall) {
						t.Fatalf("%s: interval %d written at %s holds event time up to %s, %s in the future",
							jc.JobName, k, wall.Format(time.TimeOnly), newest.Format(time.TimeOnly), newest.Sub(wall))
					}
				}
				end := time.UnixMilli(jc.Start + n*iv)
				if now.Sub(end) > jc.Interval {
					t.Errorf("%s: the simulation ends %s before it starts playing: want at most one interval", jc.JobName, now.Sub(end))
				}
			}
		})
	}
}
