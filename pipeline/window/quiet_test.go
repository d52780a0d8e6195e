package window

import (
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// quietRig is a partitioned stage on a clock the test moves, as the
// runner drives one: it marks deliveries, and on each second of its
// tick calls Advance and AdvanceQuiet.
type quietRig struct {
	t     *testing.T
	clock time.Time
	wms   *Watermarks
	stage *Feeder
	fs    []skew.Finding
	// endedAt is the wall time since the last report at which the job
	// ended (-1 before).
	endedAt time.Duration
	last    time.Time // when the last event was delivered
}

const quietT0 = int64(1593004200000) // a window boundary

func newQuietRig(t *testing.T) *quietRig {
	t.Helper()
	r := &quietRig{t: t, clock: time.Unix(1e9, 0), endedAt: -1}
	var err error
	if r.wms, err = NewWatermarks(WatermarkConfig{}, func() time.Time { return r.clock }); err != nil {
		t.Fatal(err)
	}
	eng, err := skew.New(skew.Config{EmitStats: true}) // 10 s windows, job-end-after 1 min
	if err != nil {
		t.Fatal(err)
	}
	if r.stage, err = NewPartitioned(Config{}, eng, r.wms); err != nil {
		t.Fatal(err)
	}
	return r
}

// report delivers one metric of the job at event time sec (after
// quietT0) on partition 0, and reports whether it was accepted.
func (r *quietRig) report(sec int64) skew.Verdict {
	m := metric(quietT0+sec*1000, 300)
	var v skew.Verdict
	r.fs, v = r.stage.Metric(m, r.fs)
	if v == skew.Accepted {
		r.wms.Observe(Partition{}, m.TS)
	}
	r.wms.Delivered(Partition{})
	r.fs = r.stage.Advance(r.fs)
	r.last = r.clock
	return v
}

// wait moves the clock by d, a second at a time, ticking each second.
func (r *quietRig) wait(d time.Duration) {
	for end := r.clock.Add(d); r.clock.Before(end); {
		r.clock = r.clock.Add(time.Second)
		r.fs = r.stage.Advance(r.fs)
		n := len(r.fs)
		var ended bool
		r.fs, ended = r.stage.AdvanceQuiet(r.fs)
		for _, f := range r.fs[n:] {
			if f.Kind == skew.KindJobEnd {
				if r.endedAt >= 0 || !ended {
					r.t.Fatalf("second job_end, or one not reported: %+v", f)
				}
				if f.JobEnd.Reason != skew.EndStopped || f.JobEnd.LastEventAt != quietT0+95000 {
					r.t.Fatalf("job_end %+v", f.JobEnd)
				}
				r.endedAt = r.clock.Sub(r.last)
			}
		}
	}
}

// TestQuietEndsJob: one job reports every 5 s up to 95 s of event time
// (in step with the clock), then nothing does. Its run ends on wall
// time: in the window [150,160) (the first after 95 s + 1 min), 65 s
// after its last report, within job-end-after plus a window and not
// before, with its last window written first. Time paused (the runner
// writing) does not count, a read failure starts the quiet over, and
// records without an event time do not break it. After a pause, a
// backlog of the job's reports is not late, and the job goes on.
func TestQuietEndsJob(t *testing.T) {
	tests := []struct {
		name  string
		quiet func(r *quietRig)
		want  time.Duration // -1: not ended
	}{
		{"quiet", func(r *quietRig) { r.wait(3 * time.Minute) }, 65 * time.Second},
		{"records without event time", func(r *quietRig) {
			for range 120 {
				r.wms.Delivered(Partition{}) // a skipped record
				r.wait(time.Second)
			}
		}, 65 * time.Second},
		{"paused", func(r *quietRig) {
			r.wait(30 * time.Second)
			r.wms.Pause()
			r.wait(5 * time.Minute)
			r.wms.Resume()
			r.wait(3 * time.Minute)
		}, 365 * time.Second},
		{"a read failure", func(r *quietRig) {
			r.wait(40 * time.Second)
			r.wms.Doubt()
			r.wait(3 * time.Minute)
		}, 105 * time.Second},
		{"an outage: read failures every 10 s", func(r *quietRig) {
			for range 30 {
				r.wait(10 * time.Second)
				r.wms.Doubt()
			}
		}, -1},
		{"a backlog after a pause", func(r *quietRig) {
			r.wait(30 * time.Second)
			r.wms.Pause()
			r.wait(5 * time.Minute)
			r.wms.Resume()
			for sec := int64(100); sec <= 200; sec += 5 {
				if v := r.report(sec); v != skew.Accepted {
					t.Fatalf("report at %d s after the pause: verdict %d", sec, v)
				}
			}
			r.wait(50 * time.Second)
		}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newQuietRig(t)
			for sec := int64(0); sec <= 95; sec += 5 {
				if sec > 0 {
					r.wait(5 * time.Second)
				}
				r.report(sec)
			}
			tt.quiet(r)
			if r.endedAt != tt.want {
				t.Fatalf("ended %s after the last report, want %s", r.endedAt, tt.want)
			}
			if tt.want < 0 {
				return
			}
			if jea := time.Minute; r.endedAt < jea || r.endedAt > jea+10*time.Second+5*time.Minute {
				t.Fatalf("ended %s after the last report", r.endedAt)
			}
			lastWin, end := -1, -1
			for i, f := range r.fs {
				switch {
				case f.Kind == skew.KindJobEnd:
					end = i
					if f.WindowStart != quietT0+150000 {
						t.Errorf("job_end in the window at %d s", (f.WindowStart-quietT0)/1000)
					}
				case f.WindowStart == quietT0+90000:
					lastWin = i
				}
			}
			if lastWin < 0 || lastWin > end {
				t.Errorf("the last window's findings at %d, the job_end at %d", lastWin, end)
			}
			if got := r.stage.Watermark(); got != quietT0+160000 {
				t.Errorf("watermark at %d s, want the end of the job's end window", (got-quietT0)/1000)
			}
		})
	}
}
