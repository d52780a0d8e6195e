package skew

import (
	"fmt"
	"strconv"
	"strings"
)

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
