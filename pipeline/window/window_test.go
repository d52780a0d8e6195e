package window

import (
	"testing"

	"github.com/skewlens/skewlens/skew"
)

func metric(ts int64, busy float64) *skew.Metric {
	return &skew.Metric{TS: ts, JobID: "j", TaskName: "t", Name: skew.BusyTimeMsPerSecond, Value: busy}
}

func TestWatermarkAndLateness(t *testing.T) {
	tests := []struct {
		name              string
		cfg               Config
		ts                []int64 // event times in arrival order
		wantLate          uint64
		wantWM            int64
		wantOpenAfterLast int
	}{
		{"in order", Config{OutOfOrderMs: 1000}, []int64{1000, 5000, 12000}, 0, 11000, 1},
		{"late within bound", Config{OutOfOrderMs: 5000}, []int64{14000, 9000}, 0, 9000, 2},
		{"late beyond bound", Config{OutOfOrderMs: 1000}, []int64{25000, 12000}, 1, 24000, 1},
		{"lateness keeps window open", Config{OutOfOrderMs: 1000, AllowedLatenessMs: 10000}, []int64{25000, 12000}, 0, 14000, 2},
		{"watermark never goes back", Config{OutOfOrderMs: 1000}, []int64{30000, 21000, 20500}, 0, 29000, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng, err := skew.New(skew.Config{WindowMs: 10000})
			if err != nil {
				t.Fatal(err)
			}
			s, err := New(tt.cfg, eng)
			if err != nil {
				t.Fatal(err)
			}
			var late uint64
			for _, ts := range tt.ts {
				if _, v := s.Metric(metric(ts, 100), nil); v == skew.Late {
					late++
				}
			}
			c := s.Counts()
			if late != c.Late {
				t.Errorf("%d Late verdicts returned, %d counted", late, c.Late)
			}
			if c.Late != tt.wantLate || c.Metrics+c.Late != uint64(len(tt.ts)) {
				t.Errorf("counts %+v, want %d late", c, tt.wantLate)
			}
			if s.Watermark() != tt.wantWM {
				t.Errorf("watermark %d, want %d", s.Watermark(), tt.wantWM)
			}
			if got := eng.OpenWindows(); got != tt.wantOpenAfterLast {
				t.Errorf("open windows %d, want %d", got, tt.wantOpenAfterLast)
			}
			s.Flush(nil)
			if eng.OpenWindows() != 0 {
				t.Error("Flush left windows open")
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	if c := (Config{}).withDefaults(); c.Validate() != nil || c != DefaultConfig() || c.OutOfOrderMs != 5000 {
		t.Fatalf("defaults: %+v", c)
	}
	for _, bad := range []Config{{OutOfOrderMs: -1}, {AllowedLatenessMs: -5}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
