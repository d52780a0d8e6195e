package skew

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// The checkpoint-timeout forecast. The rule it serves, and its measured
// precision and recall: docs/detection.md#checkpoint-timeouts-predicted.
//
// Each job keeps its last checkpoints (ckptHistory): when each was
// triggered, how long it took, its size and how long the subtask holding
// the barrier waited for it. Flink reports only the last completed
// checkpoint's duration and size, so a checkpoint is seen when
// numberOfCompletedCheckpoints rises or, without that counter, when
// lastCheckpointDuration or lastCheckpointSize changes; it was triggered
// its duration before the reading that showed it. A failure
// (numberOfFailedCheckpoints rose) that came at least the checkpoint
// timeout after the last checkpoint ended is taken for a timeout: a
// checkpoint triggered a timeout before it that took the whole timeout.
// One that came sooner is some other failure (or the configured timeout
// is not the job's), and no point of the trend.
//
// The trend is fitted with Theil–Sen (the median of the pairwise slopes,
// and the median intercept) through the last ckptFitPoints checkpoints,
// of duration over trigger time: robust to a stray checkpoint,
// deterministic, and a few dozen divisions per job and window. Two are
// fitted, a line and an exponential (a line through the logarithms of the
// durations), and the one with the smaller median absolute residual
// forecasts (fitTrend). From the latest checkpoint the forecast walks
// Flink's schedule (ckptFailure): the next checkpoint is triggered an
// interval after the last one's trigger, or when that one ends if later,
// takes what the trend says, and the first that reaches the timeout
// fails the timeout after its trigger; after a timeout the next one is
// triggered when it failed, and fails a timeout later while the trend does
// not fall. A trend that turned (the latest checkpoint quicker than each
// of the two before it) forecasts nothing until it rises again, nor does
// a history whose last checkpoint ended more than twice a timeout plus an
// interval ago: Flink has stopped checkpointing, or stopped reporting.
//
// The horizon is counted in checkpoint intervals: the median gap between
// the triggers of consecutive completed checkpoints, among the gaps the
// earlier checkpoint took less than half of (a checkpoint that takes
// longer than the interval delays the next trigger, so those gaps show
// its duration, not the interval), once there are ckptMinGaps of them;
// until then Config.CheckpointIntervalMs.

const (
	// ckptFitPoints is how many of a job's checkpoints the trend fits,
	// and the fewest that make one. Four are the fewest in which one
	// stray checkpoint (a pause, a spike) moves the median slope only to
	// the next pair's; more lag a slowdown, whose trend steepens with
	// every step. On the labelled set of pipeline/simulate/forecasteval,
	// fits of 3, 5 and 8 checkpoints warned before fewer first timeouts
	// (55, 59 and 51 of 64, against 60) and recalled less (0.77, 0.84 and
	// 0.76, against 0.86), for a precision of 0.90, 0.85 and 0.87 against
	// 0.84 (measured before checkpoints were dated between readings).
	ckptFitPoints = 4
	ckptMinPoints = ckptFitPoints
	// ckptMaxGaps and ckptMinGaps bound the trigger gaps kept for the
	// interval, and the fewest that measure it.
	ckptMaxGaps = 16
	ckptMinGaps = 3
)

// ckptPoint is one checkpoint of a job: its estimated trigger time (epoch
// ms), duration (ms), size and the barrier wait of the subtask holding
// the barrier (start delay plus alignment, ms) when known.
type ckptPoint struct {
	trig       int64
	ms         float64
	bytes      float64
	barrier    float64
	hasBytes   bool
	hasBarrier bool
	timedOut   bool
}

// ckptHistory is a job's recent checkpoints and the readings that tell a
// new one.
type ckptHistory struct {
	points []ckptPoint // oldest first, at most ckptFitPoints
	gaps   []float64   // trigger gaps in ms, oldest first, at most ckptMaxGaps
	// The last readings of lastCheckpointDuration, lastCheckpointSize
	// and numberOfCompletedCheckpoints.
	lastMs, lastBytes, completed  float64
	hasMs, hasBytes, hasCompleted bool
	// lastEnd is the time of the reading that showed the last checkpoint
	// end (completed, or timed out); failedSince is set when a failure
	// came after the last completed checkpoint.
	lastEnd     int64
	hasEnd      bool
	failedSince bool
	// lastRead is the time of the last reading of lastCheckpointDuration:
	// a checkpoint a later reading shows new ended between the two.
	lastRead int64
	hasRead  bool
	// noneYet: the job said no checkpoint of it has completed (Flink's -1
	// for lastCheckpointDuration), and none has since.
	noneYet bool
}

// ended estimates when a checkpoint that a reading at ts shows ended: the
// middle of the span since the reading before, in which it ended. Flink's
// reporters read every 10 s or so, and taking the reading's own time
// would date every checkpoint half a report late on average (the real
// captures' forecasts came 9 s late with it).
func (h *ckptHistory) ended(ts int64) int64 {
	if !h.hasRead || h.lastRead >= ts {
		return ts
	}
	return h.lastRead + (ts-h.lastRead)/2
}

// empty reports whether the history holds nothing to carry over.
func (h *ckptHistory) empty() bool {
	return len(h.points) == 0 && len(h.gaps) == 0 && !h.hasMs && !h.hasBytes && !h.hasCompleted && !h.hasEnd && !h.failedSince && !h.noneYet
}

func (h *ckptHistory) add(p ckptPoint) {
	if len(h.points) == ckptFitPoints {
		h.points = slices.Delete(h.points, 0, 1)
	}
	h.points = append(h.points, p)
}

// completions is how many checkpoints completed since the last readings
// by the window's (jw), as observe counts them: the rise of
// numberOfCompletedCheckpoints, or without it one when
// lastCheckpointDuration or lastCheckpointSize changed.
func (h *ckptHistory) completions(jw *jobWindow) int {
	switch {
	case !jw.hasLastCkptTime || jw.ckLast < 0:
		return 0
	case jw.hasCompleted && h.hasCompleted && jw.completed >= h.completed:
		return int(min(jw.completed-h.completed, 1e6))
	case h.hasMs && (jw.ckLast != h.lastMs || jw.hasBytes && h.hasBytes && jw.bytesLast != h.lastBytes):
		return 1
	}
	return 0
}

// observe reads a closed window's job-scoped checkpoint metrics (jw, its
// failures already a difference, see updateJobCounters): a new completed
// checkpoint, with the barrier wait of the subtask that holds the barrier
// in the window when hasBarrier, or a timeout (see the top of the file).
// windowMs is the slack of a reading's time.
func (h *ckptHistory) observe(jw *jobWindow, timeoutMs float64, windowMs int64, barrier float64, hasBarrier bool) {
	if jw.hasLastCkptTime {
		n := h.completions(jw)
		if jw.hasCompleted {
			h.completed, h.hasCompleted = jw.completed, true
		}
		end := h.ended(jw.ckTS)
		if n > 0 {
			p := ckptPoint{trig: end - int64(math.Round(jw.ckLast)), ms: jw.ckLast,
				bytes: jw.bytesLast, hasBytes: jw.hasBytes, barrier: barrier, hasBarrier: hasBarrier}
			if k := len(h.points); k > 0 && !h.failedSince && !h.points[k-1].timedOut {
				prev := &h.points[k-1]
				// The gap over the checkpoints that completed since:
				// the ones between were not seen.
				if g := float64(p.trig-prev.trig) / float64(n); g > 0 && prev.ms < g/2 {
					if len(h.gaps) == ckptMaxGaps {
						h.gaps = slices.Delete(h.gaps, 0, 1)
					}
					h.gaps = append(h.gaps, g)
				}
			}
			h.add(p)
			h.lastEnd, h.hasEnd, h.failedSince = end, true, false
		}
		h.lastMs, h.hasMs = jw.ckLast, true
	}
	if jw.hasBytes {
		h.lastBytes, h.hasBytes = jw.bytesLast, true
	}
	if jw.failed > 0 && h.hasEnd {
		h.failedSince = true
		failed := h.ended(jw.failTS)
		if trig := failed - int64(timeoutMs); trig >= h.lastEnd-windowMs {
			h.add(ckptPoint{trig: trig, ms: timeoutMs, timedOut: true})
			h.lastEnd = failed
		}
	}
	if jw.hasLastCkptTime {
		h.lastRead, h.hasRead = jw.ckTS, true
	}
	h.noneYet = !h.hasMs && (h.noneYet || jw.noneYet)
}

// ckptForecast is what the trend says at the end of a window.
type ckptForecast struct {
	// ok: the trend reaches the timeout; inMs is the time from the
	// window's end to the next timeout it forecasts (0 when that is
	// overdue). now: the latest checkpoint timed out.
	ok, now bool
	inMs    int64
	// intervalMs is the checkpoint interval the horizon counts in,
	// measured from the job's checkpoints or the configured one.
	intervalMs int64
	measured   bool
	// trend is the trend of the duration over trigger time, and level
	// the duration it starts from, the latest checkpoint's.
	trend ckptTrend
	level float64
	// The trends of the barrier wait (ms per ms) and of the size (bytes
	// per ms), and the latest size, when the checkpoints carry them.
	barrierSlope, bytesSlope, bytes float64
	hasBarrier, hasBytes            bool
	points                          int
}

// intervals is the forecast in checkpoint intervals.
func (f *ckptForecast) intervals() float64 {
	return float64(f.inMs) / float64(f.intervalMs)
}

// forecast fits the trend at the end we of a window (see the top of the
// file) for a job whose checkpoints time out after timeoutMs, counting in
// intervalMs until the job's own interval is measured.
func (h *ckptHistory) forecast(we int64, timeoutMs float64, intervalMs int64) ckptForecast {
	f := ckptForecast{intervalMs: intervalMs}
	if len(h.gaps) >= ckptMinGaps {
		var ga [ckptMaxGaps]float64
		f.intervalMs, f.measured = max(int64(math.Round(medianInPlace(append(ga[:0], h.gaps...)))), 1), true
	}
	n := len(h.points)
	if n < ckptMinPoints || !h.hasEnd || we-h.lastEnd > 2*(int64(timeoutMs)+f.intervalMs) {
		return f
	}
	last := &h.points[n-1]
	if !last.timedOut && last.ms < h.points[n-2].ms && last.ms < h.points[n-3].ms {
		return f // recovering
	}
	t0 := h.points[0].trig
	// The buffers here and below are arrays of ckptFitPoints on the
	// stack: a forecast per job and window allocates nothing.
	var xa, ya [ckptFitPoints]float64
	xs, ys := xa[:n], ya[:n]
	for i, p := range h.points {
		xs[i], ys[i] = float64(p.trig-t0), p.ms
	}
	tr, ok := fitTrend(xs, ys)
	if !ok {
		return f
	}
	f.trend, f.level, f.points = tr, last.ms, n
	f.barrierSlope, f.hasBarrier = h.trend(func(p *ckptPoint) (float64, bool) { return p.barrier, p.hasBarrier && !p.timedOut })
	f.bytesSlope, f.hasBytes = h.trend(func(p *ckptPoint) (float64, bool) { return p.bytes, p.hasBytes && !p.timedOut })
	if f.hasBytes {
		for i := n - 1; i >= 0; i-- {
			if p := &h.points[i]; p.hasBytes && !p.timedOut {
				f.bytes = p.bytes
				break
			}
		}
	}
	f.now = last.timedOut
	if fail, ok := ckptFailure(float64(last.trig), f.level, tr, timeoutMs, float64(f.intervalMs)); ok {
		f.ok, f.inMs = true, int64(math.Max(0, math.Min(math.Ceil(fail-float64(we)), math.MaxInt64/2)))
	}
	return f
}

// ckptMaxSteps bounds the checkpoints ckptFailure walks: a trend that
// needs more to reach the timeout is far beyond any horizon.
const ckptMaxSteps = 200

// ckptFailure is when the trend's next timeout happens, if it does:
// Flink triggers the next checkpoint an interval after the last one's
// trigger, or when it ends (completes, or fails at the timeout) if that
// is later (trigger, duration level: the timeout for one that timed
// out), each takes what the trend says at its trigger, and the first
// whose duration reaches the timeout fails the timeout after its
// trigger. Checkpoints that time out go on timing out while the trend
// does not fall.
func ckptFailure(trig, level float64, tr ckptTrend, timeoutMs, intervalMs float64) (float64, bool) {
	d := level
	for range ckptMaxSteps {
		next := trig + max(intervalMs, min(d, timeoutMs))
		d = tr.at(d, next-trig)
		trig = next
		if d >= timeoutMs {
			return trig + timeoutMs, true
		}
		if tr.slope <= 0 {
			return 0, false
		}
	}
	// Where the trend reaches the timeout, without the steps.
	if tr.exp {
		return trig + math.Log(timeoutMs/d)/tr.slope + timeoutMs, true
	}
	return trig + (timeoutMs-d)/tr.slope + timeoutMs, true
}

// ckptTrend is a trend of checkpoint duration over trigger time: linear
// (slope in ms per ms) or exponential (slope of the logarithm of the
// duration, per ms: growth by a factor per unit of time).
type ckptTrend struct {
	exp   bool
	slope float64
}

// at is the duration dt ms after one of d ms, by the trend.
func (tr ckptTrend) at(d, dt float64) float64 {
	if tr.exp {
		return d * math.Exp(tr.slope*dt)
	}
	return d + tr.slope*dt
}

// perInterval is how much the trend adds to a duration of d ms over
// one interval of iv ms.
func (tr ckptTrend) perInterval(d, iv float64) float64 { return tr.at(d, iv) - d }

// fitTrend fits both trends to the checkpoints (trigger times xs in ms,
// durations ys in ms) with Theil–Sen, the exponential one through the
// logarithms of the durations, and returns the one whose median absolute
// residual is smaller: a backlog that grows by a steady rate makes the
// line, one whose growth itself grows (a sink that slows step by step)
// the exponential.
func fitTrend(xs, ys []float64) (ckptTrend, bool) {
	slope, icpt, ok := theilSen(xs, ys)
	if !ok {
		return ckptTrend{}, false
	}
	var la [ckptFitPoints]float64
	ls := la[:0]
	for _, y := range ys {
		ls = append(ls, math.Log(max(y, 1)))
	}
	rate, lc, _ := theilSen(xs, ls)
	var lina, expa [ckptFitPoints]float64
	lin, exp := lina[:0], expa[:0]
	for i, x := range xs {
		lin = append(lin, math.Abs(ys[i]-(icpt+slope*x)))
		exp = append(exp, math.Abs(ys[i]-math.Exp(lc+rate*x)))
	}
	if medianInPlace(exp) < medianInPlace(lin) {
		return ckptTrend{exp: true, slope: rate}, true
	}
	return ckptTrend{slope: slope}, true
}

// trend is the Theil–Sen slope of a quantity of the checkpoints (of those
// that have it) over trigger time, when at least three have it.
func (h *ckptHistory) trend(get func(*ckptPoint) (float64, bool)) (float64, bool) {
	var xa, ya [ckptFitPoints]float64
	xs, ys := xa[:0], ya[:0]
	for i := range h.points {
		if v, ok := get(&h.points[i]); ok {
			xs = append(xs, float64(h.points[i].trig-h.points[0].trig))
			ys = append(ys, v)
		}
	}
	if len(xs) < 3 {
		return 0, false
	}
	s, _, ok := theilSen(xs, ys)
	return s, ok
}

// theilSen fits y = icpt + slope·x: the median of the slopes between
// every two points of distinct x, and the median of y - slope·x. ok is
// false when no two points have distinct x. It allocates nothing for up
// to ckptFitPoints points.
func theilSen(xs, ys []float64) (slope, icpt float64, ok bool) {
	var sa [ckptFitPoints * (ckptFitPoints - 1) / 2]float64
	slopes := sa[:0]
	for i := range xs {
		for j := i + 1; j < len(xs); j++ {
			if dx := xs[j] - xs[i]; dx != 0 {
				slopes = append(slopes, (ys[j]-ys[i])/dx)
			}
		}
	}
	if len(slopes) == 0 {
		return 0, 0, false
	}
	slope = medianInPlace(slopes)
	var ra [ckptFitPoints]float64
	res := ra[:0]
	for i := range xs {
		res = append(res, ys[i]-slope*xs[i])
	}
	return slope, medianInPlace(res), true
}

// medianInPlace is the median of xs (not empty), which it sorts.
func medianInPlace(xs []float64) float64 {
	slices.Sort(xs)
	m := len(xs) / 2
	if len(xs)%2 == 1 {
		return xs[m]
	}
	return (xs[m-1] + xs[m]) / 2
}

// bytesText formats a size in bytes the way a person says it: 850 B,
// 12.3 MB (decimal units, as Flink's web UI shows checkpoint sizes).
func bytesText(b float64) string {
	units := [...]string{"B", "kB", "MB", "GB", "TB", "PB"}
	i := 0
	for math.Abs(b) >= 1000 && i < len(units)-1 {
		b /= 1000
		i++
	}
	if i == 0 {
		return strconv.FormatFloat(b, 'f', 0, 64) + " B"
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}
