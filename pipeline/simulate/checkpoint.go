package simulate

import (
	"math"
)

// Checkpoints: triggers, barrier alignment through the queues, completion
// and timeout.

type pendingCkpt struct {
	trig, base0, ack  float64
	kAhead, kCum      []float64
	kDrain            []float64
	zAhead, zCum      []float64
	zDrain, zPass     []float64
	zOwn, zOwnCum     []float64 // the sink's own queue only
	zOwnDrain         []float64
	nK, nZ            int
	allKeyed, minKeyd float64
	done              float64
}

// ckStep advances checkpointing over [a, b): triggers, barrier progress,
// completion and timeout.
func (g *Generator) ckStep(a, b float64) {
	x := a
	for {
		if g.pend == nil {
			if g.nextTrig >= b {
				return
			}
			g.trigger(max(x, g.nextTrig))
			x = g.pend.trig
		}
		p := g.pend
		deadline := p.trig + g.ckTimeout
		end := min(b, deadline)
		g.advance(p, x, end)
		if p.done >= 0 && p.done <= end {
			g.lastCkDur = int64(math.Round(p.done - p.trig))
			g.doneCk++
			g.ckSize = g.stateBytes()
			g.ckpts = append(g.ckpts, Checkpoint{Trigger: int64(math.Round(p.trig)), DurationMs: g.lastCkDur})
			g.nextTrig = max(p.trig+g.ckInterval, p.done)
			g.pend = nil
			x = p.done
			continue
		}
		if end >= deadline {
			g.failedCk++
			g.ckpts = append(g.ckpts, Checkpoint{Trigger: int64(math.Round(p.trig)), DurationMs: int64(g.ckTimeout), TimedOut: true})
			g.nextTrig = max(p.trig+g.ckInterval, deadline)
			g.pend = nil
			x = deadline
			continue
		}
		return
	}
}

func (g *Generator) trigger(t float64) {
	r := g.rf
	P, Pk, Ps := g.par[tKeyed], g.par[tSink], g.par[tSource]
	oK, oZ, oS := g.off[tKeyed], g.off[tSink], g.off[tSource]
	p := &pendingCkpt{trig: t, ack: 250 + 500*r.Float64(), allKeyed: -1, minKeyd: -1, done: -1}
	srcDelay := 1 + 3*r.Float64()
	p.base0 = t + srcDelay + 1
	for i := range Ps {
		g.ckStartNs[oS+i] = int64((srcDelay + 0.2*r.Float64()) * 1e6)
		g.ckAlignNs[oS+i] = 0
	}
	// Side tasks hold no queue: the barrier reaches them right behind the
	// source's, a millisecond or so per task down the chain.
	for t := tSide; t < len(g.par); t++ {
		d := srcDelay + float64(t-tSide+1)*(0.5+r.Float64())
		for i := range g.par[t] {
			g.ckStartNs[g.off[t]+i] = int64((d + 0.2*r.Float64()) * 1e6)
			g.ckAlignNs[g.off[t]+i] = r.Int64N(50_000)
		}
	}
	p.kAhead, p.kCum, p.kDrain = make([]float64, P), make([]float64, P), make([]float64, P)
	p.zAhead, p.zCum, p.zDrain, p.zPass = make([]float64, Pk), make([]float64, Pk), make([]float64, Pk), make([]float64, Pk)
	p.zOwn, p.zOwnCum, p.zOwnDrain = make([]float64, Pk), make([]float64, Pk), make([]float64, Pk)
	var keyedQ float64
	for j := range P {
		p.kAhead[j] = g.F[oK+j]
		keyedQ += g.F[oK+j]
		p.kDrain[j] = -1
	}
	for k := range Pk {
		p.zAhead[k] = g.F[oZ+k] + keyedQ/float64(Pk)
		p.zOwn[k] = g.F[oZ+k]
		p.zDrain[k], p.zPass[k], p.zOwnDrain[k] = -1, -1, -1
	}
	g.pend = p
}

func drainUntil(ahead float64, cum *float64, rate, x, y float64) float64 {
	need := ahead - *cum
	if need <= 0 {
		return x
	}
	got := rate * (y - x)
	if got >= need && rate > 0 {
		*cum = ahead
		return x + need/rate
	}
	*cum += got
	return -1
}

func (g *Generator) advance(p *pendingCkpt, x, y float64) {
	if y < x {
		y = x
	}
	P, Pk, Ps := g.par[tKeyed], g.par[tSink], g.par[tSource]
	oK, oZ := g.off[tKeyed], g.off[tSink]
	r := g.rf
	for j := range P {
		if p.kDrain[j] >= 0 {
			continue
		}
		d := drainUntil(p.kAhead[j], &p.kCum[j], g.rK[j], x, y)
		if d < 0 {
			continue
		}
		p.kDrain[j] = d
		pass := max(p.base0, d)
		first := p.base0 + (pass-p.base0)*(1-0.5/float64(Ps))
		g.ckStartNs[oK+j] = int64((first-p.trig)*1e6) + r.Int64N(50_000)
		g.ckAlignNs[oK+j] = int64((pass-first)*1e6) + r.Int64N(50_000)
		p.nK++
		if p.nK == 1 || pass < p.minKeyd {
			p.minKeyd = pass
		}
		p.allKeyed = max(p.allKeyed, pass)
	}
	for k := range Pk {
		if p.zOwnDrain[k] < 0 {
			p.zOwnDrain[k] = drainUntil(p.zOwn[k], &p.zOwnCum[k], g.rZ[k], x, y)
		}
		if p.zDrain[k] < 0 {
			p.zDrain[k] = drainUntil(p.zAhead[k], &p.zCum[k], g.rZ[k], x, y)
		}
		if p.zPass[k] >= 0 || p.zDrain[k] < 0 || p.nK < P {
			continue
		}
		pass := max(p.allKeyed+1, p.zDrain[k])
		// The first barrier comes from the quickest keyed subtask, behind
		// its channel's part of this sink's own queue.
		first := max(p.minKeyd+1, p.trig+(p.zOwnDrain[k]-p.trig)*(1-0.5/float64(P)))
		first = min(first, pass)
		p.zPass[k] = pass
		g.ckStartNs[oZ+k] = int64((first-p.trig)*1e6) + r.Int64N(50_000)
		g.ckAlignNs[oZ+k] = int64((pass-first)*1e6) + r.Int64N(50_000)
		p.nZ++
		if p.nZ == Pk {
			last := 0.0
			for _, z := range p.zPass {
				last = max(last, z)
			}
			p.done = last + p.ack
		}
	}
}

// stateBytes is the size of a checkpoint of the job's keyed state: about
// 48 bytes per key, for the keys the keyed task has processed records of
// (every record a new key until the key space is covered, a simple bound
// that grows and then levels off as real keyed state does).
func (g *Generator) stateBytes() int64 {
	return 48 * int64(min(float64(g.cfg.KeySpace), g.sumIn(tKeyed)))
}

// Checkpoints returns the checkpoints of the run that ended so far (all
// of them once Next returned false), in the order they ended: completed
// or timed out, as the truth to score a forecast of timeouts against.
func (g *Generator) Checkpoints() []Checkpoint { return append([]Checkpoint(nil), g.ckpts...) }
