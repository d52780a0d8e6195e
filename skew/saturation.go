package skew

import (
	"math"
	"net/url"
	"strconv"
)

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

// hotSpotMove is the last move of a task's skewed input from one subtask
// to another: from and to are the subtasks, windowStart the start of the
// window in which it arrived on to.
type hotSpotMove struct {
	from, to    int
	windowStart int64
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
