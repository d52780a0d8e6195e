package replay

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// TestModestHotKeysNamed replays simulated incidents with a modest hot key
// (15-25 % of the records) at parallelism 4-12 and 200-300 key samples per
// 10 s interval, the situation issue 20 measured (before it the key was
// named in 7 of 60 windows at P = 12, 20 %, 300 samples): every window
// with a data_skew or rotating_hot_key finding names the key on the
// finding's subtask, and for a rotating hot key the key of the window's
// own time bucket; no other key is ever named.
func TestModestHotKeysNamed(t *testing.T) {
	tests := []struct {
		scenario simulate.Scenario
		p        int
		share    float64
		samples  int
	}{
		{simulate.HotKey, 4, 0.15, 200},
		{simulate.HotKey, 8, 0.2, 300},
		{simulate.HotKey, 12, 0.2, 300},
		{simulate.HotKey, 12, 0.25, 200},
		{simulate.RotatingHotKey, 4, 0.2, 200},
		{simulate.RotatingHotKey, 8, 0.15, 300},
		{simulate.RotatingHotKey, 12, 0.2, 300},
	}
	for _, tt := range tests {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("%s/p%d/%.0f%%/n%d/seed%d", tt.scenario, tt.p, tt.share*100, tt.samples, seed), func(t *testing.T) {
				g, err := simulate.New(simulate.Config{Scenario: tt.scenario, Seed: seed + 1, Duration: 10 * time.Minute,
					Parallelism: tt.p, HotShare: tt.share, SamplesPerInterval: tt.samples})
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				if _, err := g.WriteTo(&buf); err != nil {
					t.Fatal(err)
				}
				eng, err := skew.New(skew.Config{})
				if err != nil {
					t.Fatal(err)
				}
				stage, err := window.New(window.Config{}, eng)
				if err != nil {
					t.Fatal(err)
				}
				var fs []skew.Finding
				if _, err := Run(context.Background(), []Input{{Name: "sim", R: &buf}}, stage, Options{}, func(f *skew.Finding) error {
					fs = append(fs, *f)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				named := map[string]bool{} // window start and subtask of each hot_key finding of the right key
				skewed := 0
				for _, f := range fs {
					if f.Kind != skew.KindHotKey {
						continue
					}
					want := simulate.HotKeyBase
					if tt.scenario == simulate.RotatingHotKey {
						want += "|" + strconv.FormatInt(f.WindowStart/simulate.BucketMillis*simulate.BucketMillis, 10)
					}
					if f.Key != want {
						t.Fatalf("window %d: key %q named, want only %q", f.WindowStart, f.Key, want)
					}
					named[fmt.Sprint(f.WindowStart, *f.SubtaskIndex)] = true
				}
				for _, f := range fs {
					if f.Saturation == nil || f.Cause != skew.CauseDataSkew && f.Cause != skew.CauseRotatingHotKey {
						continue
					}
					skewed++
					if !named[fmt.Sprint(f.WindowStart, *f.SubtaskIndex)] {
						t.Errorf("window %d: %s on subtask %d without its hot key named", f.WindowStart, f.Cause, *f.SubtaskIndex)
					}
				}
				if skewed < 30 {
					t.Fatalf("%d skew findings in 10 minutes: not the situation under test", skewed)
				}
			})
		}
	}
}
