package forecasteval

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/skewlens/skewlens/pipeline/replay"
	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// The labelled set's kinds of run.
const (
	kindCreep   = "creep"   // the sink slows step by step until checkpoints time out (or the run ends)
	kindRecover = "recover" // the same, and the sink recovers, before or after the first timeout
	kindBurst   = "burst"   // checkpoint_timeout's sudden demand burst
	kindQuiet   = "quiet"   // healthy, hot_key, slow_sink (steadily slow checkpoints) or under_provisioned
)

// labelledRun is one run of the labelled set: its kind and simulator
// configuration.
type labelledRun struct {
	kind string
	cfg  simulate.Config
}

// labelledSet draws n runs from seed 1..n: half of them creep towards a
// timeout (a third of those recover), a tenth are sudden bursts, and the
// rest are quiet. Rates, onsets, step sizes and counts, recoveries,
// capacity noise, formats and whether the JobManager reports
// numberOfCompletedCheckpoints vary with the seed.
func labelledSet(n int) []labelledRun { return labelledSetFrom(1, n) }

// labelledSetFrom is labelledSet of the n seeds from first.
func labelledSetFrom(first, n int) []labelledRun {
	var out []labelledRun
	for i := first; i < first+n; i++ {
		r := rand.New(rand.NewPCG(uint64(i), 0x5eed))
		dur := time.Duration(12+r.IntN(9)) * time.Minute
		cfg := simulate.Config{Seed: uint64(i), Duration: dur, NoKeySamples: true, JobName: fmt.Sprintf("run-%03d", i),
			MetricFormat:     []string{simulate.FormatJSON, simulate.FormatInflux, simulate.FormatPrometheus, simulate.FormatMixed}[r.IntN(4)],
			CheckpointDetail: r.IntN(2) == 0,
			// Checkpointing as jobs set it: every 10 s to a minute, a
			// timeout of one to three minutes (Flink's default, 10
			// minutes, is beyond what the model's buffers can hold up).
			CheckpointInterval: []time.Duration{10 * time.Second, 30 * time.Second, 30 * time.Second, time.Minute}[r.IntN(4)],
			CheckpointTimeout:  []time.Duration{time.Minute, time.Minute, 2 * time.Minute, 3 * time.Minute}[r.IntN(4)],
		}
		var kind string
		switch u := r.Float64(); {
		case u < 0.5:
			kind = kindCreep
			cfg.Scenario = simulate.CheckpointTimeout
			// The sink's base load, and steps that take it past its
			// capacity within a few of them.
			load := 0.45 + 0.4*r.Float64()
			cfg.Rate = load * 4 * 500
			// The keyed task's parallelism bounds the backlog in front of
			// the sink (its buffers): with 1 or 2 subtasks checkpoints
			// may level off below the timeout instead of reaching it.
			cfg.Parallelism = []int{1, 2, 4, 8}[r.IntN(4)]
			sd := &simulate.Slowdown{
				At:     time.Duration(60+r.IntN(240)) * time.Second,
				Every:  time.Duration(20+r.IntN(160)) * time.Second,
				Factor: 0.75 + 0.2*r.Float64(),
				Jitter: 0.15 * r.Float64(),
			}
			sd.Steps = 2 + r.IntN(14)
			if r.IntN(3) == 0 {
				kind = kindRecover
				sd.RecoverAt = sd.At + time.Duration(60+r.IntN(int(dur-sd.At)/int(time.Second)))*time.Second
				if sd.RecoverAt >= dur {
					sd.RecoverAt = sd.At + (dur-sd.At)/2
				}
			}
			cfg.Slowdown = sd
		case u < 0.6:
			kind = kindBurst
			cfg.Scenario = simulate.CheckpointTimeout
		default:
			kind = kindQuiet
			cfg.Scenario = []simulate.Scenario{simulate.Healthy, simulate.Healthy, simulate.HotKey, simulate.SlowSink, simulate.UnderProvisioned}[r.IntN(5)]
			if cfg.Scenario == simulate.Healthy {
				cfg.Rate = 20000 + 60000*r.Float64()
			}
		}
		out = append(out, labelledRun{kind: kind, cfg: cfg})
	}
	return out
}

// replayRun generates a run and replays it through the engine as
// `skewlens analyze` does, configured with the job's checkpoint timeout
// and everything else the defaults (the interval too, so the one the
// engine measures is what counts); it returns the Run to score.
func replayRun(t testing.TB, lr labelledRun) Run {
	g, err := simulate.New(lr.cfg)
	if err != nil {
		t.Fatal(err)
	}
	gc := g.Config()
	cfg := skew.Config{CheckpointTimeoutMs: gc.CheckpointTimeout.Milliseconds()}
	var buf bytes.Buffer
	if _, err := g.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	eng, err := skew.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := window.New(window.Config{}, eng)
	if err != nil {
		t.Fatal(err)
	}
	var fs []skew.Finding
	if _, err := replay.Run(context.Background(), []replay.Input{{Name: lr.cfg.JobName, R: &buf}}, st, replay.Options{},
		func(f *skew.Finding) error {
			if f.Saturation != nil && f.Cause == skew.CauseCheckpointRisk {
				fs = append(fs, *f)
			}
			return nil
		}); err != nil {
		t.Fatal(err)
	}
	return Run{Name: lr.cfg.JobName, JobID: g.Truth().JobID, From: gc.Start, To: gc.Start + gc.Duration.Milliseconds(),
		IntervalMs: gc.CheckpointInterval.Milliseconds(), Findings: fs, Checkpoints: Ended(g.Checkpoints())}
}

// replayAll replays the runs on every core.
func replayAll(t testing.TB, set []labelledRun) []Run {
	runs := make([]Run, len(set))
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				runs[i] = replayRun(t, set[i])
			}
		})
	}
	for i := range set {
		next <- i
	}
	close(next)
	wg.Wait()
	return runs
}

// TestLabelledSet scores the forecast on the labelled set: every window of
// every run, labelled by whether a checkpoint times out within the
// horizon (3 of the job's checkpoint intervals) after it.
// docs/detection.md and docs/performance.md quote its figures (go test -run TestLabelledSet -v
// ./pipeline/simulate/forecasteval). It takes a few seconds on two
// cores, so -short runs it whole too.
func TestLabelledSet(t *testing.T) {
	set := labelledSet(240)
	runs := replayAll(t, set)
	def := skew.DefaultConfig()
	opt := Options{WindowMs: def.WindowMs, Intervals: def.CheckpointForecastHorizon}
	all, err := Score(runs, opt)
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string][]Run{}
	for i := range set {
		byKind[set[i].kind] = append(byKind[set[i].kind], runs[i])
	}
	for _, k := range []string{kindCreep, kindRecover, kindBurst, kindQuiet} {
		r, err := Score(byKind[k], opt)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-8s %3d runs: %v", k, len(byKind[k]), r)
		if k == kindQuiet && r.FP != 0 {
			t.Errorf("%d forecasts of a timeout on runs whose checkpoints do not slow down", r.FP)
		}
	}
	t.Logf("all      %3d runs: %v", len(runs), all)
	if all.Warned < all.TimedOut*4/5 {
		t.Errorf("%d of %d runs that timed out were warned before the first timeout, want 80%%", all.Warned, all.TimedOut)
	}
	// The baseline: checkpoint_risk raised by --checkpoint-risk-fraction
	// alone, a last checkpoint of half the timeout or more.
	frac := opt
	frac.Positive = func(f *skew.Finding) bool {
		return f.Saturation != nil && f.Cause == skew.CauseCheckpointRisk &&
			f.Evidence.LastCheckpointMs >= def.CheckpointRiskFraction*float64(f.Evidence.CheckpointTimeoutMs)
	}
	base, err := Score(runs, frac)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fraction %3d runs: %v", len(runs), base)
	// What an operator sees: checkpoint_risk raised by either.
	either := frac
	either.Positive = func(f *skew.Finding) bool { return frac.Positive(f) || Forecasts(f, opt.Intervals) }
	union, err := Score(runs, either)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("either   %3d runs: %v", len(runs), union)
	if all.Precision < 0.8 || all.Recall < 0.8 {
		t.Errorf("precision %.3f, recall %.3f: want both at least 0.8", all.Precision, all.Recall)
	}
}
