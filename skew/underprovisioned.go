package skew

import (
	"fmt"
	"math"
	"strings"

	"github.com/skewlens/skewlens/skew/rescale"
)

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
