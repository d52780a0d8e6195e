package skew

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/skew/keygroup"
)

// TestRoutingAwareSaltsBeatRandomSalts is the point of the planner: naive
// salts key#0..key#n-1 collide on the same subtasks (birthday problem over
// Flink's key groups), while planned salts land on n distinct subtasks.
func TestRoutingAwareSaltsBeatRandomSalts(t *testing.T) {
	e, _ := New(Config{MaxSaltBuckets: 64})
	tests := []struct{ p, maxP int }{{8, 0}, {16, 0}, {32, 0}, {64, 0}, {100, 256}, {480, 720}}
	collided := 0
	for _, tt := range tests {
		r, err := keygroup.NewRouter(tt.p, tt.maxP)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"hot", "u42|1593004200000", "用户42", "🔥hot", ""} {
			share := 0.5
			load := make([]float64, tt.p)
			for i := range load {
				load[i] = (1 - share) / float64(tt.p)
			}
			sub := r.Subtask(key)
			load[sub] += share
			sk := e.saltKey(r, load, key, share, sub)
			n := sk.Buckets
			if n < 2 || n > tt.p {
				t.Fatalf("p=%d %q: %d buckets", tt.p, key, n)
			}
			seen := map[int]bool{}
			for _, s := range sk.Salted {
				if _, st := r.Route(keygroup.StringHash(s.Key)); st != s.Subtask {
					t.Fatalf("p=%d %q: salted key %q routes to %d, plan says %d", tt.p, key, s.Key, st, s.Subtask)
				}
				if seen[s.Subtask] {
					t.Fatalf("p=%d %q: planned salts collide on subtask %d", tt.p, key, s.Subtask)
				}
				seen[s.Subtask] = true
			}
			// The same number of naive salts.
			naive := map[int]bool{}
			for i := range n {
				naive[r.Subtask(key+"#"+strconv.Itoa(i))] = true
			}
			if len(naive) < n {
				collided++
			}
			// Predicted loads after the plan sum to 1 and the max drops.
			if got := sum(load); got < 0.999 || got > 1.001 {
				t.Fatalf("loads sum to %v", got)
			}
			if slices.Max(load) >= share {
				t.Fatalf("p=%d %q: max load %v not below the hot key's share", tt.p, key, slices.Max(load))
			}
		}
	}
	t.Logf("naive salts collided in %d of %d plans; planned salts in none", collided, len(tests)*5)
	// With n buckets over p subtasks the naive salts collide most of the
	// time; require it for most cases so the comparison means something.
	if collided < len(tests)*5/2 {
		t.Fatalf("naive salts collided in only %d of %d cases", collided, len(tests)*5)
	}
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

// TestPlanNamesFlinksSubtaskOfTheKey: once a job applies a plan, a hot
// key's samples come from its salted subtasks. A plan made then still
// names the subtask Flink routes the unsalted key to (the Flink-side
// client checks it), not the subtask its samples last came from.
func TestPlanNamesFlinksSubtaskOfTheKey(t *testing.T) {
	const p, window = 4, int64(10_000)
	r, err := keygroup.NewRouter(p, 128)
	if err != nil {
		t.Fatal(err)
	}
	routed := r.Subtask("hot")
	measured := (routed + 1) % p // where a salted copy of the key was processed
	e, err := New(Config{WindowMs: window})
	if err != nil {
		t.Fatal(err)
	}
	var fs []Finding
	for w := range int64(3) {
		ws := 1_700_000_000_000 + w*window
		for i := range 400 {
			key, sub := "cold"+strconv.Itoa(i%97), -1
			if i%10 < 6 {
				key, sub = "hot", measured
			}
			if sub < 0 {
				sub = r.Subtask(key)
			}
			e.AddSample(&KeySample{TS: ws + int64(i), JobID: "j", TaskName: "t", Key: key, Weight: 1, SampleRate: 1,
				Parallelism: p, MaxParallelism: 128, Subtask: int32(sub)})
		}
		for s := range p {
			busy := 300.0
			if s == measured {
				busy = 990
			}
			e.AddMetric(&Metric{TS: ws + 5000, Name: BusyTimeMsPerSecond, JobID: "j", TaskName: "t", Subtask: int32(s), Value: busy})
		}
		fs = e.Advance(ws+window, fs)
	}
	plans := 0
	for _, f := range fs {
		if f.Kind != KindSaltingPlan {
			continue
		}
		plans++
		if k := f.Plan.Keys[0]; k.Key != "hot" || k.Subtask != routed {
			t.Fatalf("plan key %q on subtask %d, want hot on %d (Flink's routing; samples came from %d)", k.Key, k.Subtask, routed, measured)
		}
	}
	if plans == 0 {
		t.Fatalf("no plan in %d findings", len(fs))
	}
}

// TestPlanDataStreamHint checks the hint every plan carries against the
// rules of docs/salting-plans.md: the salt is chosen before keyBy and kept
// in the record, never drawn per record from a counter or random number
// (a KeySelector runs more than once per record).
func TestPlanDataStreamHint(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       bool
	}{
		{"salt chosen before keyBy", "before keyBy", true},
		{"salted keys as listed", "as listed in the plan", true},
		{"stored in the record", "store it in the record", true},
		{"no per-record counter", "per-record counter", false},
		{"no random salt", "or random", false},
		{"no hand-built salted key", "key + SEP", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Contains(applyDataStream, tc.text); got != tc.want {
				t.Errorf("hint contains %q: %v, want %v\nhint: %s", tc.text, got, tc.want, applyDataStream)
			}
		})
	}
}
