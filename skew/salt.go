package skew

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/skewlens/skewlens/skew/keygroup"
)

func defaultMaxParallelism(p int) int { return keygroup.DefaultMaxParallelism(p) }

// How to apply a plan; the same for every plan, so they are constants.
const (
	// The salt is chosen once per record before keyBy and kept in the
	// record: Flink calls a KeySelector more than once per record, so a
	// counter or random number inside it would route records to the
	// wrong key group (docs/salting-plans.md, "Applying a plan").
	applyDataStream = "Two-phase aggregation: before keyBy, pick one of the hot key's salted keys as listed in the plan (e.g. round-robin) in a map step and store it in the record; keyBy that stored salted key (the KeySelector only reads it, never draws a salt itself), aggregate partially per salted key in a short window, then keyBy(original key) and combine the partial results. Keys not in the plan keep their own key."
	applySQL        = "SET 'table.optimizer.agg-phase-strategy' = 'TWO_PHASE' (local-global aggregation, needs mini-batch: table.exec.mini-batch.enabled=true), and for COUNT(DISTINCT) also 'table.optimizer.distinct-agg.split.enabled' = 'true'."
)

// plan proposes salted keys for the task's hot keys, or nil when there is
// nothing worth salting. Loads are the sampled shares per subtask.
//
// Random salts (key#0..key#n-1) often collide on one subtask; here every
// salt is chosen through Flink's own routing so that the salted keys land
// on distinct, least-loaded subtasks.
func (e *Engine) plan(tc *taskCtx, hot []hotKey) *Plan {
	t, w := tc.t, tc.w
	if len(hot) == 0 || !t.hasRouter || t.router.Parallelism < 2 || w.weight <= 0 {
		return nil
	}
	r := t.router
	load := make([]float64, r.Parallelism)
	for i := 0; i < len(w.subWeight) && i < len(load); i++ {
		load[i] = w.subWeight[i] / w.weight
	}
	mean := 1 / float64(r.Parallelism)
	before := slices.Max(load) / mean
	if before < e.cfg.PlanMinImbalance {
		return nil
	}
	p := &Plan{
		Parallelism:       r.Parallelism,
		MaxParallelism:    r.MaxParallelism,
		MaxOverMeanBefore: round(before, 2),
		DataStream:        applyDataStream,
		SQL:               applySQL,
	}
	for _, h := range hot {
		// The subtask Flink routes the unsalted key to, not the one its
		// samples last came from: once a job applies a plan, a salted hot
		// key's samples come from its salted subtasks, and a plan that
		// named one of those as the key's subtask would contradict Flink's
		// routing (the Flink-side client refuses such plans).
		sub := r.Subtask(h.key)
		if sub < 0 || sub >= len(load) {
			continue
		}
		sk := e.saltKey(r, load, h.key, h.share, sub)
		p.Keys = append(p.Keys, sk)
	}
	if len(p.Keys) == 0 {
		return nil
	}
	p.MaxOverMeanAfter = round(slices.Max(load)/mean, 2)
	return p
}

// saltKey plans one hot key and updates load to the predicted loads after
// salting it.
func (e *Engine) saltKey(r keygroup.Router, load []float64, key string, share float64, sub int) SaltedKey {
	load[sub] = max(0, load[sub]-share)
	// First salt that reaches each subtask, searching a bounded number of
	// candidate salts.
	maxN := min(e.cfg.MaxSaltBuckets, r.Parallelism)
	first := make([]int, r.Parallelism)
	for i := range first {
		first[i] = -1
	}
	found := 0
	limit := 64 * r.Parallelism
	salted := make([]byte, 0, len(key)+len(e.cfg.SaltSeparator)+6)
	for s := 0; s < limit && found < r.Parallelism; s++ {
		salted = append(append(salted[:0], key...), e.cfg.SaltSeparator...)
		salted = strconv.AppendInt(salted, int64(s), 10)
		_, st := r.Route(keygroup.StringHash(string(salted)))
		if first[st] < 0 {
			first[st] = s
			found++
		}
	}
	cands := make([]int, 0, found)
	for st, s := range first {
		if s >= 0 {
			cands = append(cands, st)
		}
	}
	// Least loaded first; ties by subtask index so plans are deterministic.
	slices.SortStableFunc(cands, func(a, b int) int {
		switch {
		case load[a] < load[b]:
			return -1
		case load[a] > load[b]:
			return 1
		}
		return a - b
	})
	othersMax := slices.Max(load)
	bestN, bestMax := 1, othersMax+share
	for n := 2; n <= maxN && n <= len(cands); n++ {
		m := othersMax
		for _, st := range cands[:n] {
			m = max(m, load[st]+share/float64(n))
		}
		// More buckets cost more state and fan-out, so take a larger n only
		// for a real improvement.
		if m < bestMax*0.98 {
			bestN, bestMax = n, m
		}
	}
	out := SaltedKey{Key: key, Share: round(share, 4), Subtask: sub, Buckets: bestN}
	if bestN == 1 {
		load[sub] += share
		return out
	}
	chosen := slices.Clone(cands[:bestN])
	slices.SortFunc(chosen, func(a, b int) int { return first[a] - first[b] })
	for _, st := range chosen {
		k := key + e.cfg.SaltSeparator + strconv.Itoa(first[st])
		kg, _ := r.Route(keygroup.StringHash(k))
		out.Salted = append(out.Salted, SaltTarget{Key: k, KeyGroup: kg, Subtask: st})
		load[st] += share / float64(bestN)
	}
	return out
}

func planSummary(task string, p *Plan) string {
	k := p.Keys[0]
	if len(p.Keys) == 1 {
		return fmt.Sprintf("Salt hot key %q of %q into %d buckets on distinct subtasks: predicted max/mean subtask load %.2f → %.2f.",
			k.Key, task, k.Buckets, p.MaxOverMeanBefore, p.MaxOverMeanAfter)
	}
	return fmt.Sprintf("Salt %d hot keys of %q (top %q into %d buckets) on distinct subtasks: predicted max/mean subtask load %.2f → %.2f.",
		len(p.Keys), task, k.Key, k.Buckets, p.MaxOverMeanBefore, p.MaxOverMeanAfter)
}
