package skew

import (
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/skewlens/skewlens/skew/keygroup"
)

const t0 = int64(1593004200000) // a window boundary for 10 s windows

// sub describes one subtask's metrics in every window of a test job.
type sub struct {
	busy, bp, rate float64
	host           string
}

// job builds events for a small job, window by window.
type job struct {
	id, name string
	e        *Engine
	out      []Finding
	// ids: the metrics carry the ids Flink's task scope has, task_id (the
	// vertex, vertexOf) and tm_id (one TaskManager per host).
	ids bool
}

func newJob(t *testing.T, cfg Config) *job {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &job{id: "84dce1ec8aa5a4df2d1758d6e9278693", name: "billing", e: e}
}

func (j *job) metrics(w int, task string, subs []sub) {
	ts := t0 + int64(w)*10000 + 5000
	for i, s := range subs {
		m := Metric{TS: ts, JobID: j.id, JobName: j.name, TaskName: task, Subtask: int32(i),
			Host: s.host, TaskAttemptID: fmt.Sprintf("attempt-%s-%d", task, i)}
		if j.ids {
			m.TaskID, m.TMID = vertexOf(task), s.host+":6122-"+strings.Repeat("a", 6)
		}
		for _, kv := range []struct {
			n MetricName
			v float64
		}{
			{BusyTimeMsPerSecond, s.busy}, {BackPressuredTimeMsPerSecond, s.bp},
			{IdleTimeMsPerSecond, max(0, 1000-s.busy-s.bp)}, {NumRecordsInPerSecond, s.rate},
			{InputQueueLength, min(s.busy/100, 9)},
		} {
			m.Name, m.Value = kv.n, kv.v
			if v := j.e.AddMetric(&m); v != Accepted {
				panic(fmt.Sprintf("metric rejected: %v", v))
			}
		}
	}
}

// samples adds n samples in window w: key k with the given share, routed
// by Flink's routing for parallelism p, the rest spread over many keys.
func (j *job) samples(w int, task string, p int, hot map[string]float64, n int) {
	ts := t0 + int64(w)*10000 + 1000
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range hot {
			if !yield(k) {
				return
			}
		}
	})
	i := 0
	for _, k := range keys {
		c := int(hot[k] * float64(n))
		for range c {
			j.sample(ts, task, p, k)
			i++
		}
	}
	for ; i < n; i++ {
		j.sample(ts, task, p, "user"+strconv.Itoa(i*7919%100000))
	}
}

func (j *job) sample(ts int64, task string, p int, key string) {
	s := KeySample{TS: ts, JobID: j.id, JobName: j.name, TaskName: task, Key: key, Weight: 1, SampleRate: 0.01,
		Parallelism: int32(p), Subtask: -1}
	if v := j.e.AddSample(&s); v != Accepted {
		panic(fmt.Sprintf("sample rejected: %v", v))
	}
}

func (j *job) close(w int) { j.out = j.e.Advance(t0+int64(w+1)*10000, j.out) }

func (j *job) kinds(kind, cause string) []Finding {
	var out []Finding
	for _, f := range j.out {
		if f.Kind == kind && (cause == "" || f.Cause == cause) {
			out = append(out, f)
		}
	}
	return out
}

func balanced(n int, busy, bp, rate float64) []sub {
	s := make([]sub, n)
	for i := range s {
		s[i] = sub{busy: busy, bp: bp, rate: rate, host: "10.0.0." + strconv.Itoa(10+i%2)}
	}
	return s
}

func hotSubtask(key string, p int) int {
	r, _ := keygroup.NewRouter(p, 0)
	return r.Subtask(key)
}

func TestCauses(t *testing.T) {
	const p = 8
	tests := []struct {
		name string
		// build emits window w's events.
		build     func(j *job, w int)
		wantCause string
		wantSub   int // -1 for task-wide
		wantTask  string
	}{
		{
			name: "hot key", wantCause: CauseDataSkew, wantTask: "agg",
			wantSub: hotSubtask("hot", p),
			build: func(j *job, w int) {
				j.metrics(w, "source", balanced(4, 40, 900, 1000))
				s := balanced(p, 250, 0, 300)
				s[hotSubtask("hot", p)] = sub{busy: 995, rate: 1400, host: "10.0.0.7"}
				j.metrics(w, "agg", s)
				j.metrics(w, "sink", balanced(4, 100, 0, 1000))
				j.samples(w, "agg", p, map[string]float64{"hot": 0.4}, 2000)
			},
		},
		{
			name: "rotating hot key", wantCause: CauseRotatingHotKey, wantTask: "agg",
			wantSub: hotSubtask("u42|1593004200000", p),
			build: func(j *job, w int) {
				key := "u42|1593004200000"
				j.metrics(w, "source", balanced(4, 40, 900, 1000))
				s := balanced(p, 250, 0, 300)
				s[hotSubtask(key, p)] = sub{busy: 995, rate: 1400, host: "10.0.0.7"}
				j.metrics(w, "agg", s)
				j.samples(w, "agg", p, map[string]float64{key: 0.4}, 2000)
			},
		},
		{
			name: "slow sink", wantCause: CauseSlowSubtask, wantTask: "sink", wantSub: 2,
			build: func(j *job, w int) {
				j.metrics(w, "source", balanced(4, 40, 900, 100))
				j.metrics(w, "agg", balanced(p, 30, 850, 50))
				s := balanced(4, 20, 0, 100)
				s[2] = sub{busy: 990, rate: 98, host: "10.0.0.169"}
				j.metrics(w, "sink", s)
				j.samples(w, "agg", p, nil, 2000)
			},
		},
		{
			name: "under-provisioned", wantCause: CauseUnderProvisioned, wantTask: "agg", wantSub: -1,
			build: func(j *job, w int) {
				j.metrics(w, "source", balanced(4, 60, 800, 2000))
				j.metrics(w, "agg", balanced(p, 985, 0, 1000))
				j.metrics(w, "sink", balanced(4, 100, 0, 2000))
				j.samples(w, "agg", p, nil, 2000)
			},
		},
		{
			name: "healthy", wantCause: "",
			build: func(j *job, w int) {
				j.metrics(w, "source", balanced(4, 100, 0, 1000))
				j.metrics(w, "agg", balanced(p, 300, 0, 500))
				j.metrics(w, "sink", balanced(4, 200, 0, 1000))
				j.samples(w, "agg", p, nil, 2000)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := newJob(t, Config{})
			for w := range 4 {
				tt.build(j, w)
				j.close(w)
			}
			sat := j.kinds(KindSaturation, "")
			if tt.wantCause == "" {
				if len(sat) > 0 || len(j.kinds(KindHotKey, "")) > 0 {
					t.Fatalf("healthy job got findings: %+v", j.out)
				}
				return
			}
			// Sustain 2: windows 1, 2 and 3 report, window 0 does not.
			if len(sat) != 3 {
				t.Fatalf("got %d saturation findings, want 3: %s", len(sat), dump(j.out))
			}
			for _, f := range sat {
				if f.Cause != tt.wantCause || f.TaskName != tt.wantTask {
					t.Fatalf("got cause %s on %q, want %s on %q: %s", f.Cause, f.TaskName, tt.wantCause, tt.wantTask, dump([]Finding{f}))
				}
				got := -1
				if f.SubtaskIndex != nil {
					got = *f.SubtaskIndex
				}
				if got != tt.wantSub {
					t.Fatalf("subtask %d, want %d", got, tt.wantSub)
				}
				if f.Summary == "" || f.Evidence == nil {
					t.Fatal("finding without summary or evidence")
				}
			}
			switch tt.wantCause {
			case CauseSlowSubtask:
				f := sat[0]
				if f.Host != "10.0.0.169" || f.TaskAttemptID != "attempt-sink-2" {
					t.Errorf("slow subtask host/attempt = %q/%q", f.Host, f.TaskAttemptID)
				}
				if !slices.Contains(f.Evidence.UpstreamBackPressed, "agg") {
					t.Errorf("back-pressured upstream not listed: %v", f.Evidence.UpstreamBackPressed)
				}
			case CauseUnderProvisioned:
				ev := sat[0].Evidence
				// 8 subtasks at 98.5% busy serving 8000 rec/s; at 70% they
				// need ceil(8000/(1015*0.7)) = 12, and 16 divides 128.
				if ev.RecommendedParallelism != 16 || ev.Parallelism != p || ev.MaxParallelism != 128 {
					t.Errorf("recommended %d (p=%d, max=%d), want 16", ev.RecommendedParallelism, ev.Parallelism, ev.MaxParallelism)
				}
			case CauseDataSkew, CauseRotatingHotKey:
				hk := j.kinds(KindHotKey, "")
				if len(hk) != 4 {
					t.Fatalf("got %d hot_key findings, want 4", len(hk))
				}
				if hk[0].Share < 0.39 || hk[0].Share > 0.41 || *hk[0].SubtaskIndex != tt.wantSub {
					t.Errorf("hot key %+v", hk[0].HotKey)
				}
				if want := 0.4 * 2000 / 0.01; math.Abs(hk[0].EstimatedRecords-want) > 1 {
					t.Errorf("estimated records %v, want %v", hk[0].EstimatedRecords, want)
				}
				if plans := j.kinds(KindSaltingPlan, ""); len(plans) == 0 {
					t.Error("no salting plan for a hot key")
				}
			}
		})
	}
}

func dump(fs []Finding) string {
	b, _ := json.MarshalIndent(fs, "", " ")
	return string(b)
}

// TestBackPressuredUpstreamNeverCause: a task that is only back-pressured
// (busy low, back-pressure high) is never reported, however long it lasts.
func TestBackPressuredUpstreamNeverCause(t *testing.T) {
	j := newJob(t, Config{})
	for w := range 10 {
		j.metrics(w, "source", balanced(4, 50, 950, 100))
		j.metrics(w, "sink", balanced(4, 100, 0, 100))
		j.close(w)
	}
	if len(j.out) != 0 {
		t.Fatalf("back-pressure alone produced findings: %s", dump(j.out))
	}
}

func TestLateAndRejected(t *testing.T) {
	j := newJob(t, Config{})
	j.metrics(0, "agg", balanced(2, 100, 0, 10))
	j.close(5)
	m := Metric{TS: t0 + 1, JobID: "j", TaskName: "agg", Name: BusyTimeMsPerSecond, Subtask: 0}
	if v := j.e.AddMetric(&m); v != Late {
		t.Errorf("old metric: %v, want Late", v)
	}
	tests := []struct {
		name string
		m    Metric
	}{
		{"subtask too large", Metric{TS: t0 + 100000, JobID: "j", TaskName: "a", Name: BusyTimeMsPerSecond, Subtask: 40000}},
		{"NaN", Metric{TS: t0 + 100000, JobID: "j", TaskName: "a", Name: BusyTimeMsPerSecond, Value: math.NaN()}},
		{"unknown", Metric{TS: t0 + 100000, JobID: "j", TaskName: "a"}},
	}
	for _, tt := range tests {
		if v := j.e.AddMetric(&tt.m); v != Rejected {
			t.Errorf("%s: %v, want Rejected", tt.name, v)
		}
	}
	bad := []KeySample{
		{TS: t0 + 100000, JobID: "j", TaskName: "a", Key: "k", Weight: 1, SampleRate: 1, Parallelism: 200, MaxParallelism: 128, Subtask: -1},
		{TS: t0 + 100000, JobID: "j", TaskName: "a", Key: "k", Weight: 1, SampleRate: 1, Parallelism: 4, Subtask: 9},
		{TS: t0 + 100000, JobID: "j", TaskName: "a", Key: "k", Weight: 0, SampleRate: 1, Subtask: -1},
	}
	for i, s := range bad {
		if v := j.e.AddSample(&s); v != Rejected {
			t.Errorf("bad sample %d: %v, want Rejected", i, v)
		}
	}
	// Far-future events may open only a bounded number of windows.
	rejected := 0
	for i := range 2 * maxOpenWindows {
		m := Metric{TS: t0 + int64(i+100)*10000, JobID: "j", TaskName: "a", Name: BusyTimeMsPerSecond, Subtask: 0}
		if j.e.AddMetric(&m) == Rejected {
			rejected++
		}
	}
	if rejected != maxOpenWindows || j.e.OpenWindows() != maxOpenWindows {
		t.Errorf("rejected %d, open %d; want %d each", rejected, j.e.OpenWindows(), maxOpenWindows)
	}
}

func TestDeterministic(t *testing.T) {
	run := func() string {
		j := newJob(t, Config{})
		for w := range 5 {
			s := balanced(8, 250, 0, 300)
			s[hotSubtask("hot", 8)] = sub{busy: 995, rate: 1400, host: "h"}
			j.metrics(w, "agg", s)
			j.metrics(w, "sink", balanced(3, 990, 0, 30))
			j.samples(w, "agg", 8, map[string]float64{"hot": 0.3, "warm": 0.1}, 3000)
			j.close(w)
		}
		return dump(j.out)
	}
	if a, b := run(), run(); a != b {
		t.Fatal("same input gave different findings")
	}
}

func TestSkewScore(t *testing.T) {
	tests := []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{5}, 0},
		{[]float64{10, 10, 10, 10}, 0},
		{[]float64{0, 0, 0, 0}, 0},
		{[]float64{30, 10, 10, 10}, 50}, // mean 15, MAD 7.5
		{[]float64{100, 0, 0, 0}, 100},  // capped
		{[]float64{12, 8}, 20},          // mean 10, MAD 2
	}
	for _, tt := range tests {
		if got := SkewScore(tt.in); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("SkewScore(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestScaleToDivisor(t *testing.T) {
	tests := []struct{ p, maxP, want int }{
		{12, 128, 16}, {3, 128, 4}, {16, 128, 16}, {65, 128, 65}, {200, 128, 128}, {7, 720, 8}, {11, 720, 12},
	}
	for _, tt := range tests {
		if got := scaleToDivisor(tt.p, tt.maxP); got != tt.want {
			t.Errorf("scaleToDivisor(%d, %d) = %d, want %d", tt.p, tt.maxP, got, tt.want)
		}
	}
}

func TestTimeBucketed(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"u42|1593004200000", true},
		{"u42|1593004200", true},
		{"1593004200000:u42", true},
		{"u42|1593004201234", false}, // not minute-aligned: an event time, not a bucket
		{"u42|1393004200000", false}, // years away from the window
		{"user1234567890123", false},
		{"u42", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := timeBucketed(tt.key, t0); got != tt.want {
			t.Errorf("timeBucketed(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"defaults", Config{}, true},
		{"negative window", Config{WindowMs: -1}, false},
		{"share below 1/k", Config{TopK: 16, HotKeyShare: 0.01}, false},
		{"busy over 1000", Config{BusyMsPerSecond: 1200}, false},
		{"top-k at MaxTopK", Config{TopK: MaxTopK}, true},
		{"top-k above MaxTopK (memory)", Config{TopK: MaxTopK + 1}, false},
		{"skew ratio 1", Config{SkewRatio: 1}, false},
		{"NaN", Config{TargetUtilization: math.NaN()}, false},
		{"negative checkpoint timeout", Config{CheckpointTimeoutMs: -1}, false},
		{"checkpoint risk fraction over 1", Config{CheckpointRiskFraction: 1.5}, false},
		{"checkpoint risk fraction 1", Config{CheckpointRiskFraction: 1}, true},
	}
	for _, tt := range tests {
		// As New sees it: zero fields are defaults.
		err := tt.cfg.withDefaults().Validate()
		if (err == nil) != tt.ok {
			t.Errorf("%s: err = %v, want ok=%v", tt.name, err, tt.ok)
		}
		_, err = New(tt.cfg)
		if (err == nil) != tt.ok {
			t.Errorf("%s: New: err = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
	d := DefaultConfig()
	if d.WindowMs != 10000 || d.TopK != 1024 || d.SaltSeparator != "#" {
		t.Errorf("defaults: %+v", d)
	}
	if err := d.Validate(); err != nil {
		t.Errorf("DefaultConfig does not validate: %v", err)
	}
	if d.withDefaults() != d || (Config{}).withDefaults() != d {
		t.Error("withDefaults changes the defaults, or misses a field of DefaultConfig")
	}
	// Validate only checks: a zero Config is invalid and stays zero.
	var z Config
	if err := z.Validate(); err == nil || z != (Config{}) {
		t.Errorf("Validate of the zero Config: err %v, config %+v", err, z)
	}
}

func TestSingleSubtaskIsUnderProvisioned(t *testing.T) {
	j := newJob(t, Config{})
	for w := range 3 {
		j.metrics(w, "source", balanced(2, 50, 900, 500))
		j.metrics(w, "agg", []sub{{busy: 990, rate: 1000, host: "h"}})
		j.close(w)
	}
	sat := j.kinds(KindSaturation, "")
	if len(sat) != 2 {
		t.Fatalf("got %d findings, want 2: %s", len(sat), dump(j.out))
	}
	for _, f := range sat {
		if f.Cause != CauseUnderProvisioned || f.SubtaskIndex != nil || f.Evidence.RecommendedParallelism < 2 {
			t.Fatalf("got %s subtask %v recommended %d", f.Cause, f.SubtaskIndex, f.Evidence.RecommendedParallelism)
		}
	}
}

// TestHotKeyAtHighParallelism: at parallelism 200 a key with 3% of the
// records gives its subtask 7× its fair load; it must be reported although
// it is under the 5% share that makes a key hot in small jobs.
func TestHotKeyAtHighParallelism(t *testing.T) {
	const p = 200
	key := "merchant-7"
	hs := hotSubtask(key, p)
	j := newJob(t, Config{})
	for w := range 3 {
		s := balanced(p, 300, 0, 100)
		s[hs] = sub{busy: 990, rate: 700, host: "10.0.0.9"}
		j.metrics(w, "agg", s)
		j.samples(w, "agg", p, map[string]float64{key: 0.03}, 20000)
		j.close(w)
	}
	hot := j.kinds(KindHotKey, "")
	if len(hot) != 3 || hot[0].Key != key || *hot[0].SubtaskIndex != hs {
		t.Fatalf("hot keys: %s", dump(hot))
	}
	sat := j.kinds(KindSaturation, CauseDataSkew)
	if len(sat) != 2 || len(sat[0].Evidence.HotKeys) != 1 || sat[0].Evidence.HotKeys[0].Key != key {
		t.Fatalf("saturation: %s", dump(j.kinds(KindSaturation, "")))
	}
	// No ordinary key is reported: each has under 0.1% of the records.
	for _, f := range hot {
		if f.Key != key {
			t.Errorf("ordinary key %q reported hot", f.Key)
		}
	}
}

func TestSubtaskStatsRows(t *testing.T) {
	j := newJob(t, Config{EmitStats: true})
	s := balanced(4, 100, 0, 100)
	s[1] = sub{busy: 900, bp: 50, rate: 300, host: "10.0.0.5"}
	j.metrics(0, "agg", s)
	j.metrics(0, "source", balanced(2, 10, 700, 300))
	j.close(0)
	rows := j.kinds(KindSubtaskStats, "")
	if len(rows) != 6 {
		t.Fatalf("%d rows, want 6 (4 + 2 subtasks)", len(rows))
	}
	r := rows[1] // "agg" sorts first; subtask 1
	if r.TaskName != "agg" || *r.SubtaskIndex != 1 {
		t.Fatalf("row order: %s", dump(rows[:2]))
	}
	st := r.Stats
	if st.Host != "10.0.0.5" || st.BusyMsPerSecond != 900 || st.BackPressuredMsPerSecond != 50 || !st.Saturated ||
		st.RecordsInPerSecond != 300 || st.InputShare != 0.5 || st.SkewScore != 50 {
		t.Errorf("stats %+v", st)
	}
	if rows[0].Stats.Saturated {
		t.Error("subtask 0 marked saturated")
	}
	// Without EmitStats there are none.
	j2 := newJob(t, Config{})
	j2.metrics(0, "agg", s)
	j2.close(0)
	if len(j2.kinds(KindSubtaskStats, "")) != 0 {
		t.Error("stats rows without EmitStats")
	}
}

// TestCountersOnlyAndPoolUsageOnly: rates derived from cumulative
// numRecordsIn counters (no per-second meters), and saturation from pool
// usage when busy time is not reported (Flink before 1.13).
func TestCountersOnlyAndPoolUsageOnly(t *testing.T) {
	const p = 4
	j := newJob(t, Config{})
	count := make([]float64, p)
	for w := range 4 {
		ts := t0 + int64(w)*10000 + 5000
		for i := range p {
			rate := 100.0
			inPool, outPool := 0.1, 0.1
			if i == 2 {
				rate, inPool = 400, 1.0 // subtask 2 gets 4× the input and its input buffers are full
			}
			count[i] += rate * 10
			for _, kv := range []struct {
				n MetricName
				v float64
			}{{NumRecordsIn, count[i]}, {InPoolUsage, inPool}, {OutPoolUsage, outPool}} {
				m := Metric{TS: ts, JobID: j.id, TaskName: "agg", Subtask: int32(i), Name: kv.n, Value: kv.v, Host: "h" + strconv.Itoa(i)}
				if j.e.AddMetric(&m) != Accepted {
					t.Fatal("rejected")
				}
			}
		}
		j.close(w)
	}
	sat := j.kinds(KindSaturation, "")
	// Window 0 has no previous counter value, so no rate: the skew is seen
	// from window 1 on; sustain 2 then reports windows 1, 2 and 3.
	if len(sat) != 3 {
		t.Fatalf("%d findings: %s", len(sat), dump(j.out))
	}
	for _, f := range sat[1:] {
		if f.Cause != CauseDataSkew || *f.SubtaskIndex != 2 || f.Evidence.RecordsInPerSecond != 400 || f.Evidence.InputRatio != 4 {
			t.Fatalf("finding %s", dump([]Finding{f}))
		}
	}
}

// TestMemoryBoundedByDistinctKeys: a million distinct keys in each of two
// windows leave only the sketches behind. The heap in use after them must
// not grow with the number of keys (a map of keys would need >100 MB).
func TestMemoryBoundedByDistinctKeys(t *testing.T) {
	e, _ := New(Config{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	buf := make([]byte, 0, 32)
	s := KeySample{JobID: "j", TaskName: "t", Weight: 1, SampleRate: 1, Parallelism: 128, Subtask: -1}
	for w := range 2 {
		for i := range 1_000_000 {
			buf = strconv.AppendInt(append(buf[:0], "user-"...), int64(w*1_000_000+i), 10)
			s.Key = unsafe.String(&buf[0], len(buf)) // aliased, as the decoder hands keys over
			s.TS = t0 + int64(w)*10000 + int64(i%10000)
			if e.AddSample(&s) != Accepted {
				t.Fatal("rejected")
			}
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("heap in use grew by %.1f MB for 2 M distinct keys in 2 open windows", float64(grown)/1e6)
	if grown > 16<<20 {
		t.Fatalf("heap grew by %d bytes", grown)
	}
	if got := e.Flush(nil); len(got) != 0 {
		t.Fatalf("uniform keys produced findings: %s", dump(got[:1]))
	}
}
