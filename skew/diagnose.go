package skew

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skewlens/skewlens/skew/rescale"
)

type jobCtx struct {
	job   *jobState
	ws    int64
	jw    *jobWindow
	tasks []taskCtx
}

type taskCtx struct {
	t *taskState
	w *taskWindow
	// Computed by taskStats.
	subs      []subStats
	observed  int
	saturated int
	rateSum   float64
	skewScore float64
	maxMedian float64
	maxBP     float64 // the worst subtask's back-pressured ms/s, as Flink rates a task
	medBusy   float64 // median busy ms/s of the observed subtasks
	shareFrom string  // "metrics" or "samples": where input shares came from
}

// Where a subtask's busy time came from in a window.
type timeSrc uint8

const (
	srcNone    timeSrc = iota
	srcGauge           // the *TimeMsPerSecond gauges (60 s moving averages in Flink 2.x)
	srcCounter         // the differences of the accumulate*TimeMs counters
)

var timeSrcNames = [...]string{srcNone: "", srcGauge: "gauge", srcCounter: "counter"}

// subStats is one subtask's view of one window.
type subStats struct {
	observed               bool
	busy, bp, idle         float64
	hasBusy                bool
	busySrc                timeSrc
	input                  float64 // input rate, or sampled weight when rates are missing
	hasInput               bool
	inPool, outPool, queue float64
	outQueue, output       float64
	align, delay           float64
	saturated              bool
	// satFor is how long the busy counter has shown the subtask saturated
	// without a break, up to its last reading (see saturatedRun).
	satFor int64
}

// avg returns the mean of gauge i (one of aBusy...) in the window, and
// whether it was reported.
func avg(a *subAgg, i int) (float64, bool) {
	if a.n[i] == 0 {
		return 0, false
	}
	return a.sum[i] / float64(a.n[i]), true
}

// timeMs returns one of a subtask's times (busy, back-pressured or idle)
// in ms/s for the window, from counter c when the subtask reported it in
// the window, else from gauge. From the counter, it is the increase since
// the counter's last reading before the window (or, without one, from its
// first reading in the window) to its last reading in the window, over the
// time between, clamped to [0, 1000]; a counter that went down (a
// restarted attempt) starts over from its first reading after the drop.
// When that cannot be computed (a single reading, or a drop inside the
// window), pending is set and the gauge is not used instead: it would
// still show the lag, or Flink's start-up reading of 1000, that the
// counter is there to avoid. With Config.BusyFromGauges the counters are
// ignored. The counter's last reading is carried to the next window.
func (e *Engine) timeMs(a *subAgg, h *subHistory, c, gauge int) (v float64, src timeSrc, pending bool) {
	if a.reported(counterName[c]) {
		sp, prev := &a.cnt[c], &h.last[c]
		d, ok := counterRate(sp, prev)
		*prev = reading{ts: sp.lastTS, v: sp.last, ok: true}
		if !e.cfg.BusyFromGauges {
			if !ok {
				return 0, srcNone, true
			}
			return min(max(d, 0), 1000), srcCounter, false
		}
	}
	if g, ok := avg(a, gauge); ok {
		return g, srcGauge, false
	}
	return 0, srcNone, false
}

// saturatedRun returns how long, up to its last reading in the window, the
// busy counter of a has risen at Config.BusyMsPerSecond or more without a
// break, and records where that run began in h.satSince. A run that
// reaches the window's first reading goes on into the last window's when
// the interval from prev (the counter's last reading before the window)
// is saturated too.
func (e *Engine) saturatedRun(a *subAgg, prev reading, h *subHistory) int64 {
	sp := &a.cnt[cBusy]
	from := a.busySatFrom
	if from == sp.firstTS && prev.ok && prev.ts < sp.firstTS &&
		perSecond(prev.v, prev.ts, sp.first, sp.firstTS) >= e.cfg.BusyMsPerSecond {
		from = prev.ts
		if h.satUntil == prev.ts {
			from = h.satSince
		}
	}
	h.satSince, h.satUntil = from, sp.lastTS
	return sp.lastTS - from
}

// counterRate is the per-second increase of a counter over a window (see
// timeMs), and whether there is one.
func counterRate(sp *span, prev *reading) (float64, bool) {
	if sp.last < sp.first {
		return 0, false // restarted inside the window, at an unknown time
	}
	from, fromTS := sp.first, sp.firstTS
	if prev.ok && prev.ts < sp.firstTS && prev.v <= sp.first {
		from, fromTS = prev.v, prev.ts
	}
	if sp.lastTS <= fromTS {
		return 0, false
	}
	return perSecond(from, fromTS, sp.last, sp.lastTS), true
}

// perSecond is a counter's increase per second from reading v0 at t0 to
// v1 at t1 (epoch ms, t1 > t0).
func perSecond(v0 float64, t0 int64, v1 float64, t1 int64) float64 {
	return (v1 - v0) / float64(t1-t0) * 1000
}

// taskStats computes the per-subtask statistics of one window and updates
// the task's cross-window history (sustain counters, counters, queue
// capacity).
func (e *Engine) taskStats(tc *taskCtx, ws int64) {
	t, w := tc.t, tc.w
	n := max(len(w.subs), len(w.subWeight), t.parallelism)
	tc.subs = make([]subStats, n)
	haveRates := false
	for i := range w.subs {
		a := &w.subs[i]
		if a.has == 0 {
			continue
		}
		s := &tc.subs[i]
		h := &t.subs[i]
		prevBusy := h.last[cBusy]
		busy, busySrc, pending := e.timeMs(a, h, cBusy, aBusy)
		s.bp, _, _ = e.timeMs(a, h, cBackPressured, aBackPressured)
		s.idle, _, _ = e.timeMs(a, h, cIdle, aIdle)
		s.busy, s.hasBusy, s.busySrc = busy, busySrc != srcNone, busySrc
		if busySrc != srcNone || pending {
			// Flink reads busyTimeMsPerSecond 1000 on every subtask for
			// about 10 s after a deployment. The counters do not, and a
			// subtask's first window with busy time from the gauge does
			// not count when it reads 1000: it neither counts nor resets,
			// so with --sustain 2 or more the start-up reading alone
			// makes no finding.
			if h.starting && busySrc == srcGauge && busy >= 1000 {
				pending = true
			}
			h.starting = false
		}
		inPool, hasIn := avg(a, aInPool)
		outPool, _ := avg(a, aOutPool)
		s.inPool, s.outPool = inPool, outPool
		s.queue = a.max[mInQueue]
		s.outQueue = a.max[mOutQueue]
		s.output, _ = avg(a, aOutRate)
		s.align = a.max[mAlign] / 1e6 // ns to ms
		s.delay = a.max[mDelay] / 1e6
		// A subtask whose busy time is not known this window (see timeMs)
		// is not observed: its sustain counter neither counts nor resets.
		s.observed = !pending && (s.hasBusy || hasIn)
		if r, ok := avg(a, aInRate); ok {
			s.input, s.hasInput = r, true
		}
		if a.reported(NumRecordsIn) {
			sp, prev := &a.cnt[cRecordsIn], &h.last[cRecordsIn]
			if !s.hasInput {
				switch {
				case prev.ok && sp.lastTS > prev.ts && sp.last >= prev.v:
					s.input, s.hasInput = perSecond(prev.v, prev.ts, sp.last, sp.lastTS), true
				case sp.lastTS > sp.firstTS && sp.last >= sp.first:
					s.input, s.hasInput = perSecond(sp.first, sp.firstTS, sp.last, sp.lastTS), true
				}
			}
			*prev = reading{ts: sp.lastTS, v: sp.last, ok: true}
		}
		haveRates = haveRates || s.hasInput
		if a.reported(InputQueueLength) {
			switch q := s.queue; {
			case q > t.queueMax+0.5:
				t.queueMax, t.queueHits = q, 1
			case q >= t.queueMax-0.5 && q > 0:
				t.queueHits++
			}
		}
		switch {
		case !s.observed:
		case s.hasBusy:
			s.saturated = s.busy >= e.cfg.BusyMsPerSecond
		default:
			s.saturated = inPool >= e.cfg.PoolUsage && outPool < e.cfg.PoolUsage
		}
		if s.observed {
			tc.observed++
			tc.maxBP = max(tc.maxBP, s.bp)
			if busySrc == srcCounter {
				s.satFor = e.saturatedRun(a, prevBusy, h)
			} else {
				h.satSince, h.satUntil = 0, 0
			}
			if s.saturated {
				tc.saturated++
				h.sustained++
				h.held = h.held || h.sustained >= e.cfg.sustainWindows() || s.satFor >= e.cfg.SustainMs
			} else {
				h.sustained, h.held = 0, false
			}
		}
	}
	if tc.observed > 0 {
		busy := make([]float64, 0, tc.observed)
		for i := range tc.subs {
			if tc.subs[i].observed {
				busy = append(busy, tc.subs[i].busy)
			}
		}
		tc.medBusy = median(busy)
	}
	// Input per subtask: measured rates when the metrics have them, else the
	// sampled weight each subtask received.
	var inputs []float64
	if haveRates {
		tc.shareFrom = "metrics"
		for i := range tc.subs {
			if tc.subs[i].hasInput {
				inputs = append(inputs, tc.subs[i].input)
			}
		}
	} else if len(w.subWeight) > 0 {
		tc.shareFrom = "samples"
		for i := range tc.subs {
			s := &tc.subs[i]
			if i < len(w.subWeight) {
				s.input = w.subWeight[i]
			}
			s.hasInput = true
			inputs = append(inputs, s.input)
		}
	}
	for _, x := range inputs {
		tc.rateSum += x
	}
	tc.skewScore = SkewScore(inputs)
	tc.maxMedian = maxOverMedian(inputs)
}

// SkewScore is the data-skew score of the Flink web UI (since 1.20): the
// mean absolute deviation of the subtasks' input divided by its mean, as a
// percentage capped at 100. It is 0 for fewer than two subtasks.
func SkewScore(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(len(xs))
	if mean <= 0 {
		return 0
	}
	var dev float64
	for _, x := range xs {
		dev += math.Abs(x - mean)
	}
	return min(100, dev/float64(len(xs))/mean*100)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

func maxOverMedian(xs []float64) float64 {
	med := median(xs)
	if med <= 0 {
		return 0
	}
	return slices.Max(xs) / med
}

// peerMedian is the median input of the subtasks other than i.
func peerMedian(subs []subStats, i int) float64 {
	peers := make([]float64, 0, len(subs))
	for j := range subs {
		if j != i && subs[j].hasInput {
			peers = append(peers, subs[j].input)
		}
	}
	return median(peers)
}

func (e *Engine) diagnose(ctx *jobCtx, dst []Finding) []Finding {
	ws, we := ctx.ws, ctx.ws+e.cfg.WindowMs
	for i := range ctx.tasks {
		e.taskStats(&ctx.tasks[i], ws)
	}
	first := len(dst)
	for i := range ctx.tasks {
		tc := &ctx.tasks[i]
		base := Finding{JobID: ctx.job.id, JobName: ctx.job.name, TaskName: tc.t.name, WindowStart: ws, WindowEnd: we}
		if e.cfg.EmitStats {
			dst = e.stats(tc, base, dst)
		}
		e.updatePool(tc, ws)
		hot := e.hotKeys(tc, ws)
		saturated := tc.t.saturatedNow()
		// The saturation findings go after the task's hot_key findings,
		// but the subtask rule, which they run, adds hot keys: they are
		// made aside first.
		sat := e.saturation(ctx, tc, base, &hot, e.scratch[:0])
		e.scratch = sat[:0]
		for _, h := range hot {
			on := saturated
			if h.spread != nil {
				on = tc.t.saturatedOn(h.spread)
			}
			dst = append(dst, hotKeyFinding(base, h, on))
		}
		n := len(dst)
		dst = append(dst, sat...)
		clear(sat)
		// A plan re-keys the state of the keys it salts, so it is proposed
		// only where the skew is diagnosed (sustained, on a saturated
		// subtask), not for every window in which a key is merely hot.
		if !diagnosesSkew(dst[n:]) {
			continue
		}
		if p := e.plan(tc, hot); p != nil {
			f := base
			f.Kind = KindSaltingPlan
			f.Plan = p
			f.Summary = planSummary(tc.t.name, p)
			dst = append(dst, f)
		}
	}
	e.linkCheckpoints(ctx, dst[first:])
	return e.checkpointRisk(ctx, dst)
}

// hotKeyFinding is the hot_key finding of h in the task's window (base);
// saturated is whether a subtask of the task is saturated (of a salted
// key: one of those it lands on). A salted key names no subtask.
func hotKeyFinding(base Finding, h hotKey, saturated bool) Finding {
	f := base
	f.Kind = KindHotKey
	if h.subtask >= 0 && h.spread == nil {
		f.SubtaskIndex = intPtr(h.subtask)
	}
	f.HotKey = &HotKey{Key: h.key, Share: round(h.share, 4), ShareMargin: round(h.margin, 4),
		EstimatedRecords: round(h.est, 0), Rule: h.rule,
		ShareLowerBound: round(h.lower, 4), Threshold: round(h.th, 4),
		EvidenceWindows: h.windows, EvidenceRecords: round(h.records, 1),
		SubtaskShare: round(h.subShare, 4), SubtaskShareMargin: round(h.subMargin, 4),
		SubtaskExcess: round(h.excess, 4), ExcessExplained: round(h.explained, 4),
		Saturated: boolPtr(saturated), SkewsSubtask: h.skewsSubtask, Subtasks: h.spread}
	return f
}

// checkpointRisk appends a checkpoint_risk finding for the job's window
// when the trend of its checkpoints says they reach Config.CheckpointTimeoutMs
// within Config.CheckpointForecastHorizon checkpoint intervals (see
// forecast.go), or its lastCheckpointDuration reached
// Config.CheckpointRiskFraction of the timeout, naming the subtask that
// holds up the barrier (see checkpointCulprit). Without a saturated or
// back-pressured subtask there is no finding: slow checkpoints with no
// subtask behind them are not skew (state size or storage), and a finding
// names a task. It first adds the window's checkpoints to the job's
// history, with the barrier wait of that subtask.
func (e *Engine) checkpointRisk(ctx *jobCtx, dst []Finding) []Finding {
	jw := ctx.jw
	if jw == nil {
		return dst
	}
	timeout := float64(e.cfg.CheckpointTimeoutMs)
	h := &ctx.job.ckpt
	// The culprit is looked for only when a checkpoint completed (its
	// barrier wait goes with it) or a finding may be made: it reads every
	// subtask of the job.
	var (
		task string
		sub  int
		s    *subStats
		held bool
	)
	found := false
	culprit := func() {
		if !found {
			task, sub, s, held = e.checkpointCulprit(ctx)
			found = true
		}
	}
	barrier := 0.0
	if h.completions(jw) > 0 {
		if culprit(); held {
			barrier = s.delay + s.align
		}
	}
	h.observe(jw, timeout, e.cfg.WindowMs, barrier, held)
	we := ctx.ws + e.cfg.WindowMs
	fc := h.forecast(we, timeout, e.cfg.CheckpointIntervalMs)
	slow := jw.hasLastCkptTime && jw.lastCkptMs >= e.cfg.CheckpointRiskFraction*timeout
	soon := fc.ok && fc.inMs <= int64(e.cfg.CheckpointForecastHorizon)*fc.intervalMs
	if !slow && !soon {
		return dst
	}
	if culprit(); s == nil {
		return dst
	}
	ev := &Evidence{
		LastCheckpointMs:    jw.lastCkptMs,
		FailedCheckpoints:   jw.failed,
		LastCheckpointBytes: jw.lastCkptBytes,
		CheckpointTimeoutMs: e.cfg.CheckpointTimeoutMs,
	}
	if fc.ok {
		in, n := fc.inMs, round(fc.intervals(), 1)
		ev.ForecastTimeoutInMs, ev.ForecastIntervals = &in, &n
		ev.CheckpointIntervalMs, ev.CheckpointIntervalMeasured = fc.intervalMs, fc.measured
		iv := float64(fc.intervalMs)
		ev.CheckpointTrendMsPerInterval = round(fc.trend.perInterval(fc.level, iv), 1)
		ev.CheckpointTrend = "linear"
		if fc.trend.exp {
			ev.CheckpointTrend = "exponential"
		}
		if fc.hasBarrier {
			ev.BarrierTrendMsPerInterval = round(fc.barrierSlope*iv, 1)
		}
		if fc.hasBytes {
			ev.CheckpointSizeTrendBytesPerInterval = round(fc.bytesSlope*iv, 0)
		}
		ev.ForecastPoints = fc.points
	}
	f := Finding{Kind: KindSaturation, JobID: ctx.job.id, JobName: ctx.job.name,
		WindowStart: ctx.ws, WindowEnd: we}
	var b strings.Builder
	when := "any time now"
	if fc.inMs > 0 {
		when = fmt.Sprintf("in about %s checkpoint intervals of %s (%s)",
			strconv.FormatFloat(*ev.ForecastIntervals, 'f', 1, 64), msText(float64(fc.intervalMs)), msText(float64(fc.inMs)))
	}
	switch {
	case soon && fc.now:
		fmt.Fprintf(&b, "Checkpoints of job %q time out at the %s checkpoint timeout, and by their trend the next one will too, %s", ctx.job.name, msText(timeout), when)
		if jw.hasLastCkptTime {
			fmt.Fprintf(&b, ": the last one that completed took %s", msText(jw.lastCkptMs))
		}
	case soon:
		fmt.Fprintf(&b, "Checkpoints of job %q are forecast to reach the %s checkpoint timeout %s", ctx.job.name, msText(timeout), when)
		if jw.hasLastCkptTime {
			fmt.Fprintf(&b, ": the last one took %s,", msText(jw.lastCkptMs))
		}
	default:
		fmt.Fprintf(&b, "Checkpoints of job %q take %s, %.0f%% of the %s checkpoint timeout: they fail when they reach it",
			ctx.job.name, msText(jw.lastCkptMs), jw.lastCkptMs/timeout*100, msText(timeout))
	}
	if soon && !fc.now {
		if fc.trend.exp {
			fmt.Fprintf(&b, " and they grow by %.0f%% per interval (%s at the last one; exponential trend of the last %d checkpoints)",
				(fc.trend.at(1, float64(fc.intervalMs))-1)*100, msText(ev.CheckpointTrendMsPerInterval), fc.points)
		} else {
			fmt.Fprintf(&b, " and they grow by %s per interval (linear trend of the last %d checkpoints)", msText(ev.CheckpointTrendMsPerInterval), fc.points)
		}
	}
	f.TaskName, f.SubtaskIndex = task, intPtr(sub)
	ev.BusyMsPerSecond, ev.BackPressuredMsPerSecond = round(s.busy, 1), round(s.bp, 1)
	ev.CheckpointAlignMs, ev.CheckpointDelayMs = round(s.align, 1), round(s.delay, 1)
	fmt.Fprintf(&b, "; subtask %d of %q holds up the barrier", sub, task)
	if held {
		fmt.Fprintf(&b, " (start delay %s, alignment %s", msText(s.delay), msText(s.align))
		if soon && ev.BarrierTrendMsPerInterval > 0 {
			fmt.Fprintf(&b, ", growing by %s per interval", msText(ev.BarrierTrendMsPerInterval))
		}
		b.WriteString(")")
	} else {
		b.WriteString(" (it is saturated)")
	}
	b.WriteString(", so relieve it first")
	if soon && fc.hasBytes {
		// Whether the state or the wait for the barrier grows says where
		// the time goes.
		switch g := ev.CheckpointSizeTrendBytesPerInterval; {
		case g > 0 && g >= 0.01*fc.bytes:
			fmt.Fprintf(&b, "; the checkpoint size grows too, by %s per interval to %s", bytesText(g), bytesText(fc.bytes))
		case held && ev.BarrierTrendMsPerInterval > 0:
			fmt.Fprintf(&b, "; the checkpoint size holds at %s, so the wait for the barrier is what grows", bytesText(fc.bytes))
		default:
			fmt.Fprintf(&b, "; the checkpoint size holds at %s", bytesText(fc.bytes))
		}
	}
	b.WriteString(".")
	f.Saturation = &Saturation{Cause: CauseCheckpointRisk, Evidence: ev}
	f.Summary = b.String()
	return append(dst, f)
}

// linkCheckpoints tells, in the summary of every saturation finding of the
// job's window, that the job's checkpoints are slow or failing and which
// subtask holds them up: a saturated or back-pressured subtask delays the
// checkpoint barrier, and the one whose barrier starts latest or aligns
// longest is the one to look at. Checkpoints count as slow when the job's
// lastCheckpointDuration in the window reaches Config.CheckpointRiskFraction
// of Config.CheckpointTimeoutMs, and as failing when
// numberOfFailedCheckpoints rose in the window.
func (e *Engine) linkCheckpoints(ctx *jobCtx, fs []Finding) {
	jw := ctx.jw
	if jw == nil {
		return
	}
	slow := jw.hasLastCkptTime && jw.lastCkptMs >= e.cfg.CheckpointRiskFraction*float64(e.cfg.CheckpointTimeoutMs)
	if !slow && jw.failed <= 0 {
		return
	}
	task, sub, s, held := e.checkpointCulprit(ctx)
	if s == nil {
		return
	}
	var b strings.Builder
	switch {
	case jw.hasLastCkptTime:
		fmt.Fprintf(&b, " Checkpoints take %s", msText(jw.lastCkptMs))
		if jw.failed > 0 {
			fmt.Fprintf(&b, " and %.0f failed in this window", jw.failed)
		}
	case ctx.noCheckpointYet():
		fmt.Fprintf(&b, " No checkpoint of the job has completed yet, and %.0f failed in this window", jw.failed)
	default:
		fmt.Fprintf(&b, " %.0f checkpoints failed in this window", jw.failed)
	}
	fmt.Fprintf(&b, " because subtask %d of %q holds up the barrier", sub, task)
	if held {
		fmt.Fprintf(&b, " (start delay %s, alignment %s)", msText(s.delay), msText(s.align))
	} else {
		b.WriteString(" (it is saturated)")
	}
	b.WriteString(".")
	for i := range fs {
		if fs[i].Kind == KindSaturation && fs[i].Saturation != nil {
			fs[i].Summary += b.String()
		}
	}
}

// noCheckpointYet reports whether the job said, in this window or
// before, that none of its checkpoints has completed (Flink's -1), and
// nothing since showed one: it then has no checkpoint duration and no
// forecast, which its findings say.
func (ctx *jobCtx) noCheckpointYet() bool {
	jw, h := ctx.jw, &ctx.job.ckpt
	return jw != nil && !jw.hasLastCkptTime && !h.hasMs && (jw.noneYet || h.noneYet)
}

// checkpointCulprit picks the subtask that holds up the job's checkpoints:
// among the saturated or back-pressured subtasks of every task, the one
// with the largest checkpoint start delay or alignment time (held true);
// when none reported such times, the busiest saturated subtask (held
// false). Ties go to the first task and subtask, so the choice is
// deterministic. s is nil when no subtask fits.
func (e *Engine) checkpointCulprit(ctx *jobCtx) (task string, sub int, s *subStats, held bool) {
	bestHeld, bestBusy := 0.0, -1.0
	var busiest *subStats
	busyTask, busySub := "", 0
	for i := range ctx.tasks {
		tc := &ctx.tasks[i]
		for j := range tc.subs {
			c := &tc.subs[j]
			if !c.observed || !c.saturated && c.bp < e.cfg.BackPressuredMsPerSecond {
				continue
			}
			if v := max(c.delay, c.align); v > bestHeld {
				bestHeld, task, sub, s, held = v, tc.t.name, j, c, true
			}
			if c.saturated && c.busy > bestBusy {
				bestBusy, busyTask, busySub, busiest = c.busy, tc.t.name, j, c
			}
		}
	}
	if held {
		return task, sub, s, true
	}
	return busyTask, busySub, busiest, false
}

// msText formats a duration in milliseconds the way a person says it:
// 850 ms, 22.9 s, 12.5 min.
func msText(ms float64) string {
	switch {
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	case ms < 60000:
		return fmt.Sprintf("%.1f s", ms/1000)
	default:
		return fmt.Sprintf("%.1f min", ms/60000)
	}
}

// diagnosesSkew reports whether fs holds a data_skew or rotating_hot_key
// finding.
func diagnosesSkew(fs []Finding) bool {
	for i := range fs {
		if fs[i].Saturation != nil && (fs[i].Cause == CauseDataSkew || fs[i].Cause == CauseRotatingHotKey) {
			return true
		}
	}
	return false
}

// saturation classifies the saturated subtasks of one task.
//
// On a subtask with skewed input it runs the subtask rule
// (explainSubtask), which adds to *hot the keys it names.
func (e *Engine) saturation(ctx *jobCtx, tc *taskCtx, base Finding, hot *[]hotKey, dst []Finding) []Finding {
	t := tc.t
	cfg := &e.cfg
	ws := ctx.ws
	if tc.observed == 0 {
		// No report in this window: like per-subtask sustain counters,
		// the task-wide one neither counts nor resets.
		return dst
	}
	// The task as a whole: most subtasks saturated with balanced input.
	mostSaturated := float64(tc.saturated) >= cfg.UnderProvisionedFraction*float64(tc.observed)
	allBusy := tc.saturated > 0 && tc.medBusy >= cfg.UnderProvisionedBusy
	// A task with a single subtask cannot be skewed or slow relative to
	// peers: when it is saturated, it is simply too small.
	single := tc.observed == 1 && max(t.parallelism, len(tc.subs)) == 1
	if (mostSaturated || allBusy) && (single || tc.skewScore <= cfg.BalancedSkewScore && tc.observed >= 2) {
		t.upSustained++
		// The whole task is hot: per-subtask findings would only repeat
		// that, so there are none, even before the condition is sustained.
		if t.upSustained >= cfg.sustainWindows() {
			dst = append(dst, e.underProvisioned(ctx, tc, base))
		}
		return dst
	}
	t.upSustained = 0

	// Which subtask has skewed input this window (for rotation tracking)?
	dominant, domRatio := -1, 0.0
	ratios := make([]float64, len(tc.subs))
	for i := range tc.subs {
		s := &tc.subs[i]
		if !s.saturated || !s.hasInput {
			continue
		}
		if pm := peerMedian(tc.subs, i); pm > 0 {
			ratios[i] = s.input / pm
		} else if s.input > 0 {
			ratios[i] = math.Inf(1)
		}
		if ratios[i] >= cfg.SkewRatio && ratios[i] > domRatio {
			dominant, domRatio = i, ratios[i]
		}
	}
	if dominant >= 0 {
		if t.lastDominant >= 0 && t.lastDominant != dominant &&
			(t.lastDominant >= len(ratios) || ratios[t.lastDominant] < cfg.SkewRatio) {
			t.prevDominant, t.lastMoveWindow, t.hasMoved = t.lastDominant, ws, true
		}
		t.lastDominant = dominant
	}

	var slowHosts map[string]int
	start := len(dst)
	for i := range tc.subs {
		s := &tc.subs[i]
		if i >= len(t.subs) || !s.saturated || !t.subs[i].held {
			continue
		}
		h := &t.subs[i]
		ev := e.evidence(ctx, tc, i)
		ev.VertexID = tc.t.id
		ev.SustainedWindows = h.sustained
		ev.SaturatedForMs = s.satFor
		ev.InputRatio = round(ratios[i], 2)
		w := tc.w
		// The subtask's sampled share over the mean one.
		sampleRatio := 0.0
		if i < len(w.subWeight) && w.weight > 0 {
			sampleRatio = w.subWeight[i] / w.weight * float64(max(len(tc.subs), 1))
		}
		sampleShareSkew := sampleRatio >= cfg.SkewRatio
		// The subtask rule, on the input ratio from the metrics, else on
		// the sampled one.
		r := ratios[i]
		if r < cfg.SkewRatio && sampleShareSkew {
			r = sampleRatio
		}
		var extra []hotKey
		if r >= cfg.SkewRatio {
			extra = e.explainSubtask(tc, ws, i, r, *hot)
		}
		var onSub []hotKey
		for _, k := range *hot {
			if k.subtask == i {
				onSub = append(onSub, k)
			}
		}
		onSub = append(onSub, extra...)
		sampleSkew := len(onSub) > 0 && sampleShareSkew
		if ratios[i] >= cfg.SkewRatio || sampleSkew {
			*hot = append(*hot, extra...)
			for _, k := range onSub {
				ev.HotKeys = append(ev.HotKeys, KeyShare{Key: k.key, Share: round(k.share, 4), ShareMargin: round(k.margin, 4),
					SubtaskShare: round(k.subShare, 4), SubtaskShareMargin: round(k.subMargin, 4)})
				ev.ExcessExplained += k.explained
			}
			if len(onSub) > 0 && r >= cfg.SkewRatio {
				ev.SubtaskExcess = round(onSub[0].excess, 4)
			}
			ev.ExcessExplained = round(min(ev.ExcessExplained, 1), 4)
		}
		f := base
		f.Kind = KindSaturation
		f.SubtaskIndex = intPtr(i)
		sat := &Saturation{Host: h.host, TaskAttemptID: h.attempt, TaskManagerID: h.tmID, Evidence: ev}
		f.Saturation = sat
		switch {
		case ratios[i] >= cfg.SkewRatio || sampleSkew:
			sat.Cause = CauseDataSkew
			bucket := ""
			for _, k := range onSub {
				if timeBucketed(k.key, ws) {
					bucket = k.key
					break
				}
			}
			moved := t.hasMoved && ws-t.lastMoveWindow <= int64(cfg.RotationLookbackWindows)*cfg.WindowMs
			if bucket != "" || moved {
				sat.Cause = CauseRotatingHotKey
				ev.TimeBucketKey = bucket
				if moved {
					ev.PreviousHotSubtask = intPtr(t.prevDominant)
				}
			}
			var move *hotSpotMove
			if moved {
				move = &hotSpotMove{from: t.prevDominant, to: t.lastDominant, windowStart: t.lastMoveWindow}
			}
			f.Summary = skewSummary(base, i, ev, onSub, sat.Cause, move)
		default:
			sat.Cause = CauseSlowSubtask
			ev.Inspect = inspect(base.JobID, tc.t.id, i, h.tmID, h.host)
			if h.host != "" {
				if slowHosts == nil {
					slowHosts = map[string]int{}
				}
				slowHosts[h.host]++
			}
		}
		dst = append(dst, f)
	}
	for k := start; k < len(dst); k++ {
		f := &dst[k]
		if f.Cause == CauseSlowSubtask {
			f.Summary = slowSummary(f, slowHosts[f.Host])
		}
	}
	return dst
}

func (e *Engine) evidence(ctx *jobCtx, tc *taskCtx, i int) *Evidence {
	s := &tc.subs[i]
	ev := &Evidence{
		BusyMsPerSecond:          round(s.busy, 1),
		BackPressuredMsPerSecond: round(s.bp, 1),
		IdleMsPerSecond:          round(s.idle, 1),
		InPoolUsage:              round(s.inPool, 3),
		OutPoolUsage:             round(s.outPool, 3),
		InputQueueLength:         s.queue,
		CheckpointAlignMs:        round(s.align, 1),
		CheckpointDelayMs:        round(s.delay, 1),
		SkewScore:                round(tc.skewScore, 1),
		MaxMedianRatio:           round(tc.maxMedian, 2),
		Subtasks:                 tc.observed,
		SaturatedSubtasks:        tc.saturated,
	}
	if tc.shareFrom == "metrics" {
		ev.RecordsInPerSecond = round(s.input, 1)
		ev.PeerMedianRecordsInPerSecond = round(peerMedian(tc.subs, i), 1)
	}
	if tc.rateSum > 0 {
		ev.InputShare = round(s.input/tc.rateSum, 4)
	}
	if tc.t.queueHits >= 3 {
		ev.QueueCapacity = tc.t.queueMax
	}
	if jw := ctx.jw; jw != nil {
		ev.LastCheckpointMs = jw.lastCkptMs
		ev.FailedCheckpoints = jw.failed
		ev.LastCheckpointBytes = jw.lastCkptBytes
		ev.NoCheckpointYet = ctx.noCheckpointYet()
	}
	for j := range ctx.tasks {
		o := &ctx.tasks[j]
		if o.t != tc.t && o.maxBP >= e.cfg.BackPressuredMsPerSecond {
			ev.UpstreamBackPressed = append(ev.UpstreamBackPressed, o.t.name)
		}
	}
	return ev
}

// underProvisioned builds the task-wide finding with a recommended
// parallelism in the manner of the Flink autoscaler: the true processing
// rate of a subtask is its observed rate divided by its busy ratio, and the
// new parallelism serves the observed input at the target utilisation,
// rounded up to a divisor of the max parallelism so key groups spread
// evenly.
func (e *Engine) underProvisioned(ctx *jobCtx, tc *taskCtx, base Finding) Finding {
	ev := &Evidence{
		SkewScore:         round(tc.skewScore, 1),
		MaxMedianRatio:    round(tc.maxMedian, 2),
		Subtasks:          tc.observed,
		SaturatedSubtasks: tc.saturated,
		SustainedWindows:  tc.t.upSustained,
	}
	var busy, bp, idle, inPool, outPool, trueRate float64
	nTrue := 0
	for i := range tc.subs {
		s := &tc.subs[i]
		if !s.observed {
			continue
		}
		busy += s.busy
		bp += s.bp
		idle += s.idle
		inPool += s.inPool
		outPool += s.outPool
		ev.InputQueueLength = max(ev.InputQueueLength, s.queue)
		ev.CheckpointAlignMs = max(ev.CheckpointAlignMs, round(s.align, 1))
		ev.CheckpointDelayMs = max(ev.CheckpointDelayMs, round(s.delay, 1))
		if s.busy > 0 && s.hasInput && tc.shareFrom == "metrics" {
			trueRate += s.input / (s.busy / 1000)
			nTrue++
		}
	}
	n := float64(tc.observed)
	ev.BusyMsPerSecond = round(busy/n, 1)
	ev.BackPressuredMsPerSecond = round(bp/n, 1)
	ev.IdleMsPerSecond = round(idle/n, 1)
	ev.InPoolUsage = round(inPool/n, 3)
	ev.OutPoolUsage = round(outPool/n, 3)
	if tc.shareFrom == "metrics" {
		ev.RecordsInPerSecond = round(tc.rateSum, 1)
	}
	if jw := ctx.jw; jw != nil {
		ev.LastCheckpointMs = jw.lastCkptMs
		ev.FailedCheckpoints = jw.failed
		ev.LastCheckpointBytes = jw.lastCkptBytes
		ev.NoCheckpointYet = ctx.noCheckpointYet()
	}
	if tc.t.queueHits >= 3 {
		ev.QueueCapacity = tc.t.queueMax
	}
	p := max(tc.t.parallelism, len(tc.subs))
	maxP := tc.t.maxParallelism
	if tc.t.hasRouter {
		maxP = tc.t.router.MaxParallelism
	}
	if maxP == 0 {
		maxP = defaultMaxParallelism(p)
	}
	ev.VertexID, ev.Parallelism, ev.MaxParallelism = tc.t.id, p, maxP
	// With a saturated task the observed input is only a lower bound of the
	// demand (the sources are back-pressured), so this is a floor too.
	var want int
	if nTrue > 0 {
		perSub := trueRate / float64(nTrue)
		ev.TrueRatePerSubtask = round(perSub, 1)
		want = int(math.Ceil(tc.rateSum / (perSub * e.cfg.TargetUtilization)))
	} else {
		want = int(math.Ceil(float64(p) * busy / n / 1000 / e.cfg.TargetUtilization))
	}
	want = max(want, p+1)
	ev.RecommendedParallelism = scaleToDivisor(want, maxP)
	if c, err := rescale.New(base.JobID, rescale.Vertex{ID: tc.t.id, Parallelism: ev.RecommendedParallelism}); err == nil {
		ev.Rescale, _ = c.Forms() // nil when it cannot be written, as without a vertex id
	}
	for j := range ctx.tasks {
		o := &ctx.tasks[j]
		if o.t == tc.t {
			continue
		}
		if o.maxBP >= e.cfg.BackPressuredMsPerSecond {
			ev.UpstreamBackPressed = append(ev.UpstreamBackPressed, o.t.name)
		}
		if max(o.t.parallelism, len(o.subs)) == ev.RecommendedParallelism {
			ev.ChainableWith = append(ev.ChainableWith, o.t.name)
		}
	}
	f := base
	f.Kind = KindSaturation
	f.Saturation = &Saturation{Cause: CauseUnderProvisioned, Evidence: ev}
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d subtasks of %q are saturated (average busy %.0f ms/s) with balanced input (skew score %.0f): the operator is too small; raise its parallelism from %d to at least %d",
		tc.saturated, tc.observed, tc.t.name, ev.BusyMsPerSecond, ev.SkewScore, p, ev.RecommendedParallelism)
	if maxP%p != 0 {
		fmt.Fprintf(&b, " (today subtasks own %d or %d of the %d key groups, so the larger ones saturate first)", maxP/p, maxP/p+1, maxP)
	}
	if ev.RecommendedParallelism > maxP/2 && maxP%ev.RecommendedParallelism != 0 {
		fmt.Fprintf(&b, " (max parallelism %d leaves key groups uneven there; raise it too)", maxP)
	}
	if len(ev.ChainableWith) > 0 {
		fmt.Fprintf(&b, "; at that parallelism it matches %s, so with a forward edge Flink can chain them and save a network shuffle", quoteList(ev.ChainableWith))
	}
	b.WriteString(".")
	f.Summary = b.String()
	return f
}

// scaleToDivisor prefers a parallelism that divides the max parallelism,
// searching upwards to half of it, as the Flink autoscaler does.
func scaleToDivisor(p, maxP int) int {
	if p >= maxP {
		return maxP
	}
	for q := p; q <= maxP/2; q++ {
		if maxP%q == 0 {
			return q
		}
	}
	return p
}

// hotSpotMove is the last move of a task's skewed input from one subtask
// to another: from and to are the subtasks, windowStart the start of the
// window in which it arrived on to.
type hotSpotMove struct {
	from, to    int
	windowStart int64
}

// skewSummary says why subtask i is saturated and what to do. For a
// rotating hot key it says where the hot spot was before (move), or
// that it was not seen elsewhere yet when only the key's time bucket
// gives the rotation away (move nil). The move's time is in UTC, so the
// text is the same wherever it is made.
func skewSummary(base Finding, i int, ev *Evidence, onSub []hotKey, cause string, move *hotSpotMove) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Subtask %d of %q is saturated (busy %.0f ms/s) because it gets %s its peers' input",
		i, base.TaskName, ev.BusyMsPerSecond, ratioText(ev.InputRatio))
	if len(onSub) > 0 {
		k := onSub[0]
		fmt.Fprintf(&b, ": hot key %q carries %s of the task's records", k.key, ShareText(k.share, k.margin))
		if k.subShare > 0 {
			fmt.Fprintf(&b, " and %s of this subtask's", ShareText(k.subShare, k.subMargin))
			if k.excess > 0 {
				fmt.Fprintf(&b, " (%.0f%% of its excess over its peers' median)", k.explained*100)
			}
		}
		if len(onSub) > 1 {
			fmt.Fprintf(&b, " (%d keys named on it)", len(onSub))
		}
	}
	if cause == CauseRotatingHotKey {
		b.WriteString("; the hot key moves between subtasks over time")
		if ev.TimeBucketKey != "" {
			b.WriteString(" because it embeds a time bucket")
		}
		switch {
		case move == nil:
			b.WriteString(" (not seen on another subtask yet)")
		case move.to == i:
			fmt.Fprintf(&b, " (the hot spot was on subtask %d before and moved here in the window starting %s)", move.from, utcTime(move.windowStart))
		default:
			fmt.Fprintf(&b, " (the hot spot was on subtask %d before and moved to subtask %d in the window starting %s)", move.from, move.to, utcTime(move.windowStart))
		}
		b.WriteString(", so drop the time bucket from the key or salt it and aggregate in two phases.")
	} else {
		b.WriteString("; apply the salting plan (two-phase aggregation) for this task.")
	}
	return b.String()
}

// utcTime formats epoch milliseconds for a summary, in UTC with the zone.
func utcTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05 MST")
}

func slowSummary(f *Finding, slowOnHost int) string {
	ev := f.Evidence
	var b strings.Builder
	fmt.Fprintf(&b, "Subtask %d of %q is busy %.0f ms/s while its input is %s its peers': it is slow, not overloaded",
		*f.SubtaskIndex, f.TaskName, ev.BusyMsPerSecond, ratioText(ev.InputRatio))
	if f.Host != "" {
		fmt.Fprintf(&b, "; jstack the TaskManager on host %s", f.Host)
	} else {
		b.WriteString("; jstack its TaskManager")
	}
	var ids []string
	if f.TaskManagerID != "" {
		ids = append(ids, "TaskManager "+f.TaskManagerID)
	}
	if f.TaskAttemptID != "" && f.Host != "" {
		ids = append(ids, "attempt "+f.TaskAttemptID)
	}
	if len(ids) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(ids, ", "))
	}
	if ev.Inspect != nil && ev.Inspect.ThreadDump != "" {
		fmt.Fprintf(&b, " or take its thread dump (%s)", ev.Inspect.ThreadDump)
	}
	b.WriteString(", check its sink client for blocked requests, and look at GC")
	if f.Host != "" && slowOnHost > 1 {
		fmt.Fprintf(&b, "; %d slow subtasks share this host, so suspect the host itself", slowOnHost)
	}
	b.WriteString(".")
	return b.String()
}

// inspect says how to look inside subtask n of vertex vertexID of job
// jobID, running in TaskManager tmID on host: Flink's REST requests for
// the ids known, and jstack on the host as the fallback. Ids from the
// metrics are path-escaped.
func inspect(jobID, vertexID string, n int, tmID, host string) *Inspect {
	in := &Inspect{}
	if jobID != "" && vertexID != "" {
		v := "/jobs/" + url.PathEscape(jobID) + "/vertices/" + url.PathEscape(vertexID)
		in.Subtask = "GET " + v + "/subtasks/" + strconv.Itoa(n)
		in.FlameGraph = "GET " + v + "/flamegraph?type=full&subtaskindex=" + strconv.Itoa(n)
	}
	if tmID != "" {
		in.ThreadDump = "GET /taskmanagers/" + url.PathEscape(tmID) + "/thread-dump"
	}
	where := "the TaskManager's host"
	if host != "" {
		where = "host " + host
	}
	in.Jstack = "on " + where + ": jstack <pid> (the TaskManagerRunner's pid: jps -l)"
	return in
}

// ShareText formats a share (a fraction) with margin, half the width of
// its 95 % interval: "18% ± 3" is 18 % of the records, give or take 3
// percentage points. A share or margin under 1 % keeps one decimal
// ("0.4% ± 0.2", "31% ± 0.6"); a margin that would show as 0.0 shows as
// "<0.1", so a shown margin is never zero. Without a margin (findings
// made before the engine gave one) the share keeps the format it always
// had, one decimal: "31.0%". Summaries, alerts, top and analyze's text
// all write shares with it.
func ShareText(share, margin float64) string {
	if !(margin > 0) {
		return strconv.FormatFloat(share*100, 'f', 1, 64) + "%"
	}
	f := func(x float64) string {
		if math.Abs(x) < 0.01 {
			return strconv.FormatFloat(x*100, 'f', 1, 64)
		}
		return strconv.FormatFloat(x*100, 'f', 0, 64)
	}
	m := f(margin)
	if m == "0.0" {
		m = "<0.1"
	}
	return f(share) + "% ± " + m
}

func ratioText(r float64) string {
	if r == 0 {
		return "an unknown multiple of"
	}
	if math.IsInf(r, 1) {
		return "far more than"
	}
	return strconv.FormatFloat(r, 'f', 1, 64) + "×"
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, ", ")
}

// timeBucketed reports whether key embeds an epoch timestamp (seconds or
// milliseconds, aligned to a whole minute) within a day of the window:
// such keys route a moving hot spot to a new subtask every bucket.
func timeBucketed(key string, ws int64) bool {
	for i := 0; i < len(key); {
		if key[i] < '0' || key[i] > '9' {
			i++
			continue
		}
		j := i
		for j < len(key) && key[j] >= '0' && key[j] <= '9' {
			j++
		}
		if n := j - i; n == 10 || n == 13 {
			v, err := strconv.ParseInt(key[i:j], 10, 64)
			if err == nil {
				if n == 10 {
					v *= 1000
				}
				if v%60000 == 0 && v > ws-86400000 && v < ws+86400000 {
					return true
				}
			}
		}
		i = j
	}
	return false
}

func intPtr(i int) *int { return &i }

func boolPtr(b bool) *bool { return &b }

func round(x float64, digits int) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return 0
	}
	p := math.Pow10(digits)
	return math.Round(x*p) / p
}

// stats emits the subtask_stats rows of one task and window.
func (e *Engine) stats(tc *taskCtx, base Finding, dst []Finding) []Finding {
	// One allocation for the task's stats, not one per subtask: the
	// findings are handed on together, and live as long as each other.
	sts := make([]SubtaskStats, len(tc.subs))
	for i := range tc.subs {
		s := &tc.subs[i]
		if !s.observed {
			continue
		}
		f := base
		f.Kind = KindSubtaskStats
		f.SubtaskIndex = intPtr(i)
		st := &sts[i]
		*st = SubtaskStats{
			BusyMsPerSecond:          round(s.busy, 1),
			BackPressuredMsPerSecond: round(s.bp, 1),
			IdleMsPerSecond:          round(s.idle, 1),
			RecordsOutPerSecond:      round(s.output, 1),
			InPoolUsage:              round(s.inPool, 3),
			OutPoolUsage:             round(s.outPool, 3),
			InputQueueLength:         s.queue,
			OutputQueueLength:        s.outQueue,
			CheckpointAlignMs:        round(s.align, 1),
			CheckpointDelayMs:        round(s.delay, 1),
			Saturated:                s.saturated,
			BusySource:               timeSrcNames[s.busySrc],
			SkewScore:                round(tc.skewScore, 1),
			MaxMedianRatio:           round(tc.maxMedian, 2),
		}
		if tc.shareFrom == "metrics" {
			st.RecordsInPerSecond = round(s.input, 1)
		}
		if tc.rateSum > 0 {
			st.InputShare = round(s.input/tc.rateSum, 4)
		}
		if i < len(tc.t.subs) {
			st.Host, st.TaskAttemptID = tc.t.subs[i].host, tc.t.subs[i].attempt
		}
		if tc.t.queueHits >= 3 {
			st.QueueCapacity = tc.t.queueMax
		}
		f.Stats = st
		dst = append(dst, f)
	}
	return dst
}
