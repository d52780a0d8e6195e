package skew_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// TestRestoreAnyStream is the property that a restart never stops a
// pipeline: for any stream of metrics and key samples, with what Flink
// really sends among them (-1 for "none yet", flagged or not, NaN and
// infinities, 0, huge values, counters that reset, parallelism that
// changes, jobs that stop and start again under their name), the state
// the engine saves at any point encodes as JSON, restores from that JSON
// without refusing a job, and the restored engine then goes on as the
// uninterrupted one: the findings before the crash and after it are those
// of one run, byte for byte.
//
// The streams are drawn from fixed seeds, so a failure names the seed
// that makes it again. (A user's job that reported -1 for its last
// checkpoint for 12 windows crash-looped `run` here: the engine saved the
// -1 and Restore refused it.)
func TestRestoreAnyStream(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 80
	}
	for seed := range seeds {
		evs := randomStream(uint64(seed))
		_, st := newStage(t, nil)
		want, _, _ := feed(t, st, evs, nil)
		want = st.Flush(want)
		wantJSON := jsonLines(t, want)
		r := rand.New(rand.NewPCG(uint64(seed), 99))
		for _, cut := range []int{r.IntN(len(evs)), len(evs) / 2, len(evs) - 1} {
			eng, st := newStage(t, nil)
			before, _, _ := feed(t, st, evs[:cut], nil)
			states := savedJSON(t, eng, seed)
			eng2, err := skew.New(skew.Config{EmitStats: true})
			if err != nil {
				t.Fatal(err)
			}
			if refused, err := eng2.Restore(states); err != nil || len(refused) != 0 {
				t.Fatalf("seed %d, cut %d of %d: Restore of what the engine saved: %v, refused %v", seed, cut, len(evs), err, refused)
			}
			// The committed offset: the first event of a window not
			// closed (the stream is in event-time order).
			closed := st.WindowStart(st.Watermark())
			from := 0
			for from < cut && st.WindowStart(evs[from].ts) < closed {
				from++
			}
			st2 := stageOn(t, eng2)
			after, _, late := feed(t, st2, evs[from:], nil)
			after = st2.Flush(after)
			if late != 0 {
				t.Fatalf("seed %d, cut %d: %d late events after the restart", seed, cut, late)
			}
			got := jsonLines(t, append(before, after...))
			if !slices.Equal(got, wantJSON) {
				diffFindings(t, fmt.Sprintf("seed %d, cut %d of %d", seed, cut, len(evs)), got, wantJSON)
			}
		}
	}
}

// savedJSON is the engine's Snapshot as the store keeps it, each job's
// state as JSON and a tombstone as a deletion: it must encode (a NaN or
// an infinity in it would fail the save for good).
func savedJSON(t *testing.T, eng *skew.Engine, seed int) []skew.JobState {
	t.Helper()
	snap := slices.DeleteFunc(eng.Snapshot(nil), func(s skew.JobState) bool { return s.Ended })
	b, err := json.Marshal(snap)
	if err != nil {
		t.Fatalf("seed %d: the saved state does not encode: %v", seed, err)
	}
	var states []skew.JobState
	if err := json.Unmarshal(b, &states); err != nil {
		t.Fatalf("seed %d: the saved state does not decode: %v", seed, err)
	}
	return states
}

func diffFindings(t *testing.T, what string, got, want []string) {
	t.Helper()
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("%s: finding %d of %d differs from the uninterrupted run's:\n got %s\nwant %s", what, i, len(want), got[i], want[i])
		}
	}
	t.Fatalf("%s: %d findings, the uninterrupted run made %d", what, len(got), len(want))
}

// randomStream draws a stream of a few jobs' reports, in event-time
// order, as the reporters of a small cluster send them every few seconds
// for up to 3 minutes, with Flink's sentinels and hostile values mixed in.
func randomStream(seed uint64) []event {
	r := rand.New(rand.NewPCG(seed, 7))
	const t0 int64 = 1_700_000_000_000
	type task struct {
		name string
		p    int
	}
	type job struct {
		id, name   string
		tasks      []task
		start, end int64 // the run reports in [start, end)
		counters   map[string]float64
		noneYet    bool // never completes a checkpoint
		ckptMs     float64
		failed     float64
		completed  float64
		checkpoint bool // reports checkpoint metrics at all
	}
	span := int64(60_000 + r.IntN(120_000))
	var jobs []*job
	for i := range 1 + r.IntN(3) {
		j := &job{id: fmt.Sprintf("run-%d-%d", seed, i), name: fmt.Sprintf("job-%d", i%2), counters: map[string]float64{},
			start: t0 + int64(r.IntN(20_000)), end: t0 + span, noneYet: r.IntN(3) == 0, checkpoint: r.IntN(4) != 0, ckptMs: float64(r.IntN(5000))}
		if r.IntN(3) == 0 { // the run stops reporting part way
			j.end = j.start + int64(r.IntN(int(span)))
		}
		for k := range 1 + r.IntN(3) {
			j.tasks = append(j.tasks, task{name: fmt.Sprintf("task %d", k), p: 1 + r.IntN(4)})
		}
		jobs = append(jobs, j)
		if r.IntN(4) == 0 { // a new run of the same name after this one
			next := *j
			next.id, next.counters = j.id+"-again", map[string]float64{}
			next.start, next.end = j.end+int64(r.IntN(30_000)), t0+span+int64(r.IntN(60_000))
			jobs = append(jobs, &next)
		}
	}
	// A value as a gauge may read: mostly plausible, sometimes one of
	// Flink's sentinels or a hostile number.
	gauge := func(typical float64) (float64, bool) {
		switch r.IntN(40) {
		case 0:
			return math.NaN(), false
		case 1:
			return math.Inf(1), false
		case 2:
			return -1, false
		case 3:
			return 0, false
		case 4:
			return 1e15, false
		case 5:
			return 0, true // NoValue
		}
		return typical * (0.5 + r.Float64()), false
	}
	// A counter rises, and sometimes resets or jumps.
	counter := func(j *job, key string, step float64) float64 {
		c := j.counters[key]
		switch r.IntN(50) {
		case 0:
			c = 0 // a reset: the task restarted
		case 1:
			c += 1e15
		default:
			c += step * (0.5 + r.Float64())
		}
		j.counters[key] = c
		return c
	}
	var evs []event
	for ts := t0; ts < t0+span+60_000; ts += int64(1000 + r.IntN(4000)) {
		for _, j := range jobs {
			if ts < j.start || ts >= j.end {
				continue
			}
			if j.checkpoint && r.IntN(2) == 0 {
				dur, size := j.ckptMs, 1e6+j.ckptMs*1000
				flagged := j.noneYet && r.IntN(2) == 0
				if j.noneYet {
					dur, size = -1, -1
				} else if r.IntN(5) == 0 {
					j.ckptMs += float64(r.IntN(20_000))
					j.completed++
				}
				if r.IntN(10) == 0 {
					j.failed++
				}
				if r.IntN(40) == 0 {
					j.failed, j.completed = 0, 0 // the JobManager failed over
				}
				for _, m := range []skew.Metric{
					{Name: skew.LastCheckpointDuration, Value: dur, NoValue: flagged},
					{Name: skew.LastCheckpointSize, Value: size, NoValue: flagged},
					{Name: skew.NumberOfFailedCheckpoints, Value: j.failed},
					{Name: skew.NumberOfCompletedCheckpoints, Value: j.completed},
				} {
					if flagged && m.NoValue {
						m.Value = 0
					}
					m.TS, m.JobID, m.JobName, m.Subtask = ts, j.id, j.name, -1
					evs = append(evs, event{metric: &m, ts: ts})
				}
			}
			for _, tk := range j.tasks {
				p := tk.p
				if r.IntN(60) == 0 {
					p++ // a rescale, seen as a subtask more
				}
				hot := r.IntN(p)
				for sub := range p {
					busy := 200.0
					if sub == hot {
						busy = 980
					}
					for _, n := range []skew.MetricName{skew.BusyTimeMsPerSecond, skew.BackPressuredTimeMsPerSecond, skew.IdleTimeMsPerSecond,
						skew.InputQueueLength, skew.InPoolUsage, skew.OutPoolUsage, skew.CheckpointAlignmentTime, skew.CheckpointStartDelayNanos} {
						typical := map[skew.MetricName]float64{skew.BusyTimeMsPerSecond: busy, skew.BackPressuredTimeMsPerSecond: 1000 - busy,
							skew.IdleTimeMsPerSecond: 20, skew.InputQueueLength: 8, skew.InPoolUsage: busy / 1000, skew.OutPoolUsage: 0.2,
							skew.CheckpointAlignmentTime: 1e6, skew.CheckpointStartDelayNanos: 1e7}[n]
						v, none := gauge(typical)
						if none && n != skew.BusyTimeMsPerSecond {
							none, v = false, typical
						}
						m := skew.Metric{TS: ts, Name: n, JobID: j.id, JobName: j.name, TaskName: tk.name, Subtask: int32(sub),
							Host: "tm-1", TaskAttemptID: fmt.Sprintf("attempt-%.0f", j.counters["attempt"]), Value: v, NoValue: none}
						evs = append(evs, event{metric: &m, ts: ts})
					}
					for _, c := range []struct {
						n    skew.MetricName
						step float64
					}{{skew.AccumulateBusyTimeMs, busy * 3}, {skew.AccumulateBackPressuredTimeMs, (1000 - busy) * 3},
						{skew.AccumulateIdleTimeMs, 60}, {skew.NumRecordsIn, 3000 * busy / 200}} {
						m := skew.Metric{TS: ts, Name: c.n, JobID: j.id, JobName: j.name, TaskName: tk.name, Subtask: int32(sub),
							Value: counter(j, fmt.Sprint(tk.name, sub, c.n), c.step)}
						if c.n == skew.NumRecordsIn && r.IntN(2) == 0 {
							m.Rate, m.HasRate = 1000*busy/200, true
						}
						evs = append(evs, event{metric: &m, ts: ts})
					}
				}
				for range r.IntN(30) {
					key := fmt.Sprintf("key-%d", r.IntN(20))
					if r.IntN(3) == 0 {
						key = "hot"
					}
					w := 1 + r.Float64()*10
					if r.IntN(100) == 0 {
						w = 1e300
					}
					s := skew.KeySample{TS: ts, JobID: j.id, JobName: j.name, TaskName: tk.name, Key: key, Weight: w, SampleRate: 0.01,
						Parallelism: int32(tk.p), MaxParallelism: 128, Subtask: -1}
					if r.IntN(2) == 0 {
						s.Subtask = int32(r.IntN(tk.p + 1)) // sometimes one out of range
					}
					evs = append(evs, event{sample: &s, ts: ts})
				}
			}
			if r.IntN(80) == 0 {
				j.counters["attempt"]++ // a task failed over: new attempts
			}
		}
	}
	return evs
}

// stageOn is a stage over an engine of the caller's (newStage's window
// configuration).
func stageOn(t *testing.T, eng *skew.Engine) *window.Feeder {
	t.Helper()
	st, err := window.New(window.Config{}, eng)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
