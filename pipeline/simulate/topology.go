package simulate

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// The simulated job's topology (task managers, subtasks, ids), its key
// population and alias tables, and the scenario's hot keys.

type bucketKey struct {
	bucket int64
	key    []byte // JSON-quoted
	sub    int
}

func hexID(r *rand.Rand) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], r.Uint64())
	binary.BigEndian.PutUint64(b[8:], r.Uint64())
	return hex.EncodeToString(b[:])
}

func hostName(n int) string {
	return "10.0." + strconv.Itoa(n>>8) + "." + strconv.Itoa(n&255)
}

func (g *Generator) buildTopology() {
	cfg := &g.cfg
	ri := rand.New(rand.NewPCG(cfg.Seed, 0x2545f4914f6cdd1d))
	// Side tasks draw their ids from a stream of their own, so that a job
	// without them is exactly what it was before they existed.
	rside := rand.New(rand.NewPCG(cfg.Seed, 0x5851f42d4c957f2d))
	g.jobID = hexID(ri)
	g.taskIDs = make([]string, len(g.par))
	for t := range g.taskIDs {
		if t < tSide {
			g.taskIDs[t] = hexID(ri)
		} else {
			g.taskIDs[t] = hexID(rside)
		}
	}
	slots := slices.Max(g.par)
	nTM := (slots + cfg.SlotsPerTM - 1) / cfg.SlotsPerTM
	fmtOff := int(cfg.Seed % 3)
	nameOff := int(cfg.Seed % 2)
	jit := min(int64(200), cfg.Interval.Milliseconds()/10)
	pickFormat := func(i int) int {
		switch cfg.MetricFormat {
		case FormatInflux:
			return 1
		case FormatPrometheus:
			return 2
		case FormatMixed:
			return (fmtOff + i) % 3
		}
		return 0
	}
	pickNaming := func(i int) int {
		switch cfg.Naming {
		case NamingLegacy:
			return 0
		case NamingMixed:
			return (nameOff + i) % 2
		}
		return 1
	}
	g.tms = make([]tmInfo, nTM)
	for i := range g.tms {
		tm := &g.tms[i]
		tm.id = hexID(ri)
		tm.host = hostName(i + 2)
		tm.format = pickFormat(i)
		tm.naming = pickNaming(i)
		if jit > 0 {
			tm.jitterMs = ri.Int64N(jit)
		}
	}
	g.jm = tmInfo{host: jmHost, format: pickFormat(nTM), naming: 1}
	g.jmTags = jobTags(jmHost, g.jobID, cfg.JobName)
	// Slot sharing puts subtask i of every task in slot i; slots are
	// spread round-robin over the TaskManagers.
	for t := range g.par {
		for i := range g.par[t] {
			tm := i % nTM
			r := ri
			if t >= tSide {
				r = rside
			}
			s := subtaskInfo{task: t, index: i, tm: tm, attemptID: hexID(r)}
			s.tags = subtaskTags(g.tms[tm].format, g.tms[tm].host, g.tms[tm].id, g.jobID, cfg.JobName, g.taskIDs[t], taskName(t, len(cfg.SideTasks)), s.attemptID, i)
			g.subs = append(g.subs, s)
		}
	}
}

// buildKeys draws the normal-key popularity (a mild Zipf-Mandelbrot law
// over a random ranking of the keys), routes every key once with Flink's
// key-group assignment and builds one alias table per keyed subtask.
func (g *Generator) buildKeys() {
	N := g.cfg.KeySpace
	P := g.par[tKeyed]
	rk := rand.New(rand.NewPCG(g.cfg.Seed, 0x94d049bb133111eb))
	rank := rk.Perm(N) // rank[id] = popularity rank of key id
	q := max(100.0, float64(N)/20)
	w := make([]float64, N)
	sub := make([]int32, N)
	count := make([]int32, P+1)
	var total float64
	buf := make([]byte, 0, 32)
	for id := range N {
		w[id] = math.Pow(float64(rank[id])+1+q, -zipfExponent)
		total += w[id]
		buf = strconv.AppendInt(append(buf[:0], "user"...), int64(id), 10)
		s := g.router.Subtask(string(buf))
		sub[id] = int32(s)
		count[s+1]++
	}
	g.normShare = make([]float64, P)
	g.keyOff = make([]int32, P+1)
	for j := range P {
		g.keyOff[j+1] = g.keyOff[j] + count[j+1]
	}
	g.keyIDs = make([]int32, N)
	fill := make([]int32, P)
	copy(fill, g.keyOff[:P])
	for id := range N {
		s := sub[id]
		g.keyIDs[fill[s]] = int32(id)
		fill[s]++
		w[id] /= total
		g.normShare[s] += w[id]
	}
	if g.cfg.NoKeySamples {
		// Without samples only the shares matter: drop the per-key tables,
		// which would hold ~3 MB per job of 100000 keys.
		g.keyIDs = nil
		return
	}
	g.aliasP = make([]float64, N)
	g.aliasI = make([]int32, N)
	for j := range P {
		lo, hi := g.keyOff[j], g.keyOff[j+1]
		buildAlias(w, g.keyIDs[lo:hi], g.aliasP[lo:hi], g.aliasI[lo:hi])
	}
}

// buildAlias fills a Vose alias table over the weights of ids.
func buildAlias(w []float64, ids []int32, prob []float64, alias []int32) {
	n := len(ids)
	if n == 0 {
		return
	}
	var sum float64
	for _, id := range ids {
		sum += w[id]
	}
	small := make([]int32, 0, n)
	large := make([]int32, 0, n)
	for i, id := range ids {
		prob[i] = w[id] * float64(n) / sum
		if prob[i] < 1 {
			small = append(small, int32(i))
		} else {
			large = append(large, int32(i))
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s := small[len(small)-1]
		small = small[:len(small)-1]
		l := large[len(large)-1]
		alias[s] = l
		prob[l] = prob[l] + prob[s] - 1
		if prob[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, i := range large {
		prob[i], alias[i] = 1, i
	}
	for _, i := range small { // numerical leftovers
		prob[i], alias[i] = 1, i
	}
}

func (g *Generator) buildScenario() {
	cfg := &g.cfg
	P, Ps, Pk := float64(g.par[tKeyed]), float64(g.par[tSource]), float64(g.par[tSink])
	K := P * keyedCapacity
	g.baseCap = []float64{sourceHeadroom * K / Ps, keyedCapacity, sinkHeadroom * K / Pk}
	// A side task's subtasks stay at sideMaxBusy or below when the source
	// reads at its full capacity (sourceHeadroom*K records/s).
	in := sideShare * sourceHeadroom * K
	for t := tSide; t < len(g.par); t++ {
		g.baseCap = append(g.baseCap, in/float64(g.par[t])/sideMaxBusy)
		in *= sideFilter
	}
	h := cfg.HotShare
	g.fixedHotSub = -1
	g.burstFrom, g.burstTo = -1, -1
	switch cfg.Scenario {
	case Healthy:
		g.baseRate = 0.25 * K
	case HotKey, RotatingHotKey:
		g.baseRate = hotHeadroom * keyedCapacity / (h + (1-h)/P)
		if cfg.Scenario == HotKey {
			g.hotKind = 1
			g.fixedHotSub = g.router.Subtask(HotKeyBase)
			g.fixedHotKey = appendJSONString(nil, HotKeyBase)
		} else {
			g.hotKind = 2
		}
	case SlowSink:
		g.baseRate = 0.3 * K
	case UnderProvisioned:
		g.baseRate = 1.6 * K
	case CheckpointTimeout:
		g.baseCap[tSink] = ckSinkCapacity
		g.baseRate = ckBaseLoad * Pk * ckSinkCapacity
		if cfg.Slowdown == nil {
			iv := cfg.Interval.Milliseconds()
			g.burstFrom = g.nInt / 5
			g.burstTo = g.burstFrom + max(2, int((burstMillis+iv-1)/iv))
		}
	}
	if cfg.Rate > 0 {
		g.baseRate = cfg.Rate
	}
}

func (g *Generator) bucketKey(bucket int64) *bucketKey {
	for i := range g.bktKeys {
		if g.bktKeys[i].bucket == bucket {
			return &g.bktKeys[i]
		}
	}
	k := HotKeyBase + "|" + strconv.FormatInt(bucket, 10)
	g.bktKeys = append(g.bktKeys, bucketKey{bucket: bucket, key: appendJSONString(nil, k), sub: g.router.Subtask(k)})
	if len(g.bktKeys) > 8 {
		g.bktKeys = append(g.bktKeys[:0], g.bktKeys[len(g.bktKeys)-4:]...)
	}
	return &g.bktKeys[len(g.bktKeys)-1]
}

func floorBucket(ts int64) int64 { return ts - ts%BucketMillis }
