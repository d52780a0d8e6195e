package skew

import (
	"math"
	"slices"
)

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
