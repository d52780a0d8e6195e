package skew

import (
	"math"
	"slices"
	"strings"

	"github.com/skewlens/skewlens/skew/hitters"
	"github.com/skewlens/skewlens/skew/keygroup"
)

// Verdict says what the engine did with one event.
type Verdict uint8

const (
	// Accepted: the event was added to its window.
	Accepted Verdict = iota
	// Late: the event's window was already closed by the watermark.
	Late
	// Rejected: the event cannot be placed (subtask or parallelism out of
	// Flink's range, or too many windows open at once).
	Rejected
	// Replayed: the event's window was closed and written before the
	// engine was restored from a snapshot (see Restore); the event is read
	// again because Kafka offsets are committed only up to open windows.
	Replayed
)

// maxSubtasks is Flink's upper bound on parallelism; larger subtask indexes
// are rejected so that one bad record cannot allocate without bound.
const maxSubtasks = keygroup.UpperBoundMaxParallelism

// maxOpenWindows bounds the windows open at once. Far-future event times
// would otherwise open a window each and hold memory until the watermark
// reaches them.
const maxOpenWindows = 64

// Engine aggregates events into tumbling event-time windows and diagnoses
// each window when the watermark passes its end.
//
// An Engine is not safe for concurrent use. Strings in the events handed
// to it may alias the caller's buffers: the engine copies what it keeps.
type Engine struct {
	cfg  Config
	jobs map[string]*jobState
	// refusedJobs counts events refused at Config.MaxJobs.
	refusedJobs uint64
	// dropped holds the ids of the jobs freed since the last Snapshot,
	// for its tombstones (see dropJob).
	dropped    []string
	open       []int64 // starts of open windows, ascending
	closedUpTo int64   // events before this time are late
	last       *taskState
	// lastWin is the window of task lastWinOf that AddMetric added to
	// last; nil after a window closed. Flink reports a subtask's metrics
	// together, so the next metric is most often of the same task and
	// window.
	lastWin   *taskWindow
	lastWinOf *taskState
	// curWS, when hasCurWS, is the start of the window of a recent
	// metric's time: most metrics are of the current window, and
	// WindowStart divides.
	curWS    int64
	hasCurWS bool
	// free holds task windows of closed windows for reuse, and sketches
	// the sketches of closed windows (not reset yet). Both are bounded by
	// what the last closed window used (see trimFree).
	free     []*taskWindow
	sketches []*hitters.Sketch
	// subSketches holds the per-subtask sketches of closed windows, as
	// sketches the task ones.
	subSketches []*hitters.Sketch
	keyBuf      []byte // a filtered name being looked up
	// scratch holds a task's saturation findings while its hot_key
	// findings, which go first, are completed (see diagnose).
	scratch []Finding
}

type jobState struct {
	id, name string
	// alt is the other spelling of name seen (the filtered one, see
	// names.go); name itself when there is none.
	alt string
	// tasks holds every task of the job; byID and byName index it.
	tasks []*taskState
	// byID holds the tasks whose events carried a task_id.
	byID map[string]*taskState
	// byName resolves events without a task_id, by filtered name: to the
	// one task of that name (a task_id task learned from events that
	// carry both, or a task known by name only), or, once several
	// task_ids share the name, to its shared fallback task, or to nil
	// while that does not exist yet.
	byName map[string]*taskState
	wins   []*jobWindow
	// lastFailed is the last value of the failed-checkpoints counter.
	lastFailed    float64
	hasLastFailed bool
	lastSeen      int64
	// resumeFrom is the restored ClosedUpTo: events of earlier windows are
	// Replayed.
	resumeFrom int64
	// sources are where the job's accepted events were read, oldest
	// first, at most maxSources (see Source).
	sources []Source
	// firstEvent and lastEvent are the event times of the run's first and
	// last accepted events (hasEvents: there was one), which decide when
	// the run ends (see endJobs).
	firstEvent, lastEvent int64
	hasEvents             bool
	// ckpt is the job's recent checkpoints, for the forecast of timeouts.
	ckpt ckptHistory
}

// jobWindow holds job-scoped metrics of one window.
type jobWindow struct {
	start           int64
	lastCkptMs      float64
	failed          float64
	hasFailed       bool
	hasLastCkptTime bool
	// lastCkptBytes is the largest lastCheckpointSize in the window.
	lastCkptBytes float64
	// The window's latest readings, which the forecast compares with the
	// last window's to tell a new checkpoint (see forecast.go): of
	// lastCheckpointDuration (at ckTS), of lastCheckpointSize (hasBytes),
	// of numberOfCompletedCheckpoints (hasCompleted) and the time of the
	// latest numberOfFailedCheckpoints reading.
	ckTS, bytesTS, completedTS int64
	ckLast, bytesLast          float64
	completed                  float64
	hasBytes, hasCompleted     bool
	failTS                     int64
	// noneYet: a lastCheckpointDuration reading said no checkpoint has
	// completed (Metric.NoValue), at noneTS.
	noneYet bool
	noneTS  int64
}

type taskState struct {
	job *jobState
	// id is Flink's task_id, or "" for a task known by name only.
	id string
	// name is the spelling findings show: the unfiltered one once seen.
	// alt is the filtered spelling when it differs, else name. key is
	// the filtered name, the task's key in job.byName.
	name, alt, key string
	// shared marks a name-only task that stands for a name several
	// task_ids share: it never becomes one of them. named is set while
	// job.byName[key] is this task.
	shared, named bool
	wins          []*taskWindow
	// spare is the task's last closed window, emptied, kept for its next
	// one: its subtask array already has the task's length, which a
	// window of the engine's free list, last used by any task, seldom has
	// (a fleet's windows then grow, and leave arrays too large, by turns).
	spare *taskWindow
	subs  []subHistory
	// Routing of the keyed task, from the newest key sample that said it.
	parallelism, maxParallelism int
	router                      keygroup.Router
	hasRouter                   bool
	lastSeen                    int64
	// Learned input queue capacity: the highest inputQueueLength seen and
	// how many subtask-windows sat on it.
	queueMax  float64
	queueHits int
	// Rotation tracking: the subtask that last had skewed input, and when
	// the skew last moved from one subtask to another.
	lastDominant, prevDominant int
	lastMoveWindow             int64
	hasMoved                   bool
	upSustained                int
	// pool is the evidence of the task's candidate hot keys, sorted by
	// key, and poolTotals its sampled records in the windows the pool
	// reaches, oldest first (see updatePool).
	pool       []poolKey
	poolTotals []poolTotal
}

// Cumulative counters whose first and last reading in a window are kept,
// and whose last reading is carried to the next window.
const (
	cRecordsIn = iota
	cBusy
	cBackPressured
	cIdle
	numCounters
)

// counterName is the metric of each counter; slotOf maps back.
var counterName = [numCounters]MetricName{NumRecordsIn, AccumulateBusyTimeMs, AccumulateBackPressuredTimeMs, AccumulateIdleTimeMs}

// reading is one counter observation.
type reading struct {
	ts int64
	v  float64
	ok bool
}

type subHistory struct {
	host, attempt, tmID string
	// sustained counts the consecutive observed saturated windows, held
	// is set once they met Config.SustainMs (see taskStats), and the
	// busy counter's last run of saturated readings began at the reading
	// of time satSince and went on to the one of time satUntil.
	sustained          int
	held               bool
	satSince, satUntil int64
	// last holds each counter's last reading of the windows closed so far.
	last [numCounters]reading
	// starting is set until the subtask (attempt) has had a window with
	// busy time: see the start-up rule in taskStats.
	starting bool
}

type taskWindow struct {
	start int64
	// sketch is nil until the task's first key sample in the window: most
	// tasks of a fleet get none, and a sketch is tens of kilobytes.
	sketch  *hitters.Sketch
	samples int
	weight  float64 // sampled weight
	est     float64 // estimated records (weight / sample rate)
	// subWeight is the sampled weight routed to each subtask, and
	// subSketch each subtask's own small sketch (nil until its first key
	// sample): the subtask rule names the keys of one subtask, which at a
	// high parallelism are far below the task sketch's resolution.
	subWeight []float64
	subSketch []*hitters.Sketch
	subs      []subAgg
}

// span is the first and the last reading of a counter in one window.
type span struct {
	firstTS, lastTS int64
	first, last     float64
}

// subAgg is one subtask's metrics in one window: of each metric only what
// the diagnosis reads (see slotOf), so that a fleet of 100k subtasks
// costs a few hundred bytes per subtask and open window.
type subAgg struct {
	// has has bit k set when metric k was reported in the window.
	has uint32
	n   [numAvg]uint32
	sum [numAvg]float64
	max [numMax]float64
	cnt [numCounters]span
	// busySatFrom is the time of the busy counter's reading that the
	// window's trailing run of saturated readings (each at
	// Config.BusyMsPerSecond or more since the one before) begins at:
	// its firstTS when the run reaches the window's first reading, its
	// lastTS when the last reading ended none. A reading out of time order
	// ends the run, since the intervals between readings are then unknown.
	// It is kept here, not in span, since no other counter needs it and a
	// fleet holds a subAgg per subtask and open window.
	busySatFrom int64
}

// Averaged gauges: their readings' count and sum are kept.
const (
	aBusy = iota
	aBackPressured
	aIdle
	aInPool
	aOutPool
	aInRate
	aOutRate
	numAvg
)

// Gauges whose largest reading is kept.
const (
	mInQueue = iota
	mOutQueue
	mAlign
	mDelay
	numMax
)

// What subAgg keeps of a metric: slotNone (only that it was reported),
// the count and sum (slotAvg), the largest reading (slotMax) or the first
// and last reading (slotCounter), in slot i of that array.
const (
	slotNone = iota
	slotAvg
	slotMax
	slotCounter
)

type slot struct{ kind, i uint8 }

// subAgg.has has a bit per metric name: this does not compile when they
// outgrow it.
const _ = uint32(1) << (numMetricNames - 1)

var slotOf = func() (t [numMetricNames]slot) {
	for m, i := range map[MetricName]uint8{
		BusyTimeMsPerSecond: aBusy, BackPressuredTimeMsPerSecond: aBackPressured, IdleTimeMsPerSecond: aIdle,
		InPoolUsage: aInPool, OutPoolUsage: aOutPool, NumRecordsInPerSecond: aInRate, NumRecordsOutPerSecond: aOutRate,
	} {
		t[m] = slot{slotAvg, i}
	}
	for m, i := range map[MetricName]uint8{
		InputQueueLength: mInQueue, OutputQueueLength: mOutQueue, CheckpointAlignmentTime: mAlign, CheckpointStartDelayNanos: mDelay,
	} {
		t[m] = slot{slotMax, i}
	}
	for c, m := range counterName {
		t[m] = slot{slotCounter, uint8(c)}
	}
	return t
}()

// reported reports whether metric k was reported in the window.
func (a *subAgg) reported(k MetricName) bool { return a.has&(1<<k) != 0 }

// add adds one reading of metric k at ts; busyMsPerSecond is the
// saturation line of the busy counter (see subAgg.busySatFrom).
func (a *subAgg) add(k MetricName, ts int64, v, busyMsPerSecond float64) {
	first := !a.reported(k)
	a.has |= 1 << k
	switch sl := slotOf[k]; sl.kind {
	case slotAvg:
		a.n[sl.i]++
		a.sum[sl.i] += v
	case slotMax:
		if first || v > a.max[sl.i] {
			a.max[sl.i] = v
		}
	case slotCounter:
		sp := &a.cnt[sl.i]
		if sl.i == cBusy {
			switch {
			case first:
				a.busySatFrom = ts
			case ts <= sp.lastTS:
				a.busySatFrom = sp.lastTS
			case perSecond(sp.last, sp.lastTS, v, ts) < busyMsPerSecond:
				a.busySatFrom = ts
			}
		}
		if first || ts < sp.firstTS {
			sp.firstTS, sp.first = ts, v
		}
		if first || ts >= sp.lastTS {
			sp.lastTS, sp.last = ts, v
		}
	}
}

// New returns an Engine. A zero field of cfg means its default
// (DefaultConfig); the result is validated.
func New(cfg Config) (*Engine, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg, jobs: map[string]*jobState{}, closedUpTo: math.MinInt64}, nil
}

// WindowMs returns the length of the engine's windows.
func (e *Engine) WindowMs() int64 { return e.cfg.WindowMs }

// WindowStart returns the start of the tumbling window that holds event
// time ts (epoch ms).
func (e *Engine) WindowStart(ts int64) int64 {
	w := e.cfg.WindowMs
	s := ts / w * w
	if ts < 0 && s != ts {
		s -= w
	}
	return s
}

func newJobState(id string) *jobState {
	return &jobState{id: strings.Clone(id), byID: map[string]*taskState{}, byName: map[string]*taskState{}, resumeFrom: math.MinInt64}
}

// job returns the job of jobID, creating it if needed.
func (e *Engine) job(jobID, jobName string) *jobState {
	j := e.jobs[jobID]
	if j == nil {
		if j = e.newJob(jobID); j == nil {
			return nil
		}
	}
	j.rename(jobName)
	return j
}

// newJob starts tracking a job, or returns nil, counting a refusal, when
// Config.MaxJobs are tracked.
func (e *Engine) newJob(jobID string) *jobState {
	if len(e.jobs) >= e.cfg.MaxJobs {
		e.refusedJobs++
		return nil
	}
	j := newJobState(jobID)
	e.jobs[j.id] = j
	return j
}

// Jobs returns the number of jobs tracked.
func (e *Engine) Jobs() int { return len(e.jobs) }

// RefusedJobs returns how many events were rejected because Config.MaxJobs
// jobs were tracked.
func (e *Engine) RefusedJobs() uint64 { return e.refusedJobs }

// rename records a reported job name. Spellings that filter alike are one
// name, shown unfiltered; a different name replaces the old one.
func (j *jobState) rename(name string) {
	if name == "" || name == j.name || name == j.alt {
		return
	}
	switch {
	case j.name == "" || !sameFiltered(name, j.name):
		j.name = strings.Clone(name)
		j.alt = j.name
	case humaner(name, j.name):
		j.alt, j.name = j.name, strings.Clone(name)
	case j.alt == j.name && isFiltered(name):
		j.alt = strings.Clone(name) // remembered so that it hits the cache in task
	}
}

// task returns the task an event belongs to, creating it if needed.
//
// Within a job, events that carry a task_id meet on it. Events without
// one resolve by name through job.byName: to the task that has the name
// (learned from events that carry both task_id and name), else to a task
// known by name only. Names compare in PrometheusReporter's filtered
// form. When the first event that carries a task_id finds a name-only
// task of its name, that task becomes the task_id's: a task's first key
// samples may come without task_id before any metric named the id, and
// they belong to it. Two task_ids with one name stay two tasks; events
// of that name without a task_id then go to a shared task of their own.
func (e *Engine) task(jobID, jobName, taskID, taskName string) *taskState {
	if t := e.last; t != nil && t.job.id == jobID && (taskName == t.name || taskName == t.alt) &&
		(taskID == "" && t.named || taskID != "" && taskID == t.id) {
		if jobName != "" && jobName != t.job.name && jobName != t.job.alt {
			t.job.rename(jobName)
		}
		return t
	}
	j := e.job(jobID, jobName)
	if j == nil {
		return nil
	}
	var t *taskState
	if taskID == "" {
		t = e.nameTask(j, taskName)
	} else if t = j.byID[taskID]; t != nil {
		t.spell(taskName)
	} else {
		t = e.idTask(j, taskID, taskName)
	}
	e.last = t
	return t
}

// lookupName looks name up in j.byName by its filtered form, without
// allocating.
func (e *Engine) lookupName(j *jobState, name string) (*taskState, bool) {
	if isFiltered(name) {
		t, ok := j.byName[name]
		return t, ok
	}
	e.keyBuf = appendFiltered(e.keyBuf[:0], name)
	t, ok := j.byName[string(e.keyBuf)]
	return t, ok
}

// nameTask resolves an event without task_id.
func (e *Engine) nameTask(j *jobState, name string) *taskState {
	t, ambiguous := e.lookupName(j, name)
	if t != nil {
		t.spell(name)
		return t
	}
	t = j.newTask(name)
	t.shared = ambiguous // present with a nil task: several task_ids have the name
	j.setByName(t.key, t)
	return t
}

// idTask creates the task of a task_id not seen before in the job.
func (e *Engine) idTask(j *jobState, id, name string) *taskState {
	c, ok := e.lookupName(j, name)
	if c != nil && c.id == "" && !c.shared {
		// Name-only events came first: they were this task's.
		c.id = strings.Clone(id)
		j.byID[c.id] = c
		c.spell(name)
		return c
	}
	t := j.newTask(name)
	t.id = strings.Clone(id)
	j.byID[t.id] = t
	switch {
	case !ok:
		j.setByName(t.key, t)
	case c != nil && c.id != "":
		// A second task_id with this name: name-only events can no
		// longer tell which task they are of.
		j.setByName(t.key, nil)
	}
	return t
}

func (j *jobState) newTask(name string) *taskState {
	t := &taskState{job: j, name: strings.Clone(name), lastDominant: -1, prevDominant: -1}
	t.alt, t.key = t.name, filteredKey(t.name)
	j.tasks = append(j.tasks, t)
	return t
}

// filteredKey returns the filtered form of name, sharing name's memory
// when the filter does not change it.
func filteredKey(name string) string {
	if isFiltered(name) {
		return name
	}
	return string(appendFiltered(nil, name))
}

// spell records a reported spelling of the task's name: the unfiltered
// one is shown, the filtered one remembered so that it hits the cache in
// Engine.task. A name that does not filter like the task's is ignored: a
// task_id keeps the name it was first seen with.
func (t *taskState) spell(name string) {
	if name == t.name || name == t.alt || !sameFiltered(name, t.name) {
		return
	}
	switch {
	case humaner(name, t.name):
		t.alt, t.name = t.name, strings.Clone(name)
	case t.alt == t.name && isFiltered(name):
		t.alt = strings.Clone(name)
	}
}

// setByName points byName[key] at t (nil: ambiguous, no fallback yet).
func (j *jobState) setByName(key string, t *taskState) {
	if old := j.byName[key]; old != nil {
		old.named = false
	}
	j.byName[key] = t
	if t != nil {
		t.named = true
	}
}

// reindex recomputes byName[key] from the job's tasks, after tasks were
// forgotten or restored: a name-only task of the key (plain or shared)
// keeps it; else the one task_id task that has it; several make it
// ambiguous.
func (j *jobState) reindex(key string) {
	var fallback, only *taskState
	ids := 0
	for _, t := range j.tasks {
		switch {
		case t.key != key:
		case t.id == "":
			fallback = t
		default:
			ids++
			only = t
		}
	}
	switch {
	case fallback != nil:
		j.setByName(key, fallback)
	case ids == 1:
		j.setByName(key, only)
	case ids > 1:
		j.setByName(key, nil)
	default:
		if old := j.byName[key]; old != nil {
			old.named = false
		}
		delete(j.byName, key)
	}
}

// compareTasks orders tasks by shown name, then task_id: findings and
// snapshots list tasks in this order.
func compareTasks(a, b *taskState) int {
	if c := strings.Compare(a.name, b.name); c != 0 {
		return c
	}
	return strings.Compare(a.id, b.id)
}

// window returns the task's window starting at ws, opening it if needed.
// It returns nil when the window is closed or too many are open.
func (e *Engine) window(t *taskState, ws int64) *taskWindow {
	for _, w := range t.wins {
		if w.start == ws {
			return w
		}
	}
	if !e.openWindow(ws) {
		return nil
	}
	var w *taskWindow
	if t.spare != nil {
		w, t.spare = t.spare, nil
	} else if n := len(e.free); n > 0 {
		w = e.free[n-1]
		e.free[n-1] = nil
		e.free = e.free[:n-1]
	} else {
		w = &taskWindow{}
	}
	w.start = ws
	t.wins = append(t.wins, w)
	return w
}

func (e *Engine) openWindow(ws int64) bool {
	i, found := slices.BinarySearch(e.open, ws)
	if found {
		return true
	}
	if len(e.open) >= maxOpenWindows {
		return false
	}
	e.open = slices.Insert(e.open, i, ws)
	return true
}

// AddSample adds one key sample. It never blocks and does not keep s.
func (e *Engine) AddSample(s *KeySample) Verdict {
	ws := e.WindowStart(s.TS)
	if ws+e.cfg.WindowMs <= e.closedUpTo {
		return Late
	}
	if s.Subtask >= maxSubtasks || s.Parallelism < 0 || s.MaxParallelism < 0 ||
		!(s.Weight > 0) || !(s.SampleRate > 0) || math.IsInf(s.Weight, 0) {
		return Rejected
	}
	t := e.task(s.JobID, s.JobName, s.TaskID, s.TaskName)
	if t == nil {
		return Rejected
	}
	if ws < t.job.resumeFrom {
		return Replayed
	}
	sub := int(s.Subtask)
	if s.Parallelism > 0 {
		if !t.hasRouter || t.parallelism != int(s.Parallelism) || t.maxParallelism != int(s.MaxParallelism) {
			r, err := keygroup.NewRouter(int(s.Parallelism), int(s.MaxParallelism))
			if err != nil {
				return Rejected
			}
			t.router, t.hasRouter = r, true
			t.parallelism, t.maxParallelism = int(s.Parallelism), int(s.MaxParallelism)
		}
		if sub < 0 {
			sub = t.router.Subtask(s.Key)
		} else if sub >= t.parallelism {
			return Rejected
		}
	}
	w := e.window(t, ws)
	if w == nil {
		return Rejected
	}
	t.lastSeen = ws
	t.job.saw(s.TS, s.Source)
	w.samples++
	w.weight += s.Weight
	w.est += s.Weight / s.SampleRate
	if w.sketch == nil {
		w.sketch = e.newSketch()
	}
	w.sketch.AddTagged(s.Key, s.Weight, int32(sub))
	if sub >= 0 {
		if sub >= len(w.subWeight) {
			w.subWeight = slices.Grow(w.subWeight, sub+1-len(w.subWeight))[:sub+1]
			w.subSketch = slices.Grow(w.subSketch, sub+1-len(w.subSketch))[:sub+1]
		}
		w.subWeight[sub] += s.Weight
		if w.subSketch[sub] == nil {
			w.subSketch[sub] = e.newSubSketch()
		}
		w.subSketch[sub].Add(s.Key, s.Weight)
	}
	return Accepted
}

// AddMetric adds one metric observation. It never blocks and does not keep m.
func (e *Engine) AddMetric(m *Metric) Verdict {
	ws := e.curWS
	if !e.hasCurWS || m.TS < ws || uint64(m.TS)-uint64(ws) >= uint64(e.cfg.WindowMs) {
		ws = e.WindowStart(m.TS)
		// Kept only when it is a window start (always, but for times
		// within a window of math.MinInt64).
		e.curWS, e.hasCurWS = ws, ws <= m.TS
	}
	if ws+e.cfg.WindowMs <= e.closedUpTo {
		return Late
	}
	v := m.Value
	if math.IsNaN(v) || math.IsInf(v, 0) || m.Name == MetricUnknown || m.Name >= numMetricNames {
		return Rejected
	}
	if m.Name.JobScoped() {
		return e.addJobMetric(m, ws)
	}
	if m.Subtask < 0 || m.Subtask >= maxSubtasks {
		return Rejected
	}
	switch m.Name {
	case NumRecordsInPerSecond, NumRecordsOutPerSecond:
		if m.HasRate {
			v = m.Rate
		}
	}
	t := e.task(m.JobID, m.JobName, m.TaskID, m.TaskName)
	if t == nil {
		return Rejected
	}
	if ws < t.job.resumeFrom {
		return Replayed
	}
	w := e.lastWin
	if w == nil || t != e.lastWinOf || w.start != ws {
		if w = e.window(t, ws); w == nil {
			return Rejected
		}
		e.lastWin, e.lastWinOf = w, t
	}
	t.lastSeen = ws
	t.job.saw(m.TS, m.Source)
	if m.NoValue {
		return Accepted // alive, with nothing to measure (busy time not measured)
	}
	sub := int(m.Subtask)
	if sub >= len(w.subs) {
		// Room for the subtasks the task had in earlier windows at once:
		// they report in any order, and growing one by one would leave up
		// to half of the array unused.
		w.subs = slices.Grow(w.subs, max(sub+1, len(t.subs))-len(w.subs))[:sub+1]
	}
	w.subs[sub].add(m.Name, m.TS, v, e.cfg.BusyMsPerSecond)
	if n := len(t.subs); sub >= n {
		t.subs = slices.Grow(t.subs, sub+1-n)[:sub+1]
		for i := n; i <= sub; i++ {
			t.subs[i].starting = true
		}
	}
	h := &t.subs[sub]
	// respell's first test, inline: the values rarely change.
	if m.Host != h.host {
		respell(&h.host, m.Host)
	}
	if m.TMID != h.tmID {
		respell(&h.tmID, m.TMID)
	}
	if a := h.attempt; m.TaskAttemptID != a && respell(&h.attempt, m.TaskAttemptID) && a != "" {
		h.starting = true // a new attempt starts up again
	}
	return Accepted
}

func (e *Engine) addJobMetric(m *Metric, ws int64) Verdict {
	j := e.jobs[m.JobID]
	if j != nil && ws < j.resumeFrom {
		return Replayed
	}
	if !e.openWindow(ws) {
		return Rejected
	}
	if j == nil {
		if j = e.newJob(m.JobID); j == nil {
			return Rejected
		}
	}
	j.saw(m.TS, m.Source)
	j.rename(m.JobName)
	j.lastSeen = ws
	var w *jobWindow
	for _, x := range j.wins {
		if x.start == ws {
			w = x
		}
	}
	if w == nil {
		w = &jobWindow{start: ws}
		j.wins = append(j.wins, w)
	}
	switch m.Name {
	case LastCheckpointDuration, LastCheckpointSize:
		// Flink's only negative reading of these is its "none yet";
		// a decoder that does not mark it must not make it a duration.
		if m.NoValue || m.Value < 0 {
			if m.Name == LastCheckpointDuration && (!w.noneYet || m.TS >= w.noneTS) {
				w.noneYet, w.noneTS = true, m.TS
			}
			return Accepted
		}
	case NumberOfFailedCheckpoints, NumberOfCompletedCheckpoints:
		if m.NoValue || m.Value < 0 {
			return Accepted // counters: no sentinel of Flink's, nothing to count
		}
	}
	switch m.Name {
	case LastCheckpointDuration:
		w.lastCkptMs = max(w.lastCkptMs, m.Value)
		if !w.hasLastCkptTime || m.TS >= w.ckTS {
			w.ckTS, w.ckLast = m.TS, m.Value
		}
		w.hasLastCkptTime = true
	case NumberOfFailedCheckpoints:
		w.failed = max(w.failed, m.Value)
		if !w.hasFailed || m.TS >= w.failTS {
			w.failTS = m.TS
		}
		w.hasFailed = true
	case LastCheckpointSize:
		w.lastCkptBytes = max(w.lastCkptBytes, m.Value)
		if !w.hasBytes || m.TS >= w.bytesTS {
			w.bytesTS, w.bytesLast = m.TS, m.Value
		}
		w.hasBytes = true
	case NumberOfCompletedCheckpoints:
		if !w.hasCompleted || m.TS >= w.completedTS {
			w.completedTS, w.completed = m.TS, m.Value
		}
		w.hasCompleted = true
	}
	return Accepted
}

// Advance moves the watermark: every window that ends at or before
// watermark is closed and diagnosed, in window order, and its findings are
// appended to dst. Events for closed windows are Late from then on.
func (e *Engine) Advance(watermark int64, dst []Finding) []Finding {
	for len(e.open) > 0 && e.open[0]+e.cfg.WindowMs <= watermark {
		ws := e.open[0]
		e.open = e.open[1:]
		dst = e.closeWindow(ws, dst)
	}
	if end := e.WindowStart(watermark); end > e.closedUpTo {
		e.closedUpTo = end
	}
	return dst
}

// Flush closes every open window, as at the end of a replay or on a
// graceful shutdown.
func (e *Engine) Flush(dst []Finding) []Finding {
	if len(e.open) == 0 {
		return dst
	}
	return e.Advance(e.open[len(e.open)-1]+e.cfg.WindowMs, dst)
}

// OpenWindows returns the number of windows not yet closed. Only tests
// (here and in pipeline/window) call it, to check that Flush and Advance
// leave no window open.
func (e *Engine) OpenWindows() int { return len(e.open) }

func (e *Engine) closeWindow(ws int64, dst []Finding) []Finding {
	jobIDs := e.jobIDs()
	horizon := ws - int64(e.cfg.HistoryWindows)*e.cfg.WindowMs
	var forgotten []*jobState                 // runs with events past the horizon: they end
	windows, sketches, subSketches := 0, 0, 0 // task windows and sketches the window used
	if e.cfg.EmitStats {
		// A fleet's subtask_stats are most of a window's findings (100k
		// at 100k subtasks): room for them at once, so that dst does not
		// grow by doubling and leave its old copies to the collector.
		n := 0
		for _, id := range jobIDs {
			for _, t := range e.jobs[id].tasks {
				for _, w := range t.wins {
					if w.start == ws {
						n += len(w.subs)
					}
				}
			}
		}
		dst = slices.Grow(dst, n)
	}
	for _, id := range jobIDs {
		j := e.jobs[id]
		var jw *jobWindow
		for i, x := range j.wins {
			if x.start == ws {
				jw = x
				j.wins = slices.Delete(j.wins, i, i+1)
				break
			}
		}
		slices.SortFunc(j.tasks, compareTasks)
		ctx := jobCtx{job: j, ws: ws, jw: jw}
		for _, t := range j.tasks {
			for i, w := range t.wins {
				if w.start == ws {
					t.wins = slices.Delete(t.wins, i, i+1)
					ctx.tasks = append(ctx.tasks, taskCtx{t: t, w: w})
					break
				}
			}
		}
		if jw != nil {
			e.updateJobCounters(j, jw)
		}
		if len(ctx.tasks) > 0 {
			dst = e.diagnose(&ctx, dst)
		} else if jw != nil {
			// No subtask reported: the checkpoints still count, without
			// a barrier wait.
			j.ckpt.observe(jw, float64(e.cfg.CheckpointTimeoutMs), e.cfg.WindowMs, 0, false)
		}
		for _, tc := range ctx.tasks {
			// The history grew one subtask at a time in the task's
			// first window; it keeps its length from then on.
			if t := tc.t; cap(t.subs)-len(t.subs) > len(t.subs)/8 {
				t.subs = slices.Clone(t.subs)
			}
			windows++
			if tc.w.sketch != nil {
				sketches++
			}
			subSketches += len(tc.w.subSketch)
			if tc.t.spare == nil {
				e.empty(tc.w)
				tc.t.spare = tc.w
			} else {
				e.release(tc.w)
			}
		}
		// Forget tasks and jobs that stopped reporting long ago. A run
		// with events ends first, so that its incidents and plans are not
		// left open (endJobs); one without may be another instance's.
		e.forgetTasks(j, horizon)
		if len(j.tasks) == 0 && len(j.wins) == 0 && j.lastSeen < horizon {
			if j.hasEvents {
				forgotten = append(forgotten, j)
			} else {
				e.dropJob(j)
			}
		}
	}
	dst = e.endJobs(jobIDs, ws, ws+e.cfg.WindowMs, forgotten, dst)
	e.trimFree(windows, sketches, subSketches)
	e.lastWin, e.lastWinOf = nil, nil
	return dst
}

// respell stores a reported value s (a host, an attempt ID) into *cur. The
// reporters spell values differently too (PrometheusReporter filters
// "10.0.0.2" to "10_0_0_2"): spellings of one value keep the unfiltered
// one, so alternating spellings neither allocate nor look like a change.
// It reports whether the value changed, not only its spelling.
func respell(cur *string, s string) bool {
	if s == "" || s == *cur {
		return false
	}
	if *cur == "" || !sameFiltered(s, *cur) {
		*cur = strings.Clone(s)
		return true
	}
	if humaner(s, *cur) {
		*cur = strings.Clone(s)
	}
	return false
}

// forgetTasks drops the job's tasks last seen before horizon that hold
// no open window.
func (e *Engine) forgetTasks(j *jobState, horizon int64) {
	var gone []*taskState
	kept := j.tasks[:0]
	for _, t := range j.tasks {
		if t.lastSeen < horizon && len(t.wins) == 0 {
			gone = append(gone, t)
		} else {
			kept = append(kept, t)
		}
	}
	if len(gone) == 0 {
		return
	}
	clear(j.tasks[len(kept):])
	j.tasks = kept
	for _, t := range gone {
		if e.last == t {
			e.last = nil
		}
		if t.id != "" {
			delete(j.byID, t.id)
		}
		j.reindex(t.key)
	}
}

func (e *Engine) updateJobCounters(j *jobState, jw *jobWindow) {
	if !jw.hasFailed {
		return
	}
	cur := jw.failed
	if j.hasLastFailed && cur >= j.lastFailed {
		jw.failed = cur - j.lastFailed
	} else {
		jw.failed = 0
	}
	j.lastFailed, j.hasLastFailed = cur, true
}

// release returns a closed task window, and its sketch if it has one, to
// the free lists.
func (e *Engine) release(w *taskWindow) {
	e.empty(w)
	e.free = append(e.free, w)
}

// empty clears a closed task window for reuse, returning its sketches to
// the free lists.
func (e *Engine) empty(w *taskWindow) {
	if w.sketch != nil {
		e.sketches = append(e.sketches, w.sketch)
		w.sketch = nil
	}
	for _, s := range w.subSketch {
		if s != nil {
			e.subSketches = append(e.subSketches, s)
		}
	}
	clear(w.subSketch)
	w.subSketch = w.subSketch[:0]
	w.samples, w.weight, w.est = 0, 0, 0
	clear(w.subWeight)
	w.subWeight = w.subWeight[:0]
	clear(w.subs)
	w.subs = w.subs[:0]
}

// newSketch returns an empty sketch, from the free list when it has one.
// Sketches are reset here rather than in release, so that the ones
// trimFree drops are not cleared for nothing.
func (e *Engine) newSketch() *hitters.Sketch {
	n := len(e.sketches)
	if n == 0 {
		return hitters.New(e.cfg.TopK)
	}
	s := e.sketches[n-1]
	e.sketches[n-1] = nil
	e.sketches = e.sketches[:n-1]
	s.Reset()
	return s
}

// subSketchK is the counters of a subtask's sketch: every key above 1/32
// of the subtask's sampled records has one, with a count error of at most
// 1/32 of them, well under the subtask rule's smallest threshold (1/12 of
// the subtask's records at the default skew ratio).
const subSketchK = 32

// newSubSketch returns an empty subtask sketch, as newSketch a task one.
func (e *Engine) newSubSketch() *hitters.Sketch {
	n := len(e.subSketches)
	if n == 0 {
		return hitters.New(subSketchK)
	}
	s := e.subSketches[n-1]
	e.subSketches[n-1] = nil
	e.subSketches = e.subSketches[:n-1]
	s.Reset()
	return s
}

// trimFree bounds the free lists after a window closed that used windows
// task windows, sketches sketches and subs subtask sketches (counting the
// slots of subtasks without one): each list keeps at most as many as
// that window used. In a steady fleet the next window needs about as many
// again, so they are reused instead of allocated and collected every
// window; when the fleet shrinks, or key samples stop, what the smaller
// window did not use is dropped at once, so idle memory never exceeds
// what one window actually needed.
func (e *Engine) trimFree(windows, sketches, subs int) {
	if len(e.free) > windows {
		clear(e.free[windows:])
		e.free = e.free[:windows]
	}
	if len(e.sketches) > sketches {
		clear(e.sketches[sketches:])
		e.sketches = e.sketches[:sketches]
	}
	if len(e.subSketches) > subs {
		clear(e.subSketches[subs:])
		e.subSketches = e.subSketches[:subs]
	}
	e.free, e.sketches, e.subSketches = shrink(e.free), shrink(e.sketches), shrink(e.subSketches)
}

// shrink returns s in an array of its own size when s uses under a
// quarter of a large one, so that a free list's array does not stay as
// large as the largest fleet was.
func shrink[T any](s []T) []T {
	if cap(s) <= 64 || cap(s) <= 4*len(s) {
		return s
	}
	if len(s) == 0 {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}
