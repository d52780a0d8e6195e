package skew

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// The parallelisms and sampled records per window the hot-key rules are
// checked at (issue 20: parallelisms 2 to 500, 20 to 5000 sampled records).
var (
	hotKeyParallelisms = []int{2, 8, 32, 100, 500}
	hotKeyRecordCounts = []int{20, 100, 1000, 5000}
)

// sampling is how a simulated sampler reports its sampled records: one
// line per record (plain), or aggregated into lines of 1 to 50 records of
// one key (the line's weight).
type sampling int

const (
	plain sampling = iota
	aggregated
)

func (s sampling) String() string { return [...]string{"plain", "aggregated"}[s] }

// sampleLines draws n sampled records, each independently by pick, and
// returns them as lines: one per record (plain), or per key in chunks of
// 1 to 50 records, in a shuffled order (aggregated). Every draw comes from
// rng, so the lines are deterministic.
func sampleLines(rng *rand.Rand, mode sampling, n int, pick func() string) []KeySample {
	if mode == plain {
		out := make([]KeySample, n)
		for i := range out {
			out[i] = KeySample{Key: pick(), Weight: 1}
		}
		return out
	}
	counts := map[string]int{}
	for range n {
		counts[pick()]++
	}
	var out []KeySample
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range counts {
			if !yield(k) {
				return
			}
		}
	}) {
		for c := counts[k]; c > 0; {
			w := min(c, 1+rng.IntN(50))
			out = append(out, KeySample{Key: k, Weight: float64(w)})
			c -= w
		}
	}
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// taskRuleTrial is what simulateTaskRule saw for one parallelism, record
// count and sampling.
type taskRuleTrial struct {
	th float64
	// warmWindows had a key at 0.8 T with MinSamples pooled, warmHot of
	// them reported it.
	warmWindows, warmHot int
	// trials is the number of times the key "hot" started; found counts
	// those in which it was named within 3 windows, late the windows
	// after it stopped in which it was named anyway.
	trials, found, late int
	// others counts hot_key findings of any other key (the background).
	others int
}

// simulateTaskRule runs rounds of 6 windows of n sampled records each
// through a real Engine for a task of parallelism p (Flink's routing
// places the keys): a key "warm" at 0.8 T in every window; a key "hot"
// at share hot in the first 3 windows of each round and absent in the
// other 3; the rest spread evenly over 4096 background keys, more than
// the sketch's 1024 counters, so its evictions and lower bounds take
// part. Keys are drawn independently from a PRNG seeded with seed, p and
// n: the result is deterministic.
func simulateTaskRule(t *testing.T, p, n int, mode sampling, hot float64, rounds int, seed uint64) taskRuleTrial {
	t.Helper()
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	tr := taskRuleTrial{th: e.hotKeyThreshold(p)}
	background := make([]string, 4096)
	for i := range background {
		background[i] = "bg-" + strconv.Itoa(i)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(p)<<32|uint64(n)))
	pWarm := 0.8 * tr.th
	var out []Finding
	named := false
	for w := range rounds * 6 {
		ts := t0 + int64(w)*10000
		on := w%6 < 3
		pHot := 0.0
		if on {
			pHot = hot
		}
		pick := func() string {
			switch u := rng.Float64(); {
			case u < pHot:
				return "hot"
			case u < pHot+pWarm:
				return "warm"
			}
			return background[rng.IntN(len(background))]
		}
		for _, s := range sampleLines(rng, mode, n, pick) {
			s.TS, s.JobID, s.TaskName, s.SampleRate, s.Parallelism, s.Subtask = ts+1, "j", "agg", 0.01, int32(p), -1
			if v := e.AddSample(&s); v != Accepted {
				t.Fatalf("sample rejected: %v", v)
			}
		}
		out = e.Advance(ts+10000, out[:0])
		tr.warmWindows++
		for _, f := range out {
			if f.Kind != KindHotKey {
				continue
			}
			switch f.Key {
			case "hot":
				if on {
					named = true
				} else {
					tr.late++
				}
			case "warm":
				tr.warmHot++
			default:
				tr.others++
			}
		}
		if w%6 == 2 {
			tr.trials++
			if named {
				tr.found++
			}
			named = false
		}
	}
	return tr
}

// TestTaskRuleFalsePositives is the task rule's promise, through the
// engine, at every parallelism and record count, plain and aggregated: a
// key at 0.8 T is reported in at most 0.5 % of windows, a background key
// never, and a key that stopped is never named once it is gone.
func TestTaskRuleFalsePositives(t *testing.T) {
	rounds := 300
	if testing.Short() {
		rounds = 60
	}
	for _, mode := range []sampling{plain, aggregated} {
		for _, p := range hotKeyParallelisms {
			for _, n := range hotKeyRecordCounts {
				t.Run(fmt.Sprintf("%v/p%d/n%d", mode, p, n), func(t *testing.T) {
					tr := simulateTaskRule(t, p, n, mode, min(0.5, 4*0.5/float64(p)), rounds, 10)
					fp := float64(tr.warmHot) / float64(tr.warmWindows)
					t.Logf("P=%d n=%d %v T=%.4f: key at 0.8T reported in %d of %d windows (%.3f%%); key at 2/P found within 3 windows in %d of %d rounds",
						p, n, mode, tr.th, tr.warmHot, tr.warmWindows, 100*fp, tr.found, tr.trials)
					if tr.warmHot > worstRate(tr.warmWindows, 0.005) {
						t.Errorf("key at 0.8T reported in %d of %d windows: more than a rate of 0.5%% gives in 999 runs of 1000 (%d)",
							tr.warmHot, tr.warmWindows, worstRate(tr.warmWindows, 0.005))
					}
					if tr.others != 0 {
						t.Errorf("%d background keys reported hot", tr.others)
					}
					if tr.late != 0 {
						t.Errorf("a key that stopped was named in %d windows after it stopped", tr.late)
					}
				})
			}
		}
	}
}

// worstRate is the most windows out of n with a rate at most rate that a
// simulation may see before it rejects "the rate is at most rate" at
// 99.9 %: the least k with P(Binomial(n, rate) > k) below 0.001. A
// simulated count above it is a failure that noise explains in fewer than
// one run in a thousand.
func worstRate(n int, rate float64) int {
	b := distuv.Binomial{N: float64(n), P: rate}
	k := 0
	for 1-b.CDF(float64(k)) >= 0.001 {
		k++
	}
	return k
}

// subtaskTrial is what simulateSubtaskRule saw for one grid point.
type subtaskTrial struct {
	trials, named, skewFound int
	// others counts keys other than the hot key that were named.
	others int
}

// simulateSubtaskRule runs incidents of 3 windows through a fresh Engine
// each: a task of parallelism p whose subtask 0 is saturated (busy 1000
// ms/s, peers 300) with ratio times its peers' input rate, and gets
// nSub sampled records per window (peers nSub/ratio). Of subtask 0's
// records the key "hot" holds keyShare, the rest spread over 2000
// background keys of that subtask; peers' records are spread over 2000
// keys each. Samples carry their subtask. Peers beyond the first 3 report
// metrics but no samples, as a job that samples some subtasks only, and
// to keep the simulation fast: the subtask rule reads subtask 0's own
// sketch and the metrics. An incident counts as named when a hot_key
// finding names "hot" in one of its 3 windows (data_skew needs 2 with
// --sustain 2).
func simulateSubtaskRule(t *testing.T, p, nSub int, mode sampling, ratio, keyShare float64, trials int, seed uint64) subtaskTrial {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, uint64(p)<<32|uint64(nSub)))
	var tr subtaskTrial
	bg := func(sub, j int) string { return "bg-" + strconv.Itoa(sub) + "-" + strconv.Itoa(j) }
	for range trials {
		j := newJob(t, Config{})
		tr.trials++
		named := false
		for w := range 3 {
			// Peers at 300 ms/s: at P = 2 a median busy of 700 or more
			// with balanced input would be under_provisioned instead.
			s := balanced(p, 300, 0, 1000)
			s[0] = sub{busy: 1000, rate: 1000 * ratio, host: "10.0.0.7"}
			j.metrics(w, "agg", s)
			ts := t0 + int64(w)*10000 + 1000
			for i := range min(p, 4) {
				n := int(math.Round(float64(nSub) / ratio))
				share := 0.0
				if i == 0 {
					n, share = nSub, keyShare
				}
				pick := func() string {
					if rng.Float64() < share {
						return "hot"
					}
					return bg(i, rng.IntN(2000))
				}
				for _, ks := range sampleLines(rng, mode, n, pick) {
					ks.TS, ks.JobID, ks.TaskName, ks.SampleRate, ks.Parallelism, ks.Subtask = ts, j.id, "agg", 0.05, int32(p), int32(i)
					if v := j.e.AddSample(&ks); v != Accepted {
						t.Fatalf("sample rejected: %v", v)
					}
				}
			}
			j.out = j.out[:0]
			j.close(w)
			for _, f := range j.out {
				switch {
				case f.Kind == KindHotKey && f.Key == "hot":
					named = true
				case f.Kind == KindHotKey:
					tr.others++
				case f.Kind == KindSaturation && (f.Cause == CauseDataSkew || f.Cause == CauseRotatingHotKey) && *f.SubtaskIndex == 0:
					tr.skewFound++
				}
			}
		}
		if named {
			tr.named++
		}
	}
	return tr
}

// TestSubtaskRuleRecall is the recall property of issue 20: on a subtask
// saturated with skewed input, the key that saturates it is named within
// the incident's first 3 windows in at least 99 % of incidents, at
// parallelism 2 to 500 and 20 to 5000 sampled records per window on the
// subtask, plain and aggregated: whether the key carries the subtask's
// whole excess (ratio 1.5, 2, 3) or only a quarter of its records (the
// least issue 20 asks to be named, at ratio 1.5). No background key is
// ever named.
func TestSubtaskRuleRecall(t *testing.T) {
	trials := 100
	if testing.Short() {
		trials = 20
	}
	// minRecords is the fewest records per window on the subtask a
	// shape is promised at: issue 20 asks for a key with a quarter of
	// the subtask's records to be named from 50 a window.
	shapes := []struct {
		name            string
		ratio, keyShare float64
		minRecords      int
	}{
		{"whole excess at 1.5x", 1.5, 1 - 1/1.5, 20},
		{"whole excess at 2x", 2, 0.5, 20},
		{"whole excess at 3x", 3, 1 - 1/3.0, 20},
		{"a quarter at 1.5x", 1.5, 0.25, 50},
	}
	for _, mode := range []sampling{plain, aggregated} {
		for _, p := range hotKeyParallelisms {
			for _, n := range hotKeyRecordCounts {
				for _, sh := range shapes {
					n := max(n, sh.minRecords)
					// Small incidents are cheap: more of them, fewer at
					// high parallelism (P metrics a window).
					trials := trials * max(1, min(1000/n, 2000/p))
					t.Run(fmt.Sprintf("%v/p%d/n%d/%s", mode, p, n, sh.name), func(t *testing.T) {
						tr := simulateSubtaskRule(t, p, n, mode, sh.ratio, sh.keyShare, trials, 20)
						if tr.skewFound == 0 {
							t.Fatalf("no data_skew finding on subtask 0 in %d incidents: not the situation under test", tr.trials)
						}
						t.Logf("P=%d n=%d %v %s: named in %d of %d incidents", p, n, mode, sh.name, tr.named, tr.trials)
						if missed := tr.trials - tr.named; missed > worstRate(tr.trials, 0.01) {
							t.Errorf("the saturating key was named in %d of %d incidents: more misses than a rate of 1%% gives in 999 runs of 1000 (%d)",
								tr.named, tr.trials, worstRate(tr.trials, 0.01))
						}
						if tr.others != 0 {
							t.Errorf("%d background keys named", tr.others)
						}
					})
				}
			}
		}
	}
}

// TestHotKeyNoiseOfTheIssue replays the noise issue 10 describes: a
// background key with 3.8 % of a parallelism-8 task's records, 300
// samples per window. The old rule (5 % of one window's samples) called
// it hot in about one window in six; the rule must never.
func TestHotKeyNoiseOfTheIssue(t *testing.T) {
	const p, n, share, windows = 8, 300, 0.038, 600
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 8))
	var out []Finding
	crossed, reported := 0, 0
	for w := range windows {
		ts := t0 + int64(w)*10000
		count := 0
		s := KeySample{TS: ts + 1, JobID: "j", TaskName: "agg", Weight: 1, SampleRate: 0.01, Parallelism: p, Subtask: -1}
		for i := range n {
			s.Key = "bg-" + strconv.Itoa(i)
			if rng.Float64() < share {
				s.Key = "warm"
				count++
			}
			e.AddSample(&s)
		}
		if float64(count)/n >= 0.05 {
			crossed++
		}
		out = e.Advance(ts+10000, out[:0])
		for _, f := range out {
			if f.Kind == KindHotKey {
				reported++
			}
		}
	}
	t.Logf("key at 3.8%%, P=8, 300 samples: over 5%% in %d of %d windows, reported in %d", crossed, windows, reported)
	if crossed < windows/10 {
		t.Fatalf("the simulated noise crossed 5%% in only %d of %d windows: not the issue's situation", crossed, windows)
	}
	if reported != 0 {
		t.Errorf("reported hot in %d of %d windows", reported, windows)
	}
}

// TestHotKeyLabels: hot keys of a task that is not saturated are still
// reported, labelled saturated=false; they are actionable (may alert)
// only when the key alone pushes its subtask above the skew ratio, which
// a key spread over all subtasks (a task not keyed by it) does not; and
// no salting plan is proposed for them.
func TestHotKeyLabels(t *testing.T) {
	const p = 8
	key := "u42"
	hs := hotSubtask(key, p)
	tests := []struct {
		name          string
		busy          float64
		spread        bool // samples round-robin over the subtasks (salted) instead of routed by key
		wantSaturated bool
		wantSkews     bool
	}{
		{"keyed task, not saturated", 300, false, false, true},
		{"salted key, not saturated", 300, true, false, false},
		{"keyed task, saturated", 995, false, true, true},
		{"salted key, on a saturated subtask", 995, true, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newJob(t, Config{})
			for w := range 3 {
				s := balanced(p, 300, 0, 500)
				s[hs] = sub{busy: tt.busy, rate: 1400, host: "10.0.0.7"}
				j.metrics(w, "agg", s)
				ts := t0 + int64(w)*10000 + 1000
				for i := range 2000 {
					k := "user" + strconv.Itoa(i)
					if i%5 < 2 {
						k = key // 40 %
					}
					sm := KeySample{TS: ts, JobID: j.id, TaskName: "agg", Key: k, Weight: 1, SampleRate: 0.01, Parallelism: p, Subtask: -1}
					if tt.spread {
						sm.Subtask = int32(i % p)
					}
					if v := j.e.AddSample(&sm); v != Accepted {
						t.Fatalf("sample rejected: %v", v)
					}
				}
				j.close(w)
			}
			hot := j.kinds(KindHotKey, "")
			if len(hot) != 3 {
				t.Fatalf("%d hot_key findings, want one per window: %s", len(hot), dump(j.out))
			}
			for _, f := range hot {
				h := f.HotKey
				if h.Key != key || h.Saturated == nil || *h.Saturated != tt.wantSaturated || h.SkewsSubtask != tt.wantSkews {
					t.Fatalf("hot key %+v (saturated %v), want %s saturated=%v skews_subtask=%v", *h, h.Saturated, key, tt.wantSaturated, tt.wantSkews)
				}
				if h.Actionable() != (tt.wantSaturated || tt.wantSkews) {
					t.Errorf("actionable %v", h.Actionable())
				}
				// A salted key lands on every subtask and names none.
				if tt.spread && (len(h.Subtasks) != p || f.SubtaskIndex != nil) ||
					!tt.spread && (h.Subtasks != nil || f.SubtaskIndex == nil || *f.SubtaskIndex != hs) {
					t.Errorf("subtasks %v, subtask index %v", h.Subtasks, f.SubtaskIndex)
				}
				if !(h.ShareLowerBound > h.Threshold && h.ShareLowerBound < h.Share) {
					t.Errorf("share %v, lower bound %v, threshold %v", h.Share, h.ShareLowerBound, h.Threshold)
				}
			}
			if plans := j.kinds(KindSaltingPlan, ""); !tt.wantSaturated && len(plans) > 0 {
				t.Errorf("salting plan for a task that is not saturated: %s", dump(plans))
			}
			if plans := j.kinds(KindSaltingPlan, ""); tt.wantSaturated && !tt.spread && len(plans) == 0 {
				t.Error("no salting plan for the saturated, skewed task")
			}
		})
	}
}

// binomialTail is P(X >= k) for X ~ Binomial(n, p).
func binomialTail(k, n int, p float64) float64 {
	if k <= 0 {
		return 1
	}
	return 1 - distuv.Binomial{N: float64(n), P: p}.CDF(float64(k-1))
}

// criticalCount is the fewest records of n the task rule calls hot against
// threshold th at confidence conf: the least x whose exact lower bound is
// above th (n+1 when none is).
func criticalCount(n int, th, conf float64) int {
	lo, hi := 0, n+1
	for lo < hi {
		m := (lo + hi) / 2
		if shareLower(float64(m), float64(n), conf) > th {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// TestTaskRuleExactRates computes, rather than samples, the task rule's
// false-positive rate for a key at 0.8 T, from the binomial distribution,
// at every pooled record count from MinSamples to 15000 and every
// threshold from the floor to 0.5 (in 5 % steps): whatever the
// parallelism, the floor or the pooling, it stays under 0.5 %. (Pooled
// windows are independent draws, so their sum is binomial; the sketch's
// guaranteed count only lowers a count.) It also computes the recall
// docs/detection.md quotes: a key at twice the fair share, at 100 sampled records per
// window, named on the 300 of 3 windows.
func TestTaskRuleExactRates(t *testing.T) {
	cfg := DefaultConfig()
	conf := cfg.HotKeyConfidence
	worst, worstAt := 0.0, ""
	for _, n := range []int{cfg.MinSamples, 150, 200, 300, 500, 1000, 3000, 5000, 15000} {
		for th := cfg.HotKeyShare; th <= 0.5; th *= 1.05 {
			fp := binomialTail(criticalCount(n, th, conf), n, 0.8*th)
			if fp > worst {
				worst, worstAt = fp, fmt.Sprintf("n=%d T=%.4f", n, th)
			}
		}
	}
	t.Logf("false positives at 0.8T: at most %.2e (%s)", worst, worstAt)
	if worst > 0.005 {
		t.Errorf("false positives at 0.8T reach %.2e at %s, more than 0.5%%", worst, worstAt)
	}
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		p       int
		atLeast float64
	}{{2, 0.99}, {4, 0.99}, {8, 0.99}, {16, 0.99}, {32, 0.98}, {64, 0.5}, {100, 0.1}} {
		th := e.hotKeyThreshold(tt.p)
		r := binomialTail(criticalCount(300, th, conf), 300, min(1, 2/float64(tt.p)))
		t.Logf("P=%d: a key at 2/P is named on 300 records in %.4f of incidents", tt.p, r)
		if r < tt.atLeast {
			t.Errorf("P=%d: recall %.4f, want at least %v", tt.p, r, tt.atLeast)
		}
	}
}

// TestShareBounds checks the exact bounds against their definition: for a
// whole count x of n, the lower bound L has P(Binomial(n, L) >= x) = 1 -
// conf, and the upper bound U has P(Binomial(n, U) <= x) = 1 - conf; and
// the margin against the Wilson interval's width.
func TestShareBounds(t *testing.T) {
	const conf = 0.99
	if got := shareLower(0, 10, conf); got != 0 {
		t.Errorf("no records: lower %v", got)
	}
	if got := shareUpper(10, 10, conf); got != 1 {
		t.Errorf("all records: upper %v", got)
	}
	if got := shareLower(5, 0, conf); got != 0 {
		t.Errorf("no samples: lower %v", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		n := 1 + rng.IntN(3000)
		x := 1 + rng.IntN(n)
		lo := shareLower(float64(x), float64(n), conf)
		if d := binomialTail(x, n, lo) - (1 - conf); math.Abs(d) > 1e-6 {
			t.Fatalf("lower(%d, %d) = %v: P(X >= x) is %v off 1-conf", x, n, lo, d)
		}
		if x < n {
			up := shareUpper(float64(x), float64(n), conf)
			if d := (1 - binomialTail(x+1, n, up)) - (1 - conf); math.Abs(d) > 1e-6 {
				t.Fatalf("upper(%d, %d) = %v: P(X <= x) is %v off 1-conf", x, n, up, d)
			}
			if !(lo < float64(x)/float64(n) && float64(x)/float64(n) < up) {
				t.Fatalf("x=%d n=%d: %v < share < %v does not hold", x, n, lo, up)
			}
		}
	}
	// 18 % of 600 records: ± 3.1 points at 95 %.
	if m := shareMargin(108, 600); math.Abs(m-0.0307) > 0.0005 {
		t.Errorf("margin of 108/600 = %.4f, want 0.0307", m)
	}
}

// TestHotKeyThreshold checks the two terms of T(P).
func TestHotKeyThreshold(t *testing.T) {
	e, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		p    int
		want float64
	}{
		{"fair-share term", 8, 0.5 / 8},
		{"floor at high parallelism", 500, 0.01},
		{"unknown parallelism: the floor", 0, 0.01},
	} {
		if got := e.hotKeyThreshold(tt.p); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s: T(%d) = %v, want %v", tt.name, tt.p, got, tt.want)
		}
	}
}

// TestShareText pins how a share is written with its margin: whole
// points from 1 % up, one decimal under it, never a zero margin, and the
// old one-decimal form without a margin.
func TestShareText(t *testing.T) {
	tests := []struct {
		name          string
		share, margin float64
		want          string
	}{
		{"with margin", 0.18, 0.031, "18% ± 3"},
		{"both rounded to whole points", 0.184, 0.026, "18% ± 3"},
		{"no margin: as before", 0.31, 0, "31.0%"},
		{"no margin, tiny", 0.004, 0, "0.4%"},
		{"tiny share and margin", 0.004, 0.002, "0.4% ± 0.2"},
		{"large share, tiny margin", 0.3, 0.004, "30% ± 0.4"},
		{"margin under 0.05 points", 0.002, 0.0001, "0.2% ± <0.1"},
		{"all of the input", 1, 0.01, "100% ± 1"},
		{"negative margin is none", 0.25, -0.01, "25.0%"},
		{"NaN margin is none", 0.25, math.NaN(), "25.0%"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ShareText(tt.share, tt.margin); got != tt.want {
				t.Errorf("ShareText(%v, %v) = %q, want %q", tt.share, tt.margin, got, tt.want)
			}
		})
	}
}

// TestPoolBounded: a task whose 500 subtasks are all saturated, each with
// its own heavy keys, keeps the evidence of at most maxPoolKeys keys and
// pooled windows of at most HotKeyPoolWindows, and its saved state
// restores.
func TestPoolBounded(t *testing.T) {
	const p = 500
	j := newJob(t, Config{})
	for w := range 8 {
		s := balanced(p, 950, 0, 1000)
		for i := 0; i < p; i += 2 {
			s[i].rate = 1600 // half the subtasks above the fair share
		}
		j.metrics(w, "agg", s)
		ts := t0 + int64(w)*10000 + 1000
		for i := range p {
			for k := range 12 {
				ks := KeySample{TS: ts, JobID: j.id, TaskName: "agg", Key: "k-" + strconv.Itoa(i) + "-" + strconv.Itoa(k%4+w),
					Weight: 1, SampleRate: 0.05, Parallelism: p, Subtask: int32(i)}
				if v := j.e.AddSample(&ks); v != Accepted {
					t.Fatalf("sample rejected: %v", v)
				}
			}
		}
		j.close(w)
		task := j.e.jobs[j.id].tasks[0]
		if n := len(task.pool); n > maxPoolKeys || n == 0 {
			t.Fatalf("window %d: %d keys in the pool, want 1 to %d", w, n, maxPoolKeys)
		}
		for _, pk := range task.pool {
			if len(pk.wins) > j.e.cfg.HotKeyPoolWindows {
				t.Fatalf("window %d: key %q has %d windows", w, pk.key, len(pk.wins))
			}
		}
		t.Logf("window %d: %d keys, %d pooled windows", w, len(task.pool), len(task.poolTotals))
		if n := len(task.poolTotals); n > j.e.cfg.HotKeyPoolWindows {
			t.Fatalf("window %d: %d pooled windows", w, n)
		}
	}
	e2, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := restoreAll(e2, j.e.Snapshot(nil)); err != nil {
		t.Fatalf("the saved state does not restore: %v", err)
	}
}
