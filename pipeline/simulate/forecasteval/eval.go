package forecasteval

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/skew"
)

// Checkpoint is one checkpoint of a run as it ended: when it completed or
// timed out (epoch ms; a timed-out one ends its timeout after its
// trigger), and whether it timed out.
type Checkpoint struct {
	End      int64
	TimedOut bool
}

// Ended returns checkpoints as Score takes them: each ends at its trigger
// plus its duration. A capture's truth in the simulator's form (JSON
// trigger, duration_ms, timed_out; a timed-out checkpoint's duration the
// time it ran until it failed) unmarshals into simulate.Checkpoint.
func Ended(cs []simulate.Checkpoint) []Checkpoint {
	out := make([]Checkpoint, len(cs))
	for i, c := range cs {
		out[i] = Checkpoint{End: c.End(), TimedOut: c.TimedOut}
	}
	return out
}

// Run is one job's run: the engine's findings for it (other jobs'
// findings are ignored, by JobID), its checkpoints, its checkpoint
// interval (execution.checkpointing.interval, ms), and the span [From,
// To) in epoch ms the truth covers. A window is scored only when the
// horizon after it lies inside the span, since a timeout after To is
// unknown.
type Run struct {
	Name        string
	JobID       string
	From, To    int64
	IntervalMs  int64
	Findings    []skew.Finding
	Checkpoints []Checkpoint
}

// Options of a score.
type Options struct {
	// WindowMs is the engine's window: a forecast is made at the end of
	// each.
	WindowMs int64
	// Intervals is the horizon in checkpoint intervals. A window is
	// positive when a checkpoint times out within Intervals of the run's
	// checkpoint intervals after its end, and forecast positive when a
	// checkpoint_risk finding of the job in it has a forecast at most
	// that many of the engine's intervals away (the engine's own rule; a
	// finding raised only by --checkpoint-risk-fraction, without such a
	// forecast, is not one).
	Intervals int
	// Positive, when set, says which findings forecast a timeout instead
	// of Forecasts: to score another rule on the same runs, such as
	// --checkpoint-risk-fraction alone.
	Positive func(f *skew.Finding) bool
}

func (o Options) validate() error {
	if o.WindowMs <= 0 || o.Intervals <= 0 {
		return fmt.Errorf("forecasteval: WindowMs %d and Intervals %d must be positive", o.WindowMs, o.Intervals)
	}
	return nil
}

// Result is a score over runs.
type Result struct {
	// Windows scored, and the confusion counts over them.
	Windows           int
	TP, FP, FN, TN    int
	Precision, Recall float64
	// BeforeTP and BeforeFN count the positive windows before each run's
	// first timeout: the warnings that come before anything failed.
	BeforeTP, BeforeFN int
	// Runs scored; TimedOut of them had a timeout inside their span
	// after their first scored window, and Warned of those were forecast
	// positive in the window before it.
	Runs, TimedOut, Warned int
	// Leads holds, per run that timed out, the time from the start of
	// the unbroken run of positive forecasts that reaches its first
	// timeout (the last window ending at or before it) to that timeout;
	// 0 when that window was not positive. LeadMedian and LeadP10 are
	// over all of them (nearest rank), misses included.
	Leads               []time.Duration
	LeadMedian, LeadP10 time.Duration
}

// BeforeRecall is the recall over the positive windows before each
// run's first timeout.
func (r Result) BeforeRecall() float64 { return ratio(r.BeforeTP, r.BeforeTP+r.BeforeFN) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// String is the score in one line, as docs/detection.md quotes it; a ratio
// over nothing is "-".
func (r Result) String() string {
	f := func(a, b int) string {
		if b == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", ratio(a, b))
	}
	return fmt.Sprintf("precision %s, recall %s (%d TP, %d FP, %d FN, %d TN of %d windows); before the first timeout recall %s (%d of %d); %d of %d runs that timed out warned, lead median %s, p10 %s",
		f(r.TP, r.TP+r.FP), f(r.TP, r.TP+r.FN), r.TP, r.FP, r.FN, r.TN, r.Windows, f(r.BeforeTP, r.BeforeTP+r.BeforeFN), r.BeforeTP, r.BeforeTP+r.BeforeFN,
		r.Warned, r.TimedOut, r.LeadMedian.Round(time.Second), r.LeadP10.Round(time.Second))
}

// Forecasts reports whether f is a checkpoint_risk finding whose
// forecast says a timeout within intervals checkpoint intervals.
func Forecasts(f *skew.Finding, intervals int) bool {
	if f.Saturation == nil || f.Cause != skew.CauseCheckpointRisk || f.Evidence == nil {
		return false
	}
	ev := f.Evidence
	return ev.ForecastTimeoutInMs != nil && ev.CheckpointIntervalMs > 0 &&
		*ev.ForecastTimeoutInMs <= int64(intervals)*ev.CheckpointIntervalMs
}

// Score scores the forecasts of runs.
func Score(runs []Run, opt Options) (Result, error) {
	if err := opt.validate(); err != nil {
		return Result{}, err
	}
	var r Result
	for i := range runs {
		if err := r.add(&runs[i], &opt); err != nil {
			return Result{}, err
		}
	}
	r.Precision, r.Recall = ratio(r.TP, r.TP+r.FP), ratio(r.TP, r.TP+r.FN)
	if len(r.Leads) > 0 {
		s := slices.Clone(r.Leads)
		slices.Sort(s)
		r.LeadMedian, r.LeadP10 = rank(s, 0.5), rank(s, 0.1)
	}
	return r, nil
}

// rank is the nearest-rank q-quantile of sorted s.
func rank(s []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func (r *Result) add(run *Run, opt *Options) error {
	if run.To <= run.From || run.IntervalMs <= 0 {
		return errors.New("forecasteval: run " + run.Name + ": To must be after From, and IntervalMs positive")
	}
	w, horizon := opt.WindowMs, int64(opt.Intervals)*run.IntervalMs
	first := run.From / w * w
	if first < run.From {
		first += w // the first whole window
	}
	positive := map[int64]bool{} // by window start
	for i := range run.Findings {
		f := &run.Findings[i]
		if f.JobID != run.JobID {
			continue
		}
		if opt.Positive != nil && opt.Positive(f) || opt.Positive == nil && Forecasts(f, opt.Intervals) {
			positive[f.WindowStart] = true
		}
	}
	var timeouts []int64
	for _, c := range run.Checkpoints {
		if c.TimedOut {
			timeouts = append(timeouts, c.End)
		}
	}
	slices.Sort(timeouts)
	// firstOut is the run's first timeout after its first window.
	firstOut, hasOut := int64(0), false
	for _, t := range timeouts {
		if t > first+w && t <= run.To {
			firstOut, hasOut = t, true
			break
		}
	}
	r.Runs++
	for ws := first; ws+w+horizon <= run.To; ws += w {
		we := ws + w
		i, _ := slices.BinarySearch(timeouts, we+1)
		label := i < len(timeouts) && timeouts[i] <= we+horizon
		pred := positive[ws]
		r.Windows++
		switch {
		case label && pred:
			r.TP++
		case label:
			r.FN++
		case pred:
			r.FP++
		default:
			r.TN++
		}
		if label && hasOut && we <= firstOut {
			if pred {
				r.BeforeTP++
			} else {
				r.BeforeFN++
			}
		}
	}
	if !hasOut {
		return nil
	}
	r.TimedOut++
	// The window ending at or before the first timeout, and the unbroken
	// run of positive windows back from it.
	ws := firstOut/w*w - w
	lead := time.Duration(0)
	if positive[ws] {
		r.Warned++
		for positive[ws-w] && ws-w >= first {
			ws -= w
		}
		lead = time.Duration(firstOut-(ws+w)) * time.Millisecond
	}
	r.Leads = append(r.Leads, lead)
	return nil
}
