package plans

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// The runs of one job (a run restarted names the next as its
// successor), and odd job ids and names.
var (
	propRuns  = []string{"0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210", "00112233445566778899aabbccddeeff"}
	propJobs  = []string{"", "a/b", "\xff", "ü", "j"}
	propTasks = []string{"agg", "agg", "src", "", "\xffbad"}
	propNums  = []float64{-1, 0, math.NaN(), math.Inf(1), math.Inf(-1), 1e308, 0.05, 0.3, 0.5, 1, 1.5, 3}
)

// propStep is one write of the runner: findings, then Advance to the
// latest window end.
type propStep struct {
	fs  []*skew.Finding
	end time.Time
}

// propStream returns arbitrary plan findings over n windows of 10 s:
// salting_plan findings (valid ones, made with Flink's routing, and odd
// ones: "none yet" -1, NaN, infinities, shares above 1, parallelism 0),
// hot_key findings, findings repeated, and job_end findings that restart
// the job at the same parallelism or another, or stop it. (A window older
// than one a step before comes only in a replay, which restores nothing.)
func propStream(t *testing.T, r *rand.Rand, n int) []propStep {
	num := func() float64 { return propNums[r.IntN(len(propNums))] }
	pick := func(ss []string) string { return ss[r.IntN(len(ss))] }
	run := 0
	var out []propStep
	for w := range n {
		sec := 10 * (w + 1)
		var fs []*skew.Finding
		for range 1 + r.IntN(4) {
			job := propRuns[run]
			if r.IntN(5) == 0 {
				job = pick(propJobs)
			}
			task := pick(propTasks)
			at := sec
			switch r.IntN(3) {
			case 0, 1:
				p := []int{2, 4, 4, 8}[r.IntN(4)]
				var keys []hk
				for i := range 1 + r.IntN(3) {
					keys = append(keys, hk{key: []string{"k1", "k2", "k3", ""}[r.IntN(4)], buckets: r.IntN(min(p, 4)) + 1, share: 0.3, from: i * 7})
				}
				keys = slices.CompactFunc(keys, func(a, b hk) bool { return a.key == b.key })
				f := findingFor(t, job, task, at, p, 128, keys...)
				f.JobName = pick(propJobs)
				if r.IntN(3) == 0 {
					f.Plan.MaxOverMeanBefore, f.Plan.MaxOverMeanAfter = num(), num()
				}
				if r.IntN(4) == 0 {
					f.Plan.Keys[0].Share = num()
				}
				if r.IntN(10) == 0 {
					f.Plan.Parallelism = 0
				}
				fs = append(fs, f)
			default:
				f := hotKeyFinding(at, []string{"k1", "k2", "k3"}[r.IntN(3)])
				f.JobID, f.TaskName, f.HotKey.Share = job, task, num()
				fs = append(fs, f)
			}
		}
		if run+1 < len(propRuns) && r.IntN(8) == 0 {
			end := at(sec).UnixMilli()
			e := &skew.JobEnd{Reason: skew.EndRestarted, Successor: propRuns[run+1],
				SuccessorTasks: []skew.TaskShape{{Name: "agg", Parallelism: []int{4, 8}[r.IntN(2)]}, {Name: "src", Parallelism: 4, MaxParallelism: 128}}}
			if r.IntN(4) == 0 {
				e.Reason, e.Successor, e.SuccessorTasks = skew.EndStopped, "", nil
			}
			fs = append(fs, &skew.Finding{Kind: skew.KindJobEnd, JobID: propRuns[run], WindowStart: end - 10000, WindowEnd: end, JobEnd: e})
			run++ // Flink never reuses a job id
		}
		if r.IntN(8) == 0 && len(fs) > 0 {
			fs = append(fs, fs[r.IntN(len(fs))]) // a finding twice
		}
		out = append(out, propStep{fs: fs, end: at(sec)})
	}
	return out
}

// propRecord is the stored plans as the topic (or the plans table)
// keeps them: the latest plan of each task, as JSON, or its retirement
// (a tombstone with its version and time).
type propRecord map[string][]byte

// publish stores changes as the sink publishes them, failing the test
// where they cannot be encoded (the publisher's permanent error).
func (rec propRecord) publish(t *testing.T, cs []Change) {
	t.Helper()
	for _, c := range cs {
		if c.Retired {
			b, _ := json.Marshal(RetiredTask{JobID: c.JobID, TaskName: c.TaskName, Version: c.Version, At: c.At})
			rec[Key(c.JobID, c.TaskName)] = append([]byte("retired "), b...)
			continue
		}
		b, err := json.Marshal(c.Plan)
		if err != nil {
			t.Fatalf("plan of %s cannot be published: %v", Key(c.JobID, c.TaskName), err)
		}
		rec[Key(c.JobID, c.TaskName)] = b
	}
}

// load reads the record back as Publisher.Load does.
func (rec propRecord) load(t *testing.T) Stored {
	t.Helper()
	var out Stored
	for _, k := range slices.Sorted(maps.Keys(rec)) {
		if b, ok := bytes.CutPrefix(rec[k], []byte("retired ")); ok {
			var r RetiredTask
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			out.Retired = append(out.Retired, r)
			continue
		}
		var p Plan
		if err := json.Unmarshal(rec[k], &p); err != nil {
			t.Fatal(err)
		}
		out.Plans = append(out.Plans, p)
	}
	return out
}

// step runs one step as planpub.PlanObserver does (Observe each finding,
// Advance to the latest window end) and returns its changes as JSON; the
// record gets them, and every current plan again (the sink's republication,
// here at every step, so that what is stored is the whole state).
func (m *Manager) propStep(t *testing.T, s propStep, rec propRecord) string {
	t.Helper()
	var cs []Change
	for _, f := range s.fs {
		cs = append(cs, m.Observe(f)...)
	}
	cs = append(cs, m.Advance(s.end)...)
	rec.publish(t, cs)
	cur := m.Current()
	for i := range cur {
		rec.publish(t, []Change{{JobID: cur[i].JobID, TaskName: cur[i].TaskName, Plan: &cur[i]}})
	}
	b, err := json.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRestoreArbitraryStreams: for arbitrary finding streams, every plan
// change can be published, a Manager restored from the published plans
// after any step refuses none of them, and it then makes exactly the
// changes, and serves exactly the plans, of the uninterrupted Manager.
func TestRestoreArbitraryStreams(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 60
	}
	var carried int
	for seed := range uint64(seeds) {
		steps := propStream(t, rand.New(rand.NewPCG(seed, 34)), 30)
		whole := newManager(t, Config{Cooldown: time.Minute, TTL: 2 * time.Minute})
		rec := propRecord{}
		saved := make([]propRecord, len(steps))
		want := make([]string, len(steps))
		for i, s := range steps {
			want[i] = whole.propStep(t, s, rec)
			saved[i] = maps.Clone(rec)
			for _, f := range s.fs {
				if f.Kind == skew.KindJobEnd && whole.Plan(f.JobEnd.Successor, "agg") != nil {
					carried++
				}
			}
		}
		for cut := 1; cut < len(steps); cut++ {
			m := newManager(t, Config{Cooldown: time.Minute, TTL: 2 * time.Minute})
			if refused := m.Restore(saved[cut-1].load(t)); len(refused) > 0 {
				t.Fatalf("seed %d, cut %d: refused %v", seed, cut, refused)
			}
			r := maps.Clone(saved[cut-1])
			for i := cut; i < len(steps); i++ {
				if got := m.propStep(t, steps[i], r); got != want[i] {
					t.Fatalf("seed %d, restored after step %d, step %d:\n got %s\nwant %s", seed, cut, i, got, want[i])
				}
			}
			if g, w := m.Current(), whole.Current(); !slices.EqualFunc(g, w, func(a, b Plan) bool { return describePlan(&a) == describePlan(&b) }) {
				t.Fatalf("seed %d, restored after step %d: serves %v, want %v", seed, cut, g, w)
			}
		}
	}
	if carried == 0 {
		t.Fatal("no plan carried over to a new run: the streams do not test it")
	}
}
