package skew

import "math"

// The hot-key rule. A key is hot in a task and window when the lower
// one-sided Wilson bound of its share, at Config.HotKeyConfidence, is
// above the threshold
//
//	T(P, n) = max(HotKeyShare, HotKeyFairShare/P, resolution(n))
//
// where P is the task's parallelism and n its key samples in the window.
// The share the bound starts from is the sketch's guaranteed lower count
// (Space-Saving's count minus its error) over the task's sampled weight,
// so the sketch's overestimate cannot make a key hot either.
//
// The first two terms tie the threshold to the fair share 1/P with an
// absolute floor. The third is what n samples can tell apart: a key needs
// a few dozen samples before its share is known well enough, so with few
// samples the threshold rises to the share r at which a key of twice r
// still passes the test in all but about one window in a million
// (Config.HotKeyMissRate). Without it a key at twice a small threshold
// would be missed in many windows; with it the rule keeps two promises at
// every parallelism and sample count: a key at 0.8 T is reported in well
// under 0.5 % of windows, and a key at 2 T in every window.
// hotkey_test.go measures both.
//
// Hot keys are reported whether or not their task is saturated, with
// labels (HotKey.Saturated, HotKey.SkewsSubtask) that say whether they
// may raise an alert (HotKey.Actionable).

// normalQuantile returns z with Φ(z) = p for p in (0, 1).
func normalQuantile(p float64) float64 {
	return math.Sqrt2 * math.Erfinv(2*p-1)
}

// wilsonLower is the lower end of the Wilson score interval of a
// proportion x/n at standard normal quantile z: the smallest share p for
// which x/n - p <= z·sqrt(p(1-p)/n). It is 0 for n <= 0.
func wilsonLower(x, n, z float64) float64 {
	if !(n > 0) {
		return 0
	}
	p := min(max(x/n, 0), 1)
	z2 := z * z
	centre := p + z2/(2*n)
	half := z * math.Sqrt(p*(1-p)/n+z2/(4*n*n))
	return max((centre-half)/(1+z2/n), 0)
}

// hotKeyResolution is the smallest threshold r in (0, 0.5] that n samples
// resolve: a key with share 2r has, zMiss standard deviations below its
// expected count, a count whose Wilson bound at z is still above r. (For
// r <= 0.5, the bound of x/n is above r exactly when
// x > nr + z·sqrt(nr(1-r)), the one-sided score test.) It is 0.5 when not
// even that resolves, which needs n <= z², and tends to 0 when z and
// zMiss are 0.
func hotKeyResolution(n int, z, zMiss float64) float64 {
	nf := float64(n)
	passes := func(r float64) bool {
		low := 2*nf*r - zMiss*math.Sqrt(2*nf*r*(1-2*r))
		return low >= nf*r+z*math.Sqrt(nf*r*(1-r))
	}
	lo, hi := 0.0, 0.5
	if n <= 0 || !passes(hi) {
		return hi
	}
	// passes is monotone in r on (0, 0.5]: bisect to well below any share
	// a finding prints (4 decimals).
	for range 40 {
		mid := (lo + hi) / 2
		if passes(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// hotKeyThreshold is T(P, n) of the rule above, for a task of parallelism
// p (0 when unknown: the fair-share term is then left out) with n key
// samples in the window.
func (e *Engine) hotKeyThreshold(p, n int) float64 {
	th := e.cfg.HotKeyShare
	if p > 0 {
		th = max(th, e.cfg.HotKeyFairShare/float64(p))
	}
	return max(th, hotKeyResolution(n, normalQuantile(e.cfg.HotKeyConfidence), normalQuantile(1-e.cfg.HotKeyMissRate)))
}

// isHot applies the rule to a key with sampled lower-bound weight lower
// among n samples of total weight total, against threshold th. It returns
// the key's share lower bound (the Wilson bound) and whether it is hot.
// The weight is counted as lower/total·n samples, so weighted samples are
// judged by their number, not their weights.
func (e *Engine) isHot(lower, total float64, n int, th float64) (bound float64, hot bool) {
	if !(total > 0) || n <= 0 {
		return 0, false
	}
	x := max(lower, 0) / total * float64(n)
	bound = wilsonLower(x, float64(n), normalQuantile(e.cfg.HotKeyConfidence))
	return bound, bound > th
}

type hotKey struct {
	key     string
	share   float64 // the sketch's count over the task's weight
	lower   float64 // the Wilson lower bound of the share
	est     float64
	subtask int
	// skewsSubtask: the key alone pushes its subtask above SkewRatio
	// (see keySkewsSubtask).
	skewsSubtask bool
}

// hotKeys returns the task's hot keys of the window, hottest first, with
// the threshold they were judged against.
func (e *Engine) hotKeys(tc *taskCtx) ([]hotKey, float64) {
	w := tc.w
	if w.sketch == nil || w.samples < e.cfg.MinSamples || w.weight <= 0 {
		return nil, 0
	}
	p := tc.t.parallelism
	if p == 0 {
		p = tc.observed
	}
	th := e.hotKeyThreshold(p, w.samples)
	var out []hotKey
	scale := w.est / w.weight
	// Keys come by their guaranteed count (the sketch's count minus its
	// error), the count the rule judges, so the hottest are reported
	// first and MaxHotKeys keeps them. The Wilson bound is below the
	// share it starts from (HotKeyConfidence is at least 0.5), so once a
	// guaranteed share is at or below the threshold no later key is hot.
	for _, c := range w.sketch.TopGuaranteed(0) {
		if (c.Count-c.Err)/w.weight <= th {
			break
		}
		share := c.Count / w.weight
		lower, hot := e.isHot(c.Count-c.Err, w.weight, w.samples, th)
		if !hot {
			continue
		}
		h := hotKey{key: c.Key, share: share, lower: lower, est: c.Count * scale, subtask: int(c.Tag)}
		h.skewsSubtask = e.keySkewsSubtask(tc, h)
		out = append(out, h)
		if len(out) == e.cfg.MaxHotKeys {
			break
		}
	}
	return out, th
}

// keySkewsSubtask reports whether hot key h alone pushes its subtask above
// the skew ratio, judged from the key samples of the window: the subtask
// gets at least SkewRatio times the median share of its peers, and the
// key's share (its lower bound) is at least SkewRatio - 1 times that
// median, so a subtask with a typical peer's load and this key would be
// there too. A key spread over many subtasks (a task that is not keyed by
// it, such as an upstream source) does not skew the subtask it was last
// seen on.
func (e *Engine) keySkewsSubtask(tc *taskCtx, h hotKey) bool {
	w := tc.w
	n := max(len(w.subWeight), tc.t.parallelism)
	if h.subtask < 0 || h.subtask >= len(w.subWeight) || n < 2 || !(w.weight > 0) {
		return false
	}
	peers := make([]float64, 0, n-1)
	for i := range n {
		if i == h.subtask {
			continue
		}
		var v float64
		if i < len(w.subWeight) {
			v = w.subWeight[i]
		}
		peers = append(peers, v/w.weight)
	}
	med := median(peers)
	sub := w.subWeight[h.subtask] / w.weight
	return sub >= e.cfg.SkewRatio*med && h.lower >= (e.cfg.SkewRatio-1)*med
}

// saturatedNow reports whether a subtask of the task is saturated as of
// its latest observed window (after taskStats of this window): a window
// without a report from a subtask keeps what its last report showed, as
// the sustain counters do.
func (t *taskState) saturatedNow() bool {
	for i := range t.subs {
		if t.subs[i].sustained > 0 {
			return true
		}
	}
	return false
}
