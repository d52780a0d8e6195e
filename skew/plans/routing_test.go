package plans

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/keygroup"
)

// TestPlansRouteWhereTheyClaim runs the real engine on skewed key samples
// and checks every plan the Manager publishes against Flink's routing:
// each salted key lands on the subtask (and key group) the plan claims,
// each hot key on its stated subtask, and the salted keys of one hot key
// on distinct subtasks.
func TestPlansRouteWhereTheyClaim(t *testing.T) {
	tests := []struct{ p, maxP int }{{3, 0}, {8, 0}, {16, 128}, {100, 256}, {480, 720}}
	hot := []struct {
		key   string
		share float64
	}{{"hot", 0.3}, {"用户42", 0.15}, {"🔥u|1593004200000", 0.1}, {"", 0.08}}
	const windowMs, perWindow = 10000, 4000
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.p)+"/"+strconv.Itoa(tt.maxP), func(t *testing.T) {
			// All four keys are to be hot at every parallelism: at 3, the
			// default threshold (half the fair share, 1/6) leaves only the
			// first, so the fair-share multiple is lowered to 0.2 (T = 6.7 %).
			e, err := skew.New(skew.Config{WindowMs: windowMs, HotKeyFairShare: 0.2})
			if err != nil {
				t.Fatal(err)
			}
			// The engine proposes plans only where it diagnoses data_skew:
			// the subtask of the hottest key is busy, the others are not.
			router, err := keygroup.NewRouter(tt.p, tt.maxP)
			if err != nil {
				t.Fatal(err)
			}
			hotSub := router.Subtask(hot[0].key)
			m := newManager(t, Config{})
			var changes []Change
			var fs []skew.Finding
			for w := range 4 {
				base := int64(1_700_000_000_000) + int64(w)*windowMs
				for i := range perWindow {
					key := "cold-" + strconv.Itoa(i%500)
					// The hot keys take their shares of the samples.
					x, acc := float64(i)/perWindow, 0.0
					for _, h := range hot {
						if x >= acc && x < acc+h.share {
							key = h.key
						}
						acc += h.share
					}
					e.AddSample(&skew.KeySample{TS: base + int64(i), JobID: "j", TaskName: "agg", Key: key,
						Weight: 1, SampleRate: 1, Parallelism: int32(tt.p), MaxParallelism: int32(tt.maxP), Subtask: -1})
				}
				for s := range tt.p {
					busy := 300.0
					if s == hotSub {
						busy = 990
					}
					e.AddMetric(&skew.Metric{TS: base + windowMs/2, Name: skew.BusyTimeMsPerSecond, JobID: "j", TaskName: "agg",
						Subtask: int32(s), Value: busy})
				}
				fs = e.Advance(base+windowMs, fs[:0])
				for i := range fs {
					changes = append(changes, m.Observe(&fs[i])...)
				}
				changes = append(changes, m.Advance(time.UnixMilli(base+windowMs))...)
			}
			if len(changes) == 0 {
				t.Fatal("the engine's findings made no plan")
			}
			checked := 0
			var desc []string
			for _, c := range changes {
				if c.Plan == nil {
					t.Fatalf("unexpected retirement %+v", c)
				}
				p := c.Plan
				r, err := keygroup.NewRouter(p.Parallelism, p.MaxParallelism)
				if err != nil {
					t.Fatal(err)
				}
				if p.Parallelism != tt.p || tt.maxP != 0 && p.MaxParallelism != tt.maxP {
					t.Fatalf("plan for %d/%d, want %d/%d", p.Parallelism, p.MaxParallelism, tt.p, tt.maxP)
				}
				desc = append(desc, describePlan(p))
				for _, k := range p.HotKeys {
					if got := r.Subtask(k.Key); got != k.Subtask {
						t.Errorf("key %q: plan says subtask %d, Flink routes it to %d", k.Key, k.Subtask, got)
					}
					subs := map[int]bool{}
					for _, s := range k.Salted {
						kg, st := r.Route(keygroup.StringHash(s.Key))
						if st != s.Subtask || kg != s.KeyGroup {
							t.Errorf("salted key %q: plan says key group %d on subtask %d, Flink routes it to %d on %d",
								s.Key, s.KeyGroup, s.Subtask, kg, st)
						}
						if subs[st] {
							t.Errorf("key %q: two salted keys on subtask %d", k.Key, st)
						}
						subs[st] = true
						checked++
					}
					if len(subs) != k.Buckets || k.Buckets < 2 {
						t.Errorf("key %q: %d buckets, %d distinct subtasks", k.Key, k.Buckets, len(subs))
					}
				}
			}
			if checked < 4 {
				t.Fatalf("only %d salted keys checked", checked)
			}
			t.Logf("%d salted keys checked in %s", checked, strings.Join(desc, "; "))
		})
	}
}
