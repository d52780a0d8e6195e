package simulate

import (
	"io"
	"math/rand/v2"

	"github.com/skewlens/skewlens/skew/keygroup"
)

// Task names of the simulated job, in pipeline order.
const (
	SourceTaskName = "Source: kafka"
	KeyedTaskName  = "wideReduce-toNarrow"
	SinkTaskName   = "Sink: es"
)

// HotKeyBase is the hot key of hot_key, and the prefix of the rotating hot
// key "u42|<bucket start ms>".
const HotKeyBase = "u42"

// BucketMillis is the width of the rotating hot key's event-time bucket.
const BucketMillis = 5 * 60 * 1000

// Cause is the ground-truth diagnosis of a scenario, spelled the way the
// engine names causes.
type Cause string

// The causes.
const (
	CauseNone             Cause = ""
	CauseDataSkew         Cause = "data_skew"
	CauseRotatingHotKey   Cause = "rotating_hot_key"
	CauseSlowSubtask      Cause = "slow_subtask"
	CauseUnderProvisioned Cause = "under_provisioned"
)

// The physical constants of the model. See doc.go for why they are what
// they are.
const (
	keyedCapacity   = 25000.0 // records/s one keyed subtask can reduce
	sourceHeadroom  = 2.0     // source total capacity / keyed total capacity
	sinkHeadroom    = 1.6     // sink total capacity / keyed total capacity
	slowSinkFactor  = 0.05    // stuck sink subtask runs at this share of its capacity
	ckSinkCapacity  = 500.0   // records/s of one undersized sink subtask (checkpoint_timeout)
	ckBaseLoad      = 0.7     // checkpoint_timeout: base demand / sink total capacity
	burstFactor     = 3.0     // checkpoint_timeout: demand multiplier during the burst
	burstMillis     = 90000   // checkpoint_timeout: burst length (at least 2 intervals)
	hotHeadroom     = 1.4     // hot scenarios: hot subtask demand / its capacity
	arrivalNoise    = 0.025   // short-term fluctuation of a keyed subtask's arrivals
	arrivalCorrMs   = 1000.0  // and its correlation time
	zipfExponent    = 1.05
	bufferBytes     = 32768 // Flink memory segment
	wideRecBytes    = 512   // Source -> keyed records
	narrowRecBytes  = 32    // keyed -> sink records
	exclusiveBufs   = 2     // taskmanager.network.memory.buffers-per-channel
	floatingBufs    = 8     // taskmanager.network.memory.floating-buffers-per-gate
	maxBufsPerChan  = 10    // taskmanager.network.memory.max-buffers-per-channel
	meterSpanMs     = 60000 // MeterView time span
	timerWindowMs   = 5000  // window of busy/idle/backPressured TimerGauges
	maxStepMs       = 100
	maxStepsPerIntv = 100
	jmHost          = "10.0.0.1"
)

const (
	tSource = iota
	tKeyed
	tSink
	tSide // the first side task (Config.SideTasks); the others follow
)

// Side tasks: a side output of the source takes sideShare of what the
// source emits (rebalanced over the first side task's subtasks) and every
// side task but the last (a sink) passes on sideFilter of its records.
// Their capacity is set so that they stay below sideMaxBusy even with the
// source reading at its full capacity: they are never a bottleneck.
const (
	sideShare   = 0.2
	sideFilter  = 0.8
	sideMaxBusy = 0.6
)

// sideNames are the names of a job's side tasks but the last, in chain
// order; the last one is always sideSinkName.
var sideNames = [MaxSideTasks - 1]string{"Map: audit", "Filter: audit", "Process: audit-enrich", "Window: audit-count"}

const sideSinkName = "Sink: audit-log"

// taskName is the name of task t of a job with nSide side tasks.
func taskName(t, nSide int) string {
	switch {
	case t < tSide:
		return [3]string{SourceTaskName, KeyedTaskName, SinkTaskName}[t]
	case t == tSide+nSide-1:
		return sideSinkName
	}
	return sideNames[t-tSide]
}

// SubtaskInfo describes where one subtask runs and how it reports.
type SubtaskInfo struct {
	TaskName, TaskID string
	Index            int
	Host, TMID       string
	TaskAttemptID    string
	MetricFormat     string // json, influx or prometheus
	Naming           string // legacy or current
}

type tmInfo struct {
	id, host string
	format   int // 0 json, 1 influx, 2 prometheus
	naming   int // 0 legacy, 1 current
	jitterMs int64
}

type subtaskInfo struct {
	task, index, tm int
	attemptID       string
	tags            tagSet
}

// Generator produces the lines of one simulated run, interval by interval.
// A Generator is not safe for concurrent use; separate Generators are
// independent.
type Generator struct {
	names  *nameTable
	cfg    Config
	truth  Truth
	router keygroup.Router
	maxPar int // resolved

	jobID   string
	taskIDs []string
	par     []int // per task: source, keyed, sink, then the side tasks
	off     []int // global index of a task's subtask 0
	subs    []subtaskInfo
	tms     []tmInfo
	jm      tmInfo
	jmTags  tagSet

	// Key population: normal keys grouped by keyed subtask, with one
	// alias table per subtask over the keys it owns.
	normShare []float64 // per keyed subtask
	keyIDs    []int32   // grouped by subtask
	keyOff    []int32   // len P+1
	aliasP    []float64 // aligned with keyIDs
	aliasI    []int32   // local index within the subtask's group

	// Scenario.
	hotKind     int // 0 none, 1 fixed, 2 rotating
	fixedHotSub int
	fixedHotKey []byte // JSON-quoted
	baseRate    float64
	baseCap     []float64 // per task
	burstFrom   int
	burstTo     int // interval indices [from, to)

	// Simulation state.
	rf        *rand.Rand // flow, noise, checkpoints
	rs        *rand.Rand // key samples
	n         int        // next interval
	nInt      int
	lag       float64
	F         []float64 // records queued ahead of each subtask
	capNow    []float64
	cntIn     []float64
	cntOut    []float64
	busyAcc   []float64
	bpAcc     []float64
	winT      float64
	eps       []float64
	idleSat   []float64
	qNoise    []float64
	ckStartNs []int64
	ckAlignNs []int64
	hist      [][]float64 // ring of [in..., out...] snapshots at interval ends

	// ckInterval and ckTimeout are Config.CheckpointInterval and
	// CheckpointTimeout in ms.
	ckInterval, ckTimeout float64
	nextTrig              float64
	pend                  *pendingCkpt
	lastCkDur             int64
	failedCk              int64
	// doneCk counts the completed checkpoints, ckSize is the last one's
	// size, and ckpts lists every checkpoint that ended (Checkpoints).
	doneCk int64
	ckSize int64
	ckpts  []Checkpoint

	// Scratch.
	share   []float64
	shareZ  []float64
	desire  []float64
	sorted  []float64
	newF    []float64
	pK, pZ  []float64
	rK, rZ  []float64
	steps   []stepRec
	stepP   []float64 // per step, P processed records (flat)
	cum     []float64
	curBkt  int64
	curBSub int
	bktKeys []bucketKey
}

// New validates cfg, whose zero fields mean their defaults
// (DefaultConfig), and builds a Generator.
func New(cfg Config) (*Generator, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{cfg: cfg, names: newNameTable()}
	g.router, _ = keygroup.NewRouter(cfg.Parallelism, cfg.MaxParallelism)
	g.maxPar = g.router.MaxParallelism
	g.par = append([]int{cfg.SourceParallelism, cfg.Parallelism, cfg.SinkParallelism}, cfg.SideTasks...)
	g.off = make([]int, len(g.par))
	for t := 1; t < len(g.par); t++ {
		g.off[t] = g.off[t-1] + g.par[t-1]
	}
	g.nInt = cfg.intervals()
	g.rf = rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15))
	g.rs = rand.New(rand.NewPCG(cfg.Seed, 0xd1b54a32d192ed03))
	g.buildTopology()
	g.buildKeys()
	g.buildScenario()
	g.buildTruth()
	nSub := len(g.subs)
	for _, p := range []*[]float64{&g.F, &g.capNow, &g.cntIn, &g.cntOut, &g.busyAcc, &g.bpAcc, &g.eps, &g.idleSat, &g.qNoise, &g.newF} {
		*p = make([]float64, nSub)
	}
	g.ckStartNs = make([]int64, nSub)
	g.ckAlignNs = make([]int64, nSub)
	P, Pk := g.par[tKeyed], g.par[tSink]
	g.share = make([]float64, P)
	g.shareZ = make([]float64, P)
	for j := range g.shareZ {
		g.shareZ[j] = g.rf.NormFloat64()
	}
	g.desire = make([]float64, P)
	g.sorted = make([]float64, P)
	g.pK, g.rK = make([]float64, P), make([]float64, P)
	g.pZ, g.rZ = make([]float64, Pk), make([]float64, Pk)
	g.cum = make([]float64, P)
	ring := int((meterSpanMs+cfg.Interval.Milliseconds()-1)/cfg.Interval.Milliseconds()) + 2
	g.hist = make([][]float64, ring)
	g.ckInterval, g.ckTimeout = float64(cfg.CheckpointInterval.Milliseconds()), float64(cfg.CheckpointTimeout.Milliseconds())
	g.nextTrig = float64(cfg.Start) + g.ckInterval
	g.curBkt = -1
	return g, nil
}

// Config returns the validated configuration, defaults filled in.
func (g *Generator) Config() Config { return g.cfg }

// Subtasks lists every subtask of the job in pipeline order (source,
// keyed, sink; by index within a task).
func (g *Generator) Subtasks() []SubtaskInfo {
	out := make([]SubtaskInfo, len(g.subs))
	for i, s := range g.subs {
		tm := &g.tms[s.tm]
		out[i] = SubtaskInfo{
			TaskName: taskName(s.task, len(g.cfg.SideTasks)), TaskID: g.taskIDs[s.task], Index: s.index,
			Host: tm.host, TMID: tm.id, TaskAttemptID: s.attemptID,
			MetricFormat: formatName(tm.format), Naming: namingName(tm.naming),
		}
	}
	return out
}

func uniform(r *rand.Rand, spread float64) float64 { return 1 + spread*(2*r.Float64()-1) }

// Next appends the lines of the next reporting interval to dst. ok is
// false, and dst is returned unchanged, once Duration is over.
func (g *Generator) Next(dst []byte) (out []byte, ok bool) {
	if g.n >= g.nInt {
		return dst, false
	}
	cfg := &g.cfg
	iv := cfg.Interval.Milliseconds()
	t0 := cfg.Start + int64(g.n)*iv
	t1 := t0 + iv
	r := g.rf

	// Per-interval noise: demand, capacities, display jitter.
	D := g.baseRate * uniform(r, 0.03)
	if g.n >= g.burstFrom && g.n < g.burstTo {
		D *= burstFactor
	}
	slow := 1.0
	if sd := cfg.Slowdown; sd != nil {
		slow = sd.capacity(cfg.Start, t0) * uniform(r, sd.Jitter)
	}
	for i := range g.subs {
		s := &g.subs[i]
		c := g.baseCap[s.task] * uniform(r, 0.01)
		if cfg.Scenario == SlowSink && s.task == tSink && s.index == cfg.SlowSubtask {
			c = g.baseCap[tSink] * slowSinkFactor * uniform(r, 0.1)
		}
		if s.task == tSink {
			c *= slow
		}
		g.capNow[i] = c
		g.eps[i] = 0.02 + 0.03*r.Float64()
		g.idleSat[i] = 3 + 12*r.Float64()
		g.qNoise[i] = 0.5 + r.Float64()
		g.busyAcc[i], g.bpAcc[i] = 0, 0
	}
	g.winT = 0

	nSteps := int(min(maxStepsPerIntv, (iv+maxStepMs-1)/maxStepMs))
	dtMs := float64(iv) / float64(nSteps)
	P := g.par[tKeyed]
	if cap(g.stepP) < nSteps*P {
		g.stepP = make([]float64, nSteps*P)
	}
	g.stepP = g.stepP[:nSteps*P]
	g.steps = g.steps[:0]
	var processed float64
	inBefore := g.sumIn(tKeyed)
	for s := range nSteps {
		a := float64(t0) + float64(s)*dtMs
		b := a + dtMs
		if s == nSteps-1 {
			b = float64(t1)
		}
		inWin := b > float64(t1-timerWindowMs)
		g.step(a, b, D, inWin, g.stepP[s*P:(s+1)*P])
	}
	processed = g.sumIn(tKeyed) - inBefore
	g.snapshot()

	// Samples first: they span [t0, t1) and the reports are stamped t1, so
	// this order keeps the output in event-time order, as a recorded
	// stream would be.
	if !cfg.NoKeySamples {
		dst = g.appendSamples(dst, t1, processed)
	}
	dst = g.appendMetrics(dst, t1)
	g.n++
	return dst, true
}

// snapshot records the cumulative counters at the end of interval g.n for
// the meters' 60-second window.
func (g *Generator) snapshot() {
	i := g.n % len(g.hist)
	n := len(g.subs)
	if g.hist[i] == nil {
		g.hist[i] = make([]float64, 2*n)
	}
	copy(g.hist[i][:n], g.cntIn)
	copy(g.hist[i][n:], g.cntOut)
}

// countAt interpolates counter c (index into a snapshot) at time t; the
// job starts at Start with all counters 0.
func (g *Generator) countAt(c int, t int64) float64 {
	if t <= g.cfg.Start {
		return 0
	}
	iv := g.cfg.Interval.Milliseconds()
	k := (t - g.cfg.Start) / iv // snapshots at Start+(k)*iv ... index k-1
	frac := float64((t-g.cfg.Start)%iv) / float64(iv)
	at := func(k int64) float64 {
		if k <= 0 {
			return 0
		}
		return g.hist[int(k-1)%len(g.hist)][c]
	}
	lo := at(k)
	if frac == 0 {
		return lo
	}
	return lo + (at(k+1)-lo)*frac
}

// WriteTo writes all remaining intervals to w.
func (g *Generator) WriteTo(w io.Writer) (int64, error) {
	var total int64
	// One interval: samples of ~230 bytes, 15 metric lines of ~400 bytes
	// per subtask.
	samples := g.cfg.SamplesPerInterval
	if g.cfg.NoKeySamples {
		samples = 0
	}
	buf := make([]byte, 0, samples*240+len(g.subs)*15*420+4096)
	for {
		var ok bool
		buf, ok = g.Next(buf[:0])
		if !ok {
			return total, nil
		}
		n, err := w.Write(buf)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
}
