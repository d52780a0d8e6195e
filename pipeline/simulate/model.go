package simulate

import (
	"encoding/binary"
	"encoding/hex"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

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
	ckIntervalMs    = 30000 // execution.checkpointing.interval
	ckTimeoutMs     = 60000 // execution.checkpointing.timeout
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
)

func taskName(t int) string { return [3]string{SourceTaskName, KeyedTaskName, SinkTaskName}[t] }

// SubtaskInfo describes where one subtask runs and how it reports.
type SubtaskInfo struct {
	TaskName, TaskID string
	Index            int
	Host, TMID       string
	TaskAttemptID    string
	MetricFormat     string // json, influx or prometheus
	Naming           string // legacy or current
}

// HotSpan is a time span during which one hot key saturates one keyed
// subtask.
type HotSpan struct {
	From, To      int64 // epoch ms, [From, To)
	Key           string
	Subtask       int
	Host          string
	TaskAttemptID string
}

// Truth is the ground truth of a generated run: what the engine should
// find. It is fixed by the Config and known before any line is generated.
type Truth struct {
	Scenario Scenario
	Cause    Cause
	JobID    string
	JobName  string
	// TaskName and TaskID name the task with the cause; empty when healthy.
	TaskName, TaskID string
	// Subtask is the culprit subtask index, or -1 when the cause is
	// task-wide (under_provisioned, checkpoint_timeout), moves
	// (rotating_hot_key: see Hot) or there is none (healthy).
	Subtask int
	// Host, TMID and TaskAttemptID of Subtask (empty when Subtask is -1).
	Host, TMID, TaskAttemptID string
	// HotKeys are the hot keys in time order (hot_key: one; rotating: one
	// per 5-minute bucket the run touches).
	HotKeys []string
	// Hot lists, per time span, the hot key and the keyed subtask it
	// saturates (hot_key: one span, rotating_hot_key: one per bucket).
	Hot []HotSpan
	// From and To bound the incident's cause in epoch ms: the whole run,
	// or for checkpoint_timeout the demand burst (the sink stays saturated
	// after it until the backlog drains).
	From, To int64
	// Parallelism and MaxParallelism of the keyed task (MaxParallelism
	// resolved to Flink's default when the Config left it 0).
	Parallelism, MaxParallelism int
	// DemandRate is the base demand in records/s (before noise and burst).
	DemandRate float64
	// Healthy per-subtask capacities in records/s.
	SourceCapacity, KeyedCapacity, SinkCapacity float64
	// SlowCapacity is the stuck sink subtask's capacity (slow_sink only).
	SlowCapacity float64
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

type stepRec struct {
	a, b float64 // ms
	hs   int     // hot keyed subtask, -1 none
	hf   float64 // share of hs's records that are the hot key
	tot  float64 // eligible processed records
}

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
	taskIDs [3]string
	par     [3]int
	off     [3]int // global index of a task's subtask 0
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
	baseCap     [3]float64
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

	nextTrig  float64
	pend      *pendingCkpt
	lastCkDur int64
	failedCk  int64

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

type bucketKey struct {
	bucket int64
	key    []byte // JSON-quoted
	sub    int
}

// New validates cfg and builds a Generator.
func New(cfg Config) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	g := &Generator{cfg: cfg, names: newNameTable()}
	g.router, _ = keygroup.NewRouter(cfg.Parallelism, cfg.MaxParallelism)
	g.maxPar = g.router.MaxParallelism
	g.par = [3]int{cfg.SourceParallelism, cfg.Parallelism, cfg.SinkParallelism}
	g.off = [3]int{0, g.par[0], g.par[0] + g.par[1]}
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
	g.nextTrig = float64(cfg.Start + ckIntervalMs)
	g.curBkt = -1
	return g, nil
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
	g.jobID = hexID(ri)
	for t := range g.taskIDs {
		g.taskIDs[t] = hexID(ri)
	}
	slots := max(g.par[0], g.par[1], g.par[2])
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
	for t := range 3 {
		for i := range g.par[t] {
			tm := i % nTM
			s := subtaskInfo{task: t, index: i, tm: tm, attemptID: hexID(ri)}
			s.tags = subtaskTags(g.tms[tm].host, g.tms[tm].id, g.jobID, cfg.JobName, g.taskIDs[t], taskName(t), s.attemptID, i)
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
	g.baseCap = [3]float64{sourceHeadroom * K / Ps, keyedCapacity, sinkHeadroom * K / Pk}
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
		iv := cfg.Interval.Milliseconds()
		g.burstFrom = g.nInt / 5
		g.burstTo = g.burstFrom + max(2, int((burstMillis+iv-1)/iv))
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

func (g *Generator) buildTruth() {
	cfg := &g.cfg
	end := cfg.Start + int64(g.nInt)*cfg.Interval.Milliseconds()
	t := Truth{
		Scenario: cfg.Scenario, JobID: g.jobID, JobName: cfg.JobName, Subtask: -1,
		From: cfg.Start, To: end, Parallelism: g.par[tKeyed], MaxParallelism: g.maxPar,
		DemandRate: g.baseRate, SourceCapacity: g.baseCap[tSource], KeyedCapacity: g.baseCap[tKeyed],
		SinkCapacity: g.baseCap[tSink],
	}
	setTask := func(task int) { t.TaskName, t.TaskID = taskName(task), g.taskIDs[task] }
	setSub := func(task, i int) {
		t.Subtask = i
		s := &g.subs[g.off[task]+i]
		t.Host, t.TMID, t.TaskAttemptID = g.tms[s.tm].host, g.tms[s.tm].id, s.attemptID
	}
	span := func(from, to int64, key string, sub int) HotSpan {
		s := &g.subs[g.off[tKeyed]+sub]
		return HotSpan{From: from, To: to, Key: key, Subtask: sub, Host: g.tms[s.tm].host, TaskAttemptID: s.attemptID}
	}
	switch cfg.Scenario {
	case HotKey:
		t.Cause = CauseDataSkew
		setTask(tKeyed)
		setSub(tKeyed, g.fixedHotSub)
		t.HotKeys = []string{HotKeyBase}
		t.Hot = []HotSpan{span(cfg.Start, end, HotKeyBase, g.fixedHotSub)}
	case RotatingHotKey:
		t.Cause = CauseRotatingHotKey
		setTask(tKeyed)
		for b := floorBucket(cfg.Start); b < end; b += BucketMillis {
			k := HotKeyBase + "|" + strconv.FormatInt(b, 10)
			t.HotKeys = append(t.HotKeys, k)
			t.Hot = append(t.Hot, span(max(b, cfg.Start), min(b+BucketMillis, end), k, g.router.Subtask(k)))
		}
	case SlowSink:
		t.Cause = CauseSlowSubtask
		setTask(tSink)
		setSub(tSink, cfg.SlowSubtask)
		t.SlowCapacity = g.baseCap[tSink] * slowSinkFactor
	case UnderProvisioned:
		t.Cause = CauseUnderProvisioned
		setTask(tKeyed)
	case CheckpointTimeout:
		t.Cause = CauseUnderProvisioned
		setTask(tSink)
		iv := cfg.Interval.Milliseconds()
		t.From = cfg.Start + int64(g.burstFrom)*iv
		t.To = min(end, cfg.Start+int64(g.burstTo)*iv)
	}
	g.truth = t
}

// Truth returns the ground truth of the run.
func (g *Generator) Truth() Truth {
	t := g.truth
	t.HotKeys = append([]string(nil), t.HotKeys...)
	t.Hot = append([]HotSpan(nil), t.Hot...)
	return t
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
			TaskName: taskName(s.task), TaskID: g.taskIDs[s.task], Index: s.index,
			Host: tm.host, TMID: tm.id, TaskAttemptID: s.attemptID,
			MetricFormat: formatName(tm.format), Naming: namingName(tm.naming),
		}
	}
	return out
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
	for i := range g.subs {
		s := &g.subs[i]
		c := g.baseCap[s.task] * uniform(r, 0.01)
		if cfg.Scenario == SlowSink && s.task == tSink && s.index == cfg.SlowSubtask {
			c = g.baseCap[tSink] * slowSinkFactor * uniform(r, 0.1)
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
	dst = g.appendSamples(dst, t1, processed)
	dst = g.appendMetrics(dst, t1)
	g.n++
	return dst, true
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
		deadline := p.trig + ckTimeoutMs
		end := min(b, deadline)
		g.advance(p, x, end)
		if p.done >= 0 && p.done <= end {
			g.lastCkDur = int64(math.Round(p.done - p.trig))
			g.nextTrig = max(p.trig+ckIntervalMs, p.done)
			g.pend = nil
			x = p.done
			continue
		}
		if end >= deadline {
			g.failedCk++
			g.nextTrig = max(p.trig+ckIntervalMs, deadline)
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
	buf := make([]byte, 0, g.cfg.SamplesPerInterval*240+len(g.subs)*15*420+4096)
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
