package simulate

import (
	"math"
	"slices"
)

// The fluid model of the job: how records flow from the sources through
// the keyed subtasks to the sinks in each step, with network buffers and
// back-pressure.

type stepRec struct {
	a, b float64 // ms
	hs   int     // hot keyed subtask, -1 none
	hf   float64 // share of hs's records that are the hot key
	tot  float64 // eligible processed records
}

// hotSub is the keyed subtask the hot key routes to at time t (ms), or -1.
func (g *Generator) hotSub(t int64) int {
	switch g.hotKind {
	case 1:
		return g.fixedHotSub
	case 2:
		b := floorBucket(t)
		if b != g.curBkt {
			g.curBkt, g.curBSub = b, g.bucketKey(b).sub
		}
		return g.curBSub
	}
	return -1
}

// setShares sets each keyed subtask's share of the records for one step:
// its normal-key share, perturbed by the short-term fluctuation of the
// arrivals (an AR(1) process, 2.5% stationary deviation, 1 s correlation
// time: Poisson counts, Kafka fetch batches, popular keys coming and
// going), plus the hot key on the hot subtask.
func (g *Generator) setShares(hs int, dtMs float64) {
	h := 0.0
	if hs >= 0 {
		h = g.cfg.HotShare
	}
	rho := math.Exp(-dtMs / arrivalCorrMs)
	innov := math.Sqrt(1 - rho*rho)
	var sum float64
	for j := range g.share {
		z := rho*g.shareZ[j] + innov*g.rf.NormFloat64()
		g.shareZ[j] = z
		f := max(0.5, 1+arrivalNoise*z)
		g.share[j] = g.normShare[j] * f
		sum += g.share[j]
	}
	for j := range g.share {
		g.share[j] *= (1 - h) / sum
	}
	if hs >= 0 {
		g.share[hs] += h
	}
}

func (g *Generator) sumIn(task int) float64 {
	var s float64
	for i := range g.par[task] {
		s += g.cntIn[g.off[task]+i]
	}
	return s
}

// step advances the fluid model of the job over [a, b) (epoch ms) at
// demand D records/s.
func (g *Generator) step(a, b, D float64, inWin bool, stepP []float64) {
	dt := (b - a) / 1000
	Ps, P, Pk := g.par[tSource], g.par[tKeyed], g.par[tSink]
	oS, oK, oZ := g.off[tSource], g.off[tKeyed], g.off[tSink]
	hs := g.hotSub(int64(a))
	g.setShares(hs, b-a)

	// Sink side: the most the keyed task may hand over this step. Rebalance
	// splits every keyed subtask's output evenly, so the sink that can take
	// least bounds the total; the records it takes are shared among the
	// keyed subtasks by water-filling (its input gate serves every channel
	// that has data).
	gateZ := float64(exclusiveBufs*P + floatingBufs)
	nB := 0
	for k := range Pk {
		if g.F[oZ+k]/recsPerBuf(narrowRecBytes) > gateZ {
			nB++
		}
	}
	capZ := (gateZ + float64(P)*chanCap(Pk, nB)) * recsPerBuf(narrowRecBytes)
	budget := math.Inf(1)
	for k := range Pk {
		budget = min(budget, float64(Pk)*(max(capZ-g.F[oZ+k], 0)+g.capNow[oZ+k]*dt))
	}

	// Keyed side: the most the source may emit without overflowing a keyed
	// queue (a source blocked on one channel is blocked on all).
	gateK := float64(exclusiveBufs*Ps + floatingBufs)
	nB = 0
	for j := range P {
		if g.F[oK+j]/recsPerBuf(wideRecBytes) > gateK {
			nB++
		}
	}
	capK := (gateK + float64(Ps)*chanCap(P, nB)) * recsPerBuf(wideRecBytes)
	minCs := math.Inf(1)
	for i := range Ps {
		minCs = min(minCs, g.capNow[oS+i])
	}
	eDes := min(float64(Ps)*minCs*dt, D*dt+g.lag)
	E := eDes
	for j := range P {
		if s := g.share[j]; s > 0 {
			if lim := (capK + g.capNow[oK+j]*dt - g.F[oK+j]) / s; lim < E {
				E = max(lim, 0)
			}
		}
	}
	level := g.waterLevel(E, dt, budget)
	if !math.IsInf(level, 1) && !g.feasible(E, dt, budget, capK) {
		lo, hi := 0.0, E
		for range 40 {
			mid := (lo + hi) / 2
			if g.feasible(mid, dt, budget, capK) {
				lo = mid
			} else {
				hi = mid
			}
		}
		E = lo
		level = g.waterLevel(E, dt, budget)
	}
	srcBlocked := E < eDes*(1-1e-9)

	var Y float64
	for j := range P {
		c := g.capNow[oK+j] * dt
		d := g.desire[j] // set by the last waterLevel(E)
		p := min(d, level)
		g.pK[j] = p
		g.newF[oK+j] = g.F[oK+j] + g.share[j]*E - p
		Y += p
		if inWin {
			busy := p / c
			g.busyAcc[oK+j] += busy * dt
			if d > level*(1+1e-9) {
				g.bpAcc[oK+j] += (1 - busy) * dt
			}
		}
	}
	for k := range Pk {
		c := g.capNow[oZ+k] * dt
		in := Y / float64(Pk)
		q := min(c, g.F[oZ+k]+in)
		g.pZ[k] = q
		g.newF[oZ+k] = g.F[oZ+k] + in - q
		if inWin {
			g.busyAcc[oZ+k] += q / c * dt
		}
	}
	for i := range Ps {
		e := E / float64(Ps)
		g.cntIn[oS+i] += e
		g.cntOut[oS+i] += e
		if inWin {
			busy := e / (g.capNow[oS+i] * dt)
			g.busyAcc[oS+i] += busy * dt
			if srcBlocked {
				g.bpAcc[oS+i] += (1 - busy) * dt
			}
		}
	}
	g.sideStep(E, dt, inWin)
	for j := range P {
		g.cntIn[oK+j] += g.pK[j]
		g.cntOut[oK+j] += g.pK[j]
	}
	for k := range Pk {
		g.cntIn[oZ+k] += g.pZ[k]
	}
	if inWin {
		g.winT += dt
	}
	g.lag = max(0, g.lag+D*dt-E)

	// Checkpoints see the queues as they were at the start of the step.
	for j := range P {
		g.rK[j] = g.pK[j] / (b - a)
	}
	for k := range Pk {
		g.rZ[k] = g.pZ[k] / (b - a)
	}
	g.ckStep(a, b)
	copy(g.F[oK:], g.newF[oK:])

	// Record the step for key sampling.
	rec := stepRec{a: a, b: b, hs: hs}
	if hs >= 0 {
		rec.hf = min(1, g.cfg.HotShare/g.share[hs])
	}
	for j := range P {
		p := g.pK[j]
		if g.keyOff[j+1] == g.keyOff[j] && j != hs {
			p = 0 // nothing to sample from (queue left over from an old hot key)
		}
		stepP[j] = p
		rec.tot += p
	}
	g.steps = append(g.steps, rec)
}

// waterLevel sets the keyed subtasks' desires for an emission of E records
// and returns the per-subtask output level the sink budget allows (+Inf
// when it does not bind).
func (g *Generator) waterLevel(E, dt, budget float64) float64 {
	oK := g.off[tKeyed]
	var sum float64
	for j := range g.desire {
		d := min(g.capNow[oK+j]*dt, g.F[oK+j]+g.share[j]*E)
		g.desire[j] = d
		sum += d
	}
	if sum <= budget {
		return math.Inf(1)
	}
	s := g.sorted
	copy(s, g.desire)
	slices.Sort(s)
	rem := budget
	for i, v := range s {
		if n := float64(len(s) - i); v*n >= rem {
			return rem / n
		}
		rem -= v
	}
	return s[len(s)-1]
}

// feasible reports whether the source may emit E records this step without
// overflowing a keyed queue.
func (g *Generator) feasible(E, dt, budget, capK float64) bool {
	level := g.waterLevel(E, dt, budget)
	oK := g.off[tKeyed]
	for j, d := range g.desire {
		if g.F[oK+j]+g.share[j]*E-min(d, level) > capK*(1+1e-9)+1e-9 {
			return false
		}
	}
	return true
}

func recsPerBuf(recBytes int) float64 { return float64(bufferBytes / recBytes) }

// chanCap is how many buffers one sender may queue for one receiver when
// nBacked of its n receivers are backed up: capped by
// max-buffers-per-channel and by the sender's pool of 2n+8 buffers.
func chanCap(n, nBacked int) float64 {
	pool := exclusiveBufs*n + floatingBufs
	return float64(min(maxBufsPerChan, max(1, pool/max(1, nBacked))))
}

// upstream is the task that feeds task t: the source feeds the keyed task
// and the first side task.
func upstream(t int) int {
	if t == tSide {
		return tSource
	}
	return t - 1
}

// isSink reports whether task t writes out of the job (no output gates,
// numRecordsOut 0).
func (g *Generator) isSink(t int) bool { return t == tSink || t == len(g.par)-1 && t >= tSide }

// sideStep moves the side output of the source's emission of E records
// through the side tasks. They have ample capacity (sideMaxBusy) and no
// queue, so each processes what it receives in the same step and is never
// back-pressured.
func (g *Generator) sideStep(E, dt float64, inWin bool) {
	in := E * sideShare
	for t := tSide; t < len(g.par); t++ {
		per := in / float64(g.par[t])
		for i := range g.par[t] {
			k := g.off[t] + i
			g.cntIn[k] += per
			if !g.isSink(t) {
				g.cntOut[k] += per * sideFilter
			}
			if inWin {
				g.busyAcc[k] += per / (g.capNow[k] * dt) * dt
			}
		}
		in *= sideFilter
	}
}
