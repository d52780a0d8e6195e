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
	cfg        Config
	jobs       map[string]*jobState
	open       []int64 // starts of open windows, ascending
	closedUpTo int64   // events before this time are late
	last       *taskState
	free       []*taskWindow // closed windows kept for reuse
}

type jobState struct {
	id, name string
	tasks    map[string]*taskState
	wins     []*jobWindow
	// lastFailed is the last value of the failed-checkpoints counter.
	lastFailed    float64
	hasLastFailed bool
	lastSeen      int64
	// resumeFrom is the restored ClosedUpTo: events of earlier windows are
	// Replayed. restoredOnly is set until the job's first event after a
	// Restore, and keeps it out of snapshots.
	resumeFrom   int64
	restoredOnly bool
}

// jobWindow holds job-scoped metrics of one window.
type jobWindow struct {
	start           int64
	lastCkptMs      float64
	failed          float64
	hasFailed       bool
	hasLastCkptTime bool
}

type taskState struct {
	job  *jobState
	name string
	wins []*taskWindow
	subs []subHistory
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
}

type subHistory struct {
	host, attempt string
	sustained     int
	countTS       int64
	count         float64
	hasCount      bool
}

type taskWindow struct {
	start   int64
	sketch  *hitters.Sketch
	samples int
	weight  float64 // sampled weight
	est     float64 // estimated records (weight / sample rate)
	// subWeight is the sampled weight routed to each subtask.
	subWeight []float64
	subs      []subAgg
}

type subAgg struct {
	seen bool
	n    [numMetricNames]uint32
	sum  [numMetricNames]float64
	max  [numMetricNames]float64
	// First and last observation of the numRecordsIn counter.
	firstTS, lastTS   int64
	firstCnt, lastCnt float64
}

// New returns an Engine. cfg is validated and completed with defaults.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg, jobs: map[string]*jobState{}, closedUpTo: math.MinInt64}, nil
}

// Config returns the engine's configuration with defaults filled in.
func (e *Engine) Config() Config { return e.cfg }

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

func (e *Engine) task(jobID, jobName, taskName string) *taskState {
	if t := e.last; t != nil && t.name == taskName && t.job.id == jobID {
		if jobName != "" && t.job.name != jobName {
			t.job.name = strings.Clone(jobName)
		}
		return t
	}
	j := e.jobs[jobID]
	if j == nil {
		j = &jobState{id: strings.Clone(jobID), tasks: map[string]*taskState{}, resumeFrom: math.MinInt64}
		e.jobs[j.id] = j
	}
	if jobName != "" && j.name != jobName {
		j.name = strings.Clone(jobName)
	}
	t := j.tasks[taskName]
	if t == nil {
		t = &taskState{job: j, name: strings.Clone(taskName), lastDominant: -1, prevDominant: -1}
		j.tasks[t.name] = t
	}
	e.last = t
	return t
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
	if n := len(e.free); n > 0 {
		w = e.free[n-1]
		e.free = e.free[:n-1]
	} else {
		w = &taskWindow{sketch: hitters.New(e.cfg.TopK)}
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
	t := e.task(s.JobID, s.JobName, s.TaskName)
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
	t.job.restoredOnly = false // only accepted events make a job this engine's
	w.samples++
	w.weight += s.Weight
	w.est += s.Weight / s.SampleRate
	w.sketch.AddTagged(s.Key, s.Weight, int32(sub))
	if sub >= 0 {
		if sub >= len(w.subWeight) {
			w.subWeight = slices.Grow(w.subWeight, sub+1-len(w.subWeight))[:sub+1]
		}
		w.subWeight[sub] += s.Weight
	}
	return Accepted
}

// AddMetric adds one metric observation. It never blocks and does not keep m.
func (e *Engine) AddMetric(m *Metric) Verdict {
	ws := e.WindowStart(m.TS)
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
	t := e.task(m.JobID, m.JobName, m.TaskName)
	if ws < t.job.resumeFrom {
		return Replayed
	}
	w := e.window(t, ws)
	if w == nil {
		return Rejected
	}
	t.lastSeen = ws
	t.job.restoredOnly = false
	sub := int(m.Subtask)
	if sub >= len(w.subs) {
		w.subs = slices.Grow(w.subs, sub+1-len(w.subs))[:sub+1]
	}
	a := &w.subs[sub]
	a.seen = true
	k := m.Name
	if a.n[k] == 0 || v > a.max[k] {
		a.max[k] = v
	}
	a.n[k]++
	a.sum[k] += v
	if k == NumRecordsIn {
		if a.n[k] == 1 || m.TS < a.firstTS {
			a.firstTS, a.firstCnt = m.TS, v
		}
		if a.n[k] == 1 || m.TS >= a.lastTS {
			a.lastTS, a.lastCnt = m.TS, v
		}
	}
	if sub >= len(t.subs) {
		t.subs = slices.Grow(t.subs, sub+1-len(t.subs))[:sub+1]
	}
	h := &t.subs[sub]
	if m.Host != "" && h.host != m.Host {
		h.host = strings.Clone(m.Host)
	}
	if m.TaskAttemptID != "" && h.attempt != m.TaskAttemptID {
		h.attempt = strings.Clone(m.TaskAttemptID)
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
		j = &jobState{id: strings.Clone(m.JobID), tasks: map[string]*taskState{}, resumeFrom: math.MinInt64}
		e.jobs[j.id] = j
	}
	j.restoredOnly = false
	if m.JobName != "" && j.name != m.JobName {
		j.name = strings.Clone(m.JobName)
	}
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
	case LastCheckpointDuration:
		w.lastCkptMs = max(w.lastCkptMs, m.Value)
		w.hasLastCkptTime = true
	case NumberOfFailedCheckpoints:
		w.failed = max(w.failed, m.Value)
		w.hasFailed = true
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

// OpenWindows returns the number of windows not yet closed.
func (e *Engine) OpenWindows() int { return len(e.open) }

func (e *Engine) closeWindow(ws int64, dst []Finding) []Finding {
	jobIDs := make([]string, 0, len(e.jobs))
	for id := range e.jobs {
		jobIDs = append(jobIDs, id)
	}
	slices.Sort(jobIDs)
	horizon := ws - int64(e.cfg.HistoryWindows)*e.cfg.WindowMs
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
		names := make([]string, 0, len(j.tasks))
		for n := range j.tasks {
			names = append(names, n)
		}
		slices.Sort(names)
		ctx := jobCtx{job: j, ws: ws, jw: jw}
		for _, n := range names {
			t := j.tasks[n]
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
		}
		for _, tc := range ctx.tasks {
			e.release(tc.w)
		}
		// Forget tasks and jobs that stopped reporting long ago.
		for _, n := range names {
			if t := j.tasks[n]; t.lastSeen < horizon && len(t.wins) == 0 {
				if e.last == t {
					e.last = nil
				}
				delete(j.tasks, n)
			}
		}
		if len(j.tasks) == 0 && len(j.wins) == 0 && j.lastSeen < horizon {
			delete(e.jobs, id)
		}
	}
	return dst
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

func (e *Engine) release(w *taskWindow) {
	w.sketch.Reset()
	w.samples, w.weight, w.est = 0, 0, 0
	clear(w.subWeight)
	w.subWeight = w.subWeight[:0]
	clear(w.subs)
	w.subs = w.subs[:0]
	e.free = append(e.free, w)
}
