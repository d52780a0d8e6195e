package skew

import "math"

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

func intPtr(i int) *int { return &i }

func boolPtr(b bool) *bool { return &b }

func round(x float64, digits int) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return 0
	}
	p := math.Pow10(digits)
	return math.Round(x*p) / p
}
