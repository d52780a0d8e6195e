package skew

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
)

// The hot-key rules, the task rule and the subtask rule, are stated in
// docs/detection.md#hot-keys; docs/architecture.md ("The hot-key rules")
// says how their evidence is kept. Here: a key's evidence is pooled over
// the task's last Config.HotKeyPoolWindows windows (updatePool), and a key
// is judged only in a window in which it is a candidate. The task rule
// bounds a key's pooled share with shareLower, from the sketch's
// guaranteed count, against hotKeyThreshold; the subtask rule
// (explainSubtask) bounds its share of a saturated subtask's records, from
// that subtask's own sketch, against Config.HotKeyExcessShare of the
// subtask's excess.

// poolKeys bounds the candidate keys a task adds in a window from its
// own sketch, and again from its subtasks' sketches. The rules report at
// most MaxHotKeys per task and window; the rest give keys that hover near
// a threshold the chance to add their evidence up. A task keeps the
// evidence of at most maxPoolKeys keys: this window's candidates first,
// then up to poolKeys of those of its last HotKeyPoolWindows windows.
const (
	poolKeys    = 64
	maxPoolKeys = 3 * poolKeys
)

// subSketchCandidates is the keys of a subtask's sketch that may become
// candidates in a window.
const subSketchCandidates = 8

// minKeyRecords is the fewest sampled records of a key the subtask rule
// names it on.
const minKeyRecords = 5

// poolWin is one window of a candidate key's evidence.
type poolWin struct {
	ws    int64   // the window's start
	count float64 // the sketch's count, an upper bound of the key's records
	g     float64 // the sketch's guaranteed count, a lower bound
	// weight is the task's sampled records in the window; sub the subtask
	// the key was routed to (-1: unknown), subWeight its sampled records,
	// and subCount and subG the key's count and guaranteed count in the
	// subtask's own sketch (0 when it has none).
	weight         float64
	sub            int32
	subWeight      float64
	subCount, subG float64
}

// poolKey is a candidate key's evidence, in the windows it was a
// candidate in, oldest first.
type poolKey struct {
	key  string
	wins []poolWin
}

// poolTotal is a task's sampled records in one window.
type poolTotal struct {
	ws      int64
	records float64
}

// hotKey is a key one of the rules named in a task's window.
type hotKey struct {
	key     string
	share   float64 // the window's count over the task's sampled records
	margin  float64 // half the 95 % interval of share
	est     float64
	subtask int
	// rule is "task" or "subtask"; lower and th are the lower bound the
	// rule computed and the threshold it was judged against; windows and
	// records the evidence it pooled.
	rule    string
	lower   float64
	th      float64
	windows int
	records float64
	// g is the window's guaranteed count: keys are ranked by it.
	g float64
	// skewsSubtask: the key alone pushes its subtask above SkewRatio
	// (see keySkewsSubtask).
	skewsSubtask bool
	// spread lists the subtasks the key's samples arrived at, when more
	// than one (see keySpread): the key is salted.
	spread []int
	// On a data-skewed subtask (see explainSubtask): the key's share of
	// the subtask's sampled records in the window with its margin, the
	// subtask's excess (1 - 1/ratio) and the part of it the key carries.
	subShare, subMargin, excess, explained float64
}

// Rule names (HotKey.Rule).
const (
	ruleTask    = "task"
	ruleSubtask = "subtask"
)

// shareLower is the exact (Clopper-Pearson) one-sided lower confidence
// bound, at confidence conf, of a share observed as x of n records: the
// conf-quantile complement of Beta(x, n-x+1). It is 0 for x <= 0. Counts
// need not be whole (a weighted sketch's counts are sums of weights): the
// beta quantile is the bound's continuous extension.
func shareLower(x, n, conf float64) float64 {
	if !(n > 0) || !(x > 0) {
		return 0
	}
	x = min(x, n)
	return distuv.Beta{Alpha: x, Beta: n - x + 1}.Quantile(1 - conf)
}

// shareUpper is the exact one-sided upper bound matching shareLower: 1
// for x >= n.
func shareUpper(x, n, conf float64) float64 {
	if !(n > 0) {
		return 1
	}
	x = max(x, 0)
	if x >= n {
		return 1
	}
	return distuv.Beta{Alpha: x + 1, Beta: n - x}.Quantile(conf)
}

// marginZ is the normal quantile of the two-sided 95 % interval findings
// show a share with.
var marginZ = normalQuantile(0.975)

// shareMargin is half the width of the 95 % Wilson score interval of a
// share observed as x of n records: the "± points" a share is shown with.
// It is 0 for n <= 0.
func shareMargin(x, n float64) float64 {
	if !(n > 0) {
		return 0
	}
	p := min(max(x/n, 0), 1)
	z2 := marginZ * marginZ
	return marginZ * math.Sqrt(p*(1-p)/n+z2/(4*n*n)) / (1 + z2/n)
}

// normalQuantile returns z with Φ(z) = p for p in (0, 1).
func normalQuantile(p float64) float64 {
	return math.Sqrt2 * math.Erfinv(2*p-1)
}

// hotKeyThreshold is T(P) of the task rule, for a task of parallelism p
// (0 when unknown: the fair-share term is then left out).
func (e *Engine) hotKeyThreshold(p int) float64 {
	th := e.cfg.HotKeyShare
	if p > 0 {
		th = max(th, e.cfg.HotKeyFairShare/float64(p))
	}
	return th
}

// parallelism is the task's parallelism for the hot-key threshold:
// the routing's when a key sample said it, else the subtasks observed.
func (tc *taskCtx) parallelism() int {
	if p := tc.t.parallelism; p > 0 {
		return p
	}
	return tc.observed
}

// admitSubShare is the share of its subtask's records at which a key
// becomes a candidate by the subtask rule: half the smallest threshold
// that rule can have (the excess of a subtask at SkewRatio).
func (e *Engine) admitSubShare() float64 {
	return e.cfg.HotKeyExcessShare * (1 - 1/e.cfg.SkewRatio) / 2
}

// poolFrom is the start of the oldest window the rules pool at window ws.
func (e *Engine) poolFrom(ws int64) int64 {
	return ws - int64(e.cfg.HotKeyPoolWindows-1)*e.cfg.WindowMs
}

// updatePool adds window ws to the task's evidence: its sampled records,
// and the counts of its candidate keys. A candidate has a guaranteed
// count of at least T/2 of the window's records, or at least
// admitSubShare of its subtask's; the heaviest poolKeys are added.
// Windows older than the pool's reach are dropped, and with them keys
// with no window left. It runs once per task and window, before the
// rules.
func (e *Engine) updatePool(tc *taskCtx, ws int64) {
	t, w := tc.t, tc.w
	from := e.poolFrom(ws)
	old := t.pool
	t.pool = nil
	totals := t.poolTotals[:0]
	for _, pt := range t.poolTotals {
		if pt.ws >= from && pt.ws < ws {
			totals = append(totals, pt)
		}
	}
	t.poolTotals = totals
	// keep trims a key's windows to the pool's reach.
	keep := func(wins []poolWin) []poolWin {
		i := 0
		for i < len(wins) && wins[i].ws < from {
			i++
		}
		return append(wins[:0], wins[i:]...)
	}
	find := func(key string) int {
		i, ok := slices.BinarySearchFunc(old, key, func(p poolKey, k string) int { return strings.Compare(p.key, k) })
		if !ok {
			return -1
		}
		return i
	}
	var next []poolKey
	taken := make([]bool, len(old))
	add := func(key string, win poolWin) {
		pk := poolKey{key: key}
		if i := find(key); i >= 0 {
			pk.key, pk.wins, taken[i] = old[i].key, keep(old[i].wins), true
		}
		pk.wins = append(pk.wins, win)
		next = append(next, pk)
	}
	if w.sketch != nil && w.weight > 0 {
		t.poolTotals = append(t.poolTotals, poolTotal{ws: ws, records: w.weight})
		th := e.hotKeyThreshold(tc.parallelism())
		admitTask, admitSub := th/2*w.weight, e.admitSubShare()
		// The subtask rule looks at subtasks with more than a fair share
		// of the samples that are saturated, or not observed this window
		// (their busy time is not known yet, as in a subtask's first
		// window): keys may be candidates for their share of those
		// subtasks only.
		fair := w.weight / float64(max(len(w.subWeight), tc.t.parallelism, 1))
		excessive := func(i int) bool {
			return i < len(tc.subs) && (tc.subs[i].saturated || !tc.subs[i].observed) && w.subWeight[i] >= fair
		}
		// The task sketch's candidates: heavy in the task, or in such a
		// subtask. Only its heaviest 2·poolKeys counters: TopGuaranteed
		// copies the keys it returns, and the rest of a 1024-counter
		// sketch is the tail (keys on a skewed subtask come from its own
		// sketch below).
		for _, c := range w.sketch.TopGuaranteed(2 * poolKeys) {
			g := c.Count - c.Err
			if !(g > 0) || len(next) == poolKeys {
				break // ranked by g: no later key has a count either
			}
			win := poolWin{ws: ws, count: c.Count, g: g, weight: w.weight, sub: -1}
			if c.Tag >= 0 && int(c.Tag) < len(w.subWeight) {
				win.sub, win.subWeight = c.Tag, w.subWeight[c.Tag]
				if ss := w.subSketch[c.Tag]; ss != nil {
					if cnt, err, ok := ss.Estimate(c.Key); ok {
						win.subCount, win.subG = cnt, cnt-err
					}
				}
			}
			if g < admitTask && !(win.sub >= 0 && excessive(int(win.sub)) && max(g, win.subG) >= admitSub*win.subWeight) {
				continue
			}
			add(c.Key, win)
		}
		// The subtask sketches' candidates on those subtasks: keys that
		// may explain their excess, even when they are far below the task
		// sketch's resolution (at a high parallelism).
		// Heaviest subtasks first (then by index): the cap keeps theirs.
		var subs []int
		for i, ss := range w.subSketch {
			if ss != nil && excessive(i) {
				subs = append(subs, i)
			}
		}
		slices.SortFunc(subs, func(a, b int) int {
			return cmp.Or(cmp.Compare(w.subWeight[b], w.subWeight[a]), cmp.Compare(a, b))
		})
		fromSubs := 0
		for _, i := range subs {
			if fromSubs >= poolKeys {
				break
			}
			for _, c := range w.subSketch[i].TopGuaranteed(subSketchCandidates) {
				g := c.Count - c.Err
				if !(g > 0) || g < admitSub*w.subWeight[i] {
					break
				}
				if slices.ContainsFunc(next, func(p poolKey) bool { return p.key == c.Key }) {
					continue
				}
				win := poolWin{ws: ws, weight: w.weight, sub: int32(i), subWeight: w.subWeight[i], subCount: c.Count, subG: g}
				if cnt, err, ok := w.sketch.Estimate(c.Key); ok {
					win.count, win.g = cnt, cnt-err
				}
				add(c.Key, win)
				if fromSubs++; fromSubs >= poolKeys {
					break
				}
			}
		}
	}
	// Keys that are not candidates now keep their evidence while it is
	// within reach: a key whose share dipped for a window comes back to
	// it. Heaviest last window first.
	var rest []poolKey
	for i := range old {
		if taken[i] {
			continue
		}
		if wins := keep(old[i].wins); len(wins) > 0 {
			rest = append(rest, poolKey{key: old[i].key, wins: wins})
		}
	}
	slices.SortFunc(rest, func(a, b poolKey) int {
		return cmp.Or(cmp.Compare(b.wins[len(b.wins)-1].g, a.wins[len(a.wins)-1].g), strings.Compare(a.key, b.key))
	})
	next = append(next, rest[:min(len(rest), poolKeys)]...)
	slices.SortFunc(next, func(a, b poolKey) int { return strings.Compare(a.key, b.key) })
	t.pool = next
}

// hotKeys applies the task rule to the task's candidates of window ws
// (after updatePool). It returns the hot keys, hottest first (by the
// window's guaranteed count), at most MaxHotKeys.
func (e *Engine) hotKeys(tc *taskCtx, ws int64) []hotKey {
	w := tc.w
	th := e.hotKeyThreshold(tc.parallelism())
	if w.sketch == nil || !(w.weight > 0) {
		return nil
	}
	conf := e.cfg.HotKeyConfidence
	scale := w.est / w.weight
	// The task's sampled records over the pool's reach, the same for
	// every key. A window in which a key was not a candidate counts none
	// of its records (fewer than it had, so the bound stays a lower
	// bound) but all of the task's: skipping such windows would pool only
	// those in which the key happened to be drawn often, and a key just
	// under the threshold would cross it on that selection alone.
	var n float64
	for _, pt := range tc.t.poolTotals {
		n += pt.records
	}
	windows := len(tc.t.poolTotals)
	var out []hotKey
	for i := range tc.t.pool {
		pk := &tc.t.pool[i]
		cur := pk.wins[len(pk.wins)-1]
		if cur.ws != ws || cur.g < th/2*cur.weight {
			continue
		}
		var x float64
		for _, pw := range pk.wins {
			x += pw.g
		}
		// The bound is below the pooled share: most candidates are ruled
		// out without computing it.
		if n < float64(e.cfg.MinSamples) || x <= th*n {
			continue
		}
		lower := shareLower(x, n, conf)
		if lower <= th || shareUpper(cur.count, cur.weight, conf) < th {
			continue
		}
		h := hotKey{key: pk.key, share: cur.count / cur.weight, margin: shareMargin(cur.count, cur.weight),
			est: cur.count * scale, subtask: int(cur.sub), rule: ruleTask, lower: lower, th: th,
			windows: windows, records: n, g: cur.g}
		h.skewsSubtask = e.keySkewsSubtask(tc, h)
		if h.spread = keySpread(w, h.key, cur.count); h.spread != nil {
			h.skewsSubtask = false // no subtask gets it all
		}
		out = append(out, h)
	}
	sortHot(out)
	if len(out) > e.cfg.MaxHotKeys {
		out = out[:e.cfg.MaxHotKeys]
	}
	return out
}

// sortHot orders hot keys by the window's guaranteed count, descending,
// then by key: the order findings and plans list them in.
func sortHot(hs []hotKey) {
	slices.SortFunc(hs, func(a, b hotKey) int {
		return cmp.Or(cmp.Compare(b.g, a.g), strings.Compare(a.key, b.key))
	})
}

// explainSubtask applies the subtask rule to subtask sub of the task,
// saturated with ratio times its peers' median input (ratio >= SkewRatio;
// +Inf when the peers have none) in window ws. It fills the subtask
// fields of the keys in hot that are on it, and returns the keys on it
// the subtask rule names that hot lacks, hottest first (MaxHotKeys in all
// on the subtask at most).
func (e *Engine) explainSubtask(tc *taskCtx, ws int64, sub int, ratio float64, hot []hotKey) []hotKey {
	excess := 1.0
	if !math.IsInf(ratio, 1) {
		excess = 1 - 1/ratio
	}
	th := e.cfg.HotKeyExcessShare * excess
	conf := e.cfg.HotKeyConfidence
	w := tc.w
	scale := 0.0
	if w.weight > 0 {
		scale = w.est / w.weight
	}
	onSub := 0
	for i := range hot {
		if hot[i].subtask == sub {
			onSub++
		}
	}
	var out []hotKey
	for i := range tc.t.pool {
		pk := &tc.t.pool[i]
		cur := pk.wins[len(pk.wins)-1]
		if cur.ws != ws || int(cur.sub) != sub || !(cur.subWeight > 0) || !(cur.subCount > 0) {
			continue
		}
		// The windows the key was on this subtask, newest back. (Windows
		// in which it was not a candidate are left out here: a key the
		// rule can name is a candidate on its subtask in every window but
		// at a few records, at half the rule's smallest threshold.)
		var x, n float64
		windows := 0
		for j := len(pk.wins) - 1; j >= 0 && int(pk.wins[j].sub) == sub; j-- {
			x += pk.wins[j].subG
			n += pk.wins[j].subWeight
			windows++
		}
		subShare := cur.subCount / cur.subWeight
		fill := func(h *hotKey) {
			h.subShare, h.subMargin = subShare, shareMargin(cur.subCount, cur.subWeight)
			h.excess, h.explained = excess, min(subShare/excess, 1)
		}
		if j := slices.IndexFunc(hot, func(h hotKey) bool { return h.key == pk.key }); j >= 0 {
			fill(&hot[j])
			continue
		}
		if x < minKeyRecords || x <= th*n {
			continue
		}
		lower := shareLower(x, n, conf)
		if lower <= th {
			continue
		}
		h := hotKey{key: pk.key, share: cur.count / cur.weight, margin: shareMargin(cur.count, cur.weight),
			est: cur.count * scale, subtask: sub, rule: ruleSubtask, lower: lower, th: th,
			windows: windows, records: n, g: cur.g}
		fill(&h)
		h.skewsSubtask = e.keySkewsSubtask(tc, h)
		if h.spread = keySpread(w, h.key, cur.count); h.spread != nil {
			h.skewsSubtask = false // no subtask gets it all
		}
		out = append(out, h)
	}
	sortHot(out)
	if room := max(e.cfg.MaxHotKeys-onSub, 0); len(out) > room {
		out = out[:room]
	}
	return out
}

// keySkewsSubtask reports whether hot key h alone pushes its subtask above
// the skew ratio, judged from the key samples of the window: the subtask
// gets at least SkewRatio times the median share of its peers, and the
// key's share (its task share's lower bound, or for a key the subtask
// rule named its window share) is at least SkewRatio - 1 times that
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
	share := h.lower
	if h.rule == ruleSubtask {
		share = h.share
	}
	return sub >= e.cfg.SkewRatio*med && share >= (e.cfg.SkewRatio-1)*med
}

// spreadMin is the least part of a key's sampled records a subtask must
// get to count in the key's spread: below it, a subtask's sketch error
// and stray samples.
const spreadMin = 0.05

// keySpread returns the subtasks at which the key's samples arrived in
// window w, each with at least spreadMin of its count there (guaranteed
// by the subtask's sketch), when they are two or more; nil otherwise.
// Flink routes a key to one subtask, and the key sampler runs in the
// keyed operator's subtasks, so a key seen at several is salted: a plan
// is applied.
func keySpread(w *taskWindow, key string, count float64) []int {
	var out []int
	for sub, sk := range w.subSketch {
		if sk == nil {
			continue
		}
		if c, errc, ok := sk.Estimate(key); ok && c-errc >= spreadMin*count {
			out = append(out, sub)
		}
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// saturatedOn reports whether one of subs is saturated as of its latest
// observed window (see saturatedNow).
func (t *taskState) saturatedOn(subs []int) bool {
	for _, i := range subs {
		if i < len(t.subs) && t.subs[i].sustained > 0 {
			return true
		}
	}
	return false
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
