package alerttest

import (
	"math"
	"math/rand/v2"
	"strings"

	"github.com/skewlens/skewlens/skew"
)

// Step is one write of the pipeline's runner: the findings of the
// windows that closed together (Observe), then the end of the last of
// them (Advance), after which the runner saves the state and commits.
type Step struct {
	Findings  []skew.Finding
	Watermark int64
}

// Runs are the job ids of one job's successive runs in a Stream: a run
// that ends restarted names the next as its successor.
var Runs = []string{"0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210", "00112233445566778899aabbccddeeff"}

// Numbers are what a finding's numbers may carry, what Flink really
// sends included: -1 ("none yet": lastCheckpointDuration, sizes), 0,
// NaN and infinities (a rate over no time, a broken reporter), huge
// values (counters that never reset, or reset and wrapped), and the
// ordinary ones.
var Numbers = []float64{-1, 0, math.NaN(), math.Inf(1), math.Inf(-1), 1e308, math.MaxFloat64, 1e-300,
	0.05, 0.4, 0.5, 1, 3, 5, 500, 900, 990, 1000, 1e12}

// odd job ids, task names and keys: empty, slashes, not UTF-8, long.
var (
	oddJobs  = []string{"", "job/with/slashes", "\xff\xfe", "ü", strings.Repeat("j", 300)}
	tasks    = []string{"agg", "agg", "agg", "src", "", "sink/x", "\xffbad"}
	keys     = []string{"k1", "k1", "k2", "", "\xc3\x28", strings.Repeat("k", 200)}
	causes   = []string{skew.CauseDataSkew, skew.CauseDataSkew, skew.CauseRotatingHotKey, skew.CauseSlowSubtask, skew.CauseUnderProvisioned, skew.CauseCheckpointRisk, "bogus"}
	subtasks = []int{-1, 0, 1, 1, 2, 3, 1 << 40}
)

// Stream returns an arbitrary sequence of fold steps over windows
// windows: saturation, hot_key, subtask_stats and job_end findings of the
// runs of one job (Runs, restarted one into the next, or stopped and
// started again) and of odd jobs,
// with the numbers of Numbers, findings repeated, malformed findings (a
// window that ends before it starts, or at 0), and steps of one or two
// windows, in any order within a step. (A window older than one a step
// before it comes again only in a replay after a crash, which the tests
// make themselves.) The same r gives the same stream.
func Stream(r *rand.Rand, windows int) []Step {
	g := gen{r: r}
	var out []Step
	run := 0
	var fs []skew.Finding
	for w := range int64(windows) {
		jobs := []string{Runs[run], g.pick(oddJobs)}
		if run+1 < len(Runs) && r.IntN(4) == 0 {
			jobs = append(jobs, Runs[run+1]) // the next run reports before the old one ends
		}
		for range 1 + r.IntN(8) {
			fs = append(fs, g.finding(jobs[r.IntN(len(jobs))], w))
			if r.IntN(8) == 0 {
				fs = append(fs, fs[r.IntN(len(fs))]) // a window's finding twice
			}
		}
		if run+1 < len(Runs) && r.IntN(6) == 0 {
			e := &skew.JobEnd{Reason: skew.EndRestarted, Successor: Runs[run+1], LastEventAt: w * Window,
				SuccessorTasks: []skew.TaskShape{{Name: "agg", Parallelism: 4}}}
			switch r.IntN(6) {
			case 0:
				e.Reason, e.Successor, e.SuccessorTasks = skew.EndStopped, "", nil
			case 1:
				e.Successor = Runs[run] // a successor that is itself
			}
			fs = append(fs, skew.Finding{Kind: skew.KindJobEnd, JobID: Runs[run], JobName: "orders",
				WindowStart: w * Window, WindowEnd: (w + 1) * Window, JobEnd: e})
			run++ // Flink never reuses a job id: nothing of the run comes again
		}
		if r.IntN(4) == 0 && w+1 < int64(windows) {
			continue // the next window closes with this one
		}
		r.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
		out = append(out, Step{Findings: fs, Watermark: (w + 1) * Window})
		fs = nil
	}
	return out
}

type gen struct{ r *rand.Rand }

func (g gen) pick(ss []string) string { return ss[g.r.IntN(len(ss))] }
func (g gen) num() float64            { return Numbers[g.r.IntN(len(Numbers))] }

// sub is a subtask index, or nil.
func (g gen) sub() *int {
	if g.r.IntN(6) == 0 {
		return nil
	}
	return IntPtr(subtasks[g.r.IntN(len(subtasks))])
}

// finding is one finding of job in the window starting at w windows.
func (g gen) finding(job string, w int64) skew.Finding {
	r := g.r
	f := skew.Finding{JobID: job, JobName: "orders", TaskName: g.pick(tasks), SubtaskIndex: g.sub(),
		WindowStart: w * Window, WindowEnd: (w + 1) * Window}
	switch r.IntN(20) {
	case 0:
		f.WindowStart, f.WindowEnd = f.WindowEnd, f.WindowStart // ends before it starts
	case 1:
		f.WindowStart, f.WindowEnd = 0, 0
	}
	switch r.IntN(3) {
	case 0:
		f.Kind = skew.KindSaturation
		f.Summary = "saturated"
		ev := &skew.Evidence{BusyMsPerSecond: g.num(), InputRatio: g.num(), InputShare: g.num(),
			LastCheckpointMs: g.num(), LastCheckpointBytes: g.num(), FailedCheckpoints: g.num(),
			SkewScore: g.num(), MaxMedianRatio: g.num(), Parallelism: []int{0, 1, 2, 4, -1}[r.IntN(5)],
			HotKeys: []skew.KeyShare{{Key: g.pick(keys), Share: g.num(), SubtaskShare: g.num()}}}
		if r.IntN(3) == 0 {
			fi := g.num()
			ev.ForecastIntervals = &fi
		}
		f.Saturation = &skew.Saturation{Cause: g.pick(causes), Evidence: ev}
		if r.IntN(10) == 0 {
			f.Evidence = nil
		}
	case 1:
		f.Kind = skew.KindHotKey
		sat := r.IntN(3) != 0
		f.HotKey = &skew.HotKey{Key: g.pick(keys), Share: g.num(), EstimatedRecords: g.num(), ShareMargin: g.num(),
			SubtaskShare: g.num(), Threshold: g.num(), Saturated: &sat}
		if r.IntN(4) == 0 {
			f.SubtaskIndex, f.HotKey.Subtasks = nil, []int{0, 1, 2}
		}
	default:
		f.Kind = skew.KindSubtaskStats
		f.Stats = &skew.SubtaskStats{BusyMsPerSecond: g.num(), InputShare: g.num(), Saturated: r.IntN(2) == 0}
	}
	return f
}
