package skew

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/skewlens/skewlens/skew/keygroup"
)

// JobState is what the engine carries from one window to the next for one
// job: the counters that make a saturation "sustained", the learned queue
// capacity, where a rotating hot key was last seen, the last value of the
// failed-checkpoints counter, and how far the job's windows are closed.
// Open windows are not part of it: their events are read again after a
// restart, which is why Kafka offsets are committed only up to them.
//
// Its JSON form is stored by the pipeline next to the findings, so that a
// restarted pipeline gives the findings an uninterrupted one would.
type JobState struct {
	JobID   string `json:"job_id"`
	JobName string `json:"job_name,omitempty"`
	// WindowMs is the window length the state was built with; counters
	// mean nothing under another.
	WindowMs int64 `json:"window_ms"`
	// ClosedUpTo is the end of the job's last closed window: windows that
	// start before it were diagnosed and written, and their events are
	// Replayed after a Restore.
	ClosedUpTo int64 `json:"closed_up_to"`
	// LastSeen is the start of the job's last window with an event, of
	// the job or of any of its tasks.
	LastSeen int64 `json:"last_seen"`
	// FirstEvent and LastEvent are the event times of the run's first and
	// last events (absent in states saved before they were kept): they
	// decide when the run ends (Config.JobEndAfterMs, KindJobEnd).
	FirstEvent *int64 `json:"first_event,omitempty"`
	LastEvent  *int64 `json:"last_event,omitempty"`
	// LastFailed is the last value of the failed-checkpoints counter.
	LastFailed *float64    `json:"last_failed,omitempty"`
	Tasks      []TaskState `json:"tasks,omitempty"`
	// Sources are where the job's events were read (absent in states
	// saved before they were kept): the pipeline restores the job only
	// where one of them is read now.
	Sources []Source `json:"sources,omitempty"`
	// Checkpoints is the job's recent checkpoints, for the forecast of
	// checkpoint timeouts (absent when there are none, and in states
	// saved before the forecast).
	Checkpoints *CheckpointState `json:"checkpoints,omitempty"`
	// Ended marks a tombstone: the engine freed the job (it ended, or
	// stopped reporting past the history), and its saved state is to be
	// deleted. A tombstone carries only the JobID.
	Ended bool `json:"-"`
}

// CheckpointState is a job's recent checkpoints and the readings that
// tell a new one (see the forecast in skew's doc): the last checkpoints,
// oldest first; the gaps between the triggers of completed ones that
// measure the checkpoint interval; the last readings of
// lastCheckpointDuration, lastCheckpointSize and
// numberOfCompletedCheckpoints; when the last checkpoint ended, and when
// lastCheckpointDuration was last read; and whether a checkpoint failed since the last one completed.
type CheckpointState struct {
	Points        []CheckpointPoint `json:"points,omitempty"`
	TriggerGapsMs []float64         `json:"trigger_gaps_ms,omitempty"`
	LastDuration  *float64          `json:"last_duration_ms,omitempty"`
	LastSize      *float64          `json:"last_size_bytes,omitempty"`
	Completed     *float64          `json:"completed,omitempty"`
	LastEnd       *int64            `json:"last_end,omitempty"`
	LastRead      *int64            `json:"last_read,omitempty"`
	FailedSince   bool              `json:"failed_since,omitempty"`
	// NoneYet: the job said none of its checkpoints has completed.
	NoneYet bool `json:"none_yet,omitempty"`
}

// CheckpointPoint is one checkpoint: its estimated trigger time (epoch
// ms), its duration (the timeout, for one that timed out), its size and
// the barrier wait of the subtask that held the barrier, when known.
type CheckpointPoint struct {
	Trigger    int64    `json:"trigger"`
	DurationMs float64  `json:"duration_ms"`
	SizeBytes  *float64 `json:"size_bytes,omitempty"`
	BarrierMs  *float64 `json:"barrier_ms,omitempty"`
	TimedOut   bool     `json:"timed_out,omitempty"`
}

// TaskState is the cross-window state of one task.
type TaskState struct {
	// Name is the name findings show. ID is Flink's task_id; without it
	// (states saved before task_ids were kept, or a task whose events never
	// carried one) the task is known by name only. Shared marks a name-only
	// task that stands for a name several task_ids have (see Engine).
	Name           string         `json:"name"`
	ID             string         `json:"task_id,omitempty"`
	Shared         bool           `json:"shared_name,omitempty"`
	Parallelism    int            `json:"parallelism,omitempty"`
	MaxParallelism int            `json:"max_parallelism,omitempty"`
	LastSeen       int64          `json:"last_seen"`
	QueueMax       float64        `json:"queue_max,omitempty"`
	QueueHits      int            `json:"queue_hits,omitempty"`
	LastDominant   int            `json:"last_dominant"`
	PrevDominant   int            `json:"prev_dominant"`
	LastMoveWindow int64          `json:"last_move_window,omitempty"`
	HasMoved       bool           `json:"has_moved,omitempty"`
	UpSustained    int            `json:"up_sustained,omitempty"`
	Subtasks       []SubtaskState `json:"subtasks,omitempty"`
	// HotKeyPool is the evidence of the task's candidate hot keys, sorted
	// by key, and HotKeyRecords the task's sampled records in the windows
	// it reaches: what the hot-key rules pool over windows.
	HotKeyPool    []PoolKeyState    `json:"hot_key_pool,omitempty"`
	HotKeyRecords []PoolRecordState `json:"hot_key_records,omitempty"`
}

// PoolKeyState is one candidate hot key's evidence: its counts in the
// windows it was a candidate in, oldest first.
type PoolKeyState struct {
	Key     string            `json:"key"`
	Windows []PoolWindowState `json:"windows"`
}

// PoolRecordState is a task's sampled records in the window starting at
// Window.
type PoolRecordState struct {
	Window  int64   `json:"window"`
	Records float64 `json:"records"`
}

// PoolWindowState is a candidate hot key's counts in the window starting
// at Window: the sketch's count and guaranteed count, the task's sampled
// records, and the subtask the key was routed to (-1: unknown) with its
// sampled records.
type PoolWindowState struct {
	Window        int64   `json:"window"`
	Count         float64 `json:"count"`
	Guaranteed    float64 `json:"guaranteed"`
	Records       float64 `json:"records"`
	Subtask       int32   `json:"subtask"`
	SubtaskRecord float64 `json:"subtask_records,omitempty"`
	// SubtaskCount and SubtaskGuaranteed are the key's count and
	// guaranteed count in its subtask's own sketch.
	SubtaskCount      float64 `json:"subtask_count,omitempty"`
	SubtaskGuaranteed float64 `json:"subtask_guaranteed,omitempty"`
}

// SubtaskState is the cross-window state of one subtask.
type SubtaskState struct {
	Host      string `json:"host,omitempty"`
	Attempt   string `json:"attempt,omitempty"`
	TMID      string `json:"tm_id,omitempty"`
	Sustained int    `json:"sustained,omitempty"`
	// Held is set once the saturation met Config.SustainMs; SatSince and
	// SatUntil are the busy counter's last run of saturated readings.
	Held     bool  `json:"held,omitempty"`
	SatSince int64 `json:"sat_since,omitempty"`
	SatUntil int64 `json:"sat_until,omitempty"`
	// The last numRecordsIn counter reading, for rates across windows.
	CountTS  int64   `json:"count_ts,omitempty"`
	Count    float64 `json:"count,omitempty"`
	HasCount bool    `json:"has_count,omitempty"`
	// The last readings of the accumulate*TimeMs counters, for busy,
	// back-pressured and idle time across windows.
	BusyCounter          *CounterState `json:"busy_counter,omitempty"`
	BackPressuredCounter *CounterState `json:"backpressured_counter,omitempty"`
	IdleCounter          *CounterState `json:"idle_counter,omitempty"`
	// Starting is set until the subtask (attempt) has had a window with
	// busy time (Flink's start-up reading of the gauge is not trusted).
	Starting bool `json:"starting,omitempty"`
}

// CounterState is the last reading of a cumulative counter.
type CounterState struct {
	TS    int64   `json:"ts"`
	Value float64 `json:"value"`
}

func (h *subHistory) counterStates() (busy, bp, idle *CounterState) {
	out := [3]*CounterState{}
	for i, c := range [3]int{cBusy, cBackPressured, cIdle} {
		if r := h.last[c]; r.ok {
			out[i] = &CounterState{TS: r.ts, Value: r.v}
		}
	}
	return out[0], out[1], out[2]
}

// Snapshot appends the state of every job the engine holds to dst,
// ordered by job ID, and then a tombstone (Ended) for each job freed
// since the last Snapshot, which it forgets: take one Snapshot per save.
//
// Take the snapshot right after the findings of the closed windows are
// written, and commit Kafka offsets only after the snapshot is stored:
// then a restart from the stored state and the committed offsets gives the
// findings an uninterrupted run gives.
func (e *Engine) Snapshot(dst []JobState) []JobState {
	ids := make([]string, 0, len(e.jobs))
	for id := range e.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		j := e.jobs[id]
		js := JobState{JobID: j.id, JobName: j.name, WindowMs: e.cfg.WindowMs, ClosedUpTo: max(e.closedUpTo, j.resumeFrom), LastSeen: j.lastSeen,
			Sources: slices.Clone(j.sources)}
		if js.ClosedUpTo == math.MinInt64 {
			continue // nothing closed yet: nothing to carry over
		}
		if j.hasLastFailed {
			v := j.lastFailed
			js.LastFailed = &v
		}
		if j.hasEvents {
			first, last := j.firstEvent, j.lastEvent
			js.FirstEvent, js.LastEvent = &first, &last
		}
		js.Checkpoints = j.ckpt.state()
		tasks := slices.SortedFunc(slices.Values(j.tasks), compareTasks)
		for _, t := range tasks {
			ts := TaskState{
				Name: t.name, ID: t.id, Shared: t.shared, LastSeen: t.lastSeen, QueueMax: t.queueMax, QueueHits: t.queueHits,
				LastDominant: t.lastDominant, PrevDominant: t.prevDominant, LastMoveWindow: t.lastMoveWindow,
				HasMoved: t.hasMoved, UpSustained: t.upSustained,
			}
			if t.hasRouter {
				ts.Parallelism, ts.MaxParallelism = t.parallelism, t.maxParallelism
			}
			for _, pk := range t.pool {
				ps := PoolKeyState{Key: pk.key, Windows: make([]PoolWindowState, len(pk.wins))}
				for i, w := range pk.wins {
					ps.Windows[i] = PoolWindowState{Window: w.ws, Count: w.count, Guaranteed: w.g, Records: w.weight, Subtask: w.sub, SubtaskRecord: w.subWeight,
						SubtaskCount: w.subCount, SubtaskGuaranteed: w.subG}
				}
				ts.HotKeyPool = append(ts.HotKeyPool, ps)
			}
			for _, pt := range t.poolTotals {
				ts.HotKeyRecords = append(ts.HotKeyRecords, PoolRecordState{Window: pt.ws, Records: pt.records})
			}
			for i := range t.subs {
				h := &t.subs[i]
				in := h.last[cRecordsIn]
				ss := SubtaskState{
					Host: h.host, Attempt: h.attempt, TMID: h.tmID, Sustained: h.sustained,
					Held: h.held, SatSince: h.satSince, SatUntil: h.satUntil,
					CountTS: in.ts, Count: in.v, HasCount: in.ok, Starting: h.starting,
				}
				ss.BusyCounter, ss.BackPressuredCounter, ss.IdleCounter = h.counterStates()
				ts.Subtasks = append(ts.Subtasks, ss)
			}
			js.Tasks = append(js.Tasks, ts)
			js.LastSeen = max(js.LastSeen, t.lastSeen)
		}
		dst = append(dst, js)
	}
	slices.Sort(e.dropped)
	for i, id := range e.dropped {
		if i > 0 && id == e.dropped[i-1] || e.jobs[id] != nil {
			continue // freed twice, or back since
		}
		dst = append(dst, JobState{JobID: id, Ended: true})
	}
	e.dropped = e.dropped[:0]
	return dst
}

// Reset drops every job and open window: the engine is then as New made
// it (its configuration kept), and Restore may be called again. A
// pipeline whose partitions moved to another instance resets, restores
// the saved state and reads again from the committed offsets.
func (e *Engine) Reset() {
	clear(e.jobs)
	e.dropped = e.dropped[:0]
	e.open = e.open[:0]
	e.closedUpTo = math.MinInt64
	e.last, e.lastWin, e.lastWinOf = nil, nil, nil
	e.free, e.sketches, e.subSketches = nil, nil, nil
}

// maxStateString bounds the IDs and names a restored state may carry, as
// the decoders bound them in events.
const maxStateString = 64 << 10

// RefusedJob is a job whose saved state could not be restored, and why
// (it does not decode or validate: corruption, another version): the job
// starts afresh, without its history, and the other jobs are restored.
// Every owner of per-job state refuses with it (the engine here, the
// incidents, alerts and plans), and the stage that restores logs and
// counts it (skewlens_<part>_state_refused_jobs_total).
type RefusedJob struct {
	JobID string
	Err   error
}

// Error says which job was refused and why.
func (r RefusedJob) Error() string { return fmt.Sprintf("job %.64q: %v", r.JobID, r.Err) }

// Restore loads job states saved by Snapshot. Call it before the first
// event. Events of a restored job in windows that start before its
// ClosedUpTo are Replayed from then on: they were diagnosed and written
// before the restart.
//
// A state that does not validate (corrupt, saved by another version, or
// with another window length) costs only its own job: Restore leaves it
// out, returns it among the refused, and the next Snapshot carries a
// tombstone for it, so that it is refused once. The error is for a
// misuse only: Restore after events.
//
// Jobs and tasks last seen more than HistoryWindows before the newest
// ClosedUpTo are left out: an uninterrupted engine would have forgotten
// them, and their saved state is merely the last one written.
func (e *Engine) Restore(states []JobState) ([]RefusedJob, error) {
	if len(e.jobs) > 0 || len(e.open) > 0 {
		return nil, errors.New("restore: the engine has seen events already")
	}
	newest := int64(math.MinInt64)
	for i := range states {
		if !states[i].Ended && states[i].WindowMs == e.cfg.WindowMs {
			newest = max(newest, states[i].ClosedUpTo)
		}
	}
	horizon := int64(math.MinInt64)
	if span := int64(e.cfg.HistoryWindows) * e.cfg.WindowMs; newest > math.MinInt64+span {
		horizon = newest - span
	}
	var refused []RefusedJob
	jobs := make(map[string]*jobState, len(states))
	for i := range states {
		s := &states[i]
		if s.Ended {
			continue
		}
		j, err := e.restoreJob(s, horizon)
		if err == nil && j != nil && jobs[j.id] != nil {
			err = errors.New("duplicate job")
		}
		if err != nil {
			refused = append(refused, RefusedJob{JobID: s.JobID, Err: fmt.Errorf("restore job %d (%.64q): %w", i, s.JobID, err)})
			if s.JobID != "" && jobs[s.JobID] == nil {
				e.dropped = append(e.dropped, strings.Clone(s.JobID))
			}
			continue
		}
		if j != nil {
			jobs[j.id] = j
		}
	}
	e.jobs = jobs
	e.last = nil
	return refused, nil
}

func validStateString(s string) error {
	if len(s) > maxStateString {
		return fmt.Errorf("%d bytes, more than %d", len(s), maxStateString)
	}
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	return nil
}

// restoreJob checks and loads one job's state; nil without an error
// for a job an uninterrupted engine would have forgotten (see Restore).
func (e *Engine) restoreJob(s *JobState, horizon int64) (*jobState, error) {
	if s.WindowMs != e.cfg.WindowMs {
		return nil, fmt.Errorf("saved with %d ms windows, the engine has %d ms: keep the window length or start a new consumer group",
			s.WindowMs, e.cfg.WindowMs)
	}
	if s.ClosedUpTo != e.WindowStart(s.ClosedUpTo) {
		return nil, fmt.Errorf("closed_up_to %d is not a window boundary", s.ClosedUpTo)
	}
	// A job is seen when any of its tasks is: states saved before
	// Snapshot said so carry only the job-scoped metrics' time.
	lastSeen := s.LastSeen
	for ti := range s.Tasks {
		lastSeen = max(lastSeen, s.Tasks[ti].LastSeen)
	}
	if lastSeen < horizon {
		return nil, nil
	}
	if s.JobID == "" {
		return nil, errors.New("empty job_id")
	}
	for _, v := range []string{s.JobID, s.JobName} {
		if err := validStateString(v); err != nil {
			return nil, err
		}
	}
	j := newJobState(s.JobID)
	j.name = strings.Clone(s.JobName)
	j.alt = j.name
	j.lastSeen, j.resumeFrom = s.LastSeen, s.ClosedUpTo
	for _, src := range s.Sources {
		if err := validStateString(src.Topic); err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
		j.addSource(src)
	}
	if s.FirstEvent != nil && s.LastEvent != nil {
		j.firstEvent, j.lastEvent, j.hasEvents = *s.FirstEvent, *s.LastEvent, true
	}
	if s.LastFailed != nil {
		if math.IsNaN(*s.LastFailed) || math.IsInf(*s.LastFailed, 0) {
			return nil, errors.New("last_failed is not a number")
		}
		j.lastFailed, j.hasLastFailed = *s.LastFailed, true
	}
	if s.Checkpoints != nil {
		h, err := restoreCkpt(s.Checkpoints)
		if err != nil {
			return nil, fmt.Errorf("checkpoints: %w", err)
		}
		j.ckpt = h
	}
	names := make(map[string]bool, len(s.Tasks)) // name-only tasks' names
	byKey := map[string]*taskState{}             // name-only tasks by filtered name
	for ti := range s.Tasks {
		ts := &s.Tasks[ti]
		if err := errors.Join(validStateString(ts.Name), validStateString(ts.ID)); err != nil {
			return nil, fmt.Errorf("task %d: %w", ti, err)
		}
		if ts.ID != "" {
			if _, dup := j.byID[ts.ID]; dup {
				return nil, fmt.Errorf("task_id %.64q twice", ts.ID)
			}
		} else if names[ts.Name] {
			return nil, fmt.Errorf("task %.64q twice", ts.Name)
		}
		if ts.ID == "" {
			names[ts.Name] = true
		}
		if ts.LastSeen < horizon {
			continue
		}
		t, err := restoreTask(j, ts)
		if err != nil {
			return nil, fmt.Errorf("task %.64q: %w", ts.Name, err)
		}
		if t.id != "" {
			j.byID[t.id] = t
			j.tasks = append(j.tasks, t)
			continue
		}
		a := byKey[t.key]
		if a == nil {
			byKey[t.key] = t
			j.tasks = append(j.tasks, t)
			continue
		}
		if a.shared || t.shared {
			return nil, fmt.Errorf("task %.64q: two name-only tasks of one name", ts.Name)
		}
		mergeTask(a, t)
	}
	for _, t := range j.tasks {
		if t.id != "" {
			if n := byKey[t.key]; n != nil && !n.shared {
				return nil, fmt.Errorf("task %.64q: known by name only, and task_id %.64q has the same name", n.name, t.id)
			}
		}
	}
	for _, t := range j.tasks {
		if _, done := j.byName[t.key]; !done {
			j.reindex(t.key)
		}
	}
	return j, nil
}

func restoreTask(j *jobState, ts *TaskState) (*taskState, error) {
	if ts.Shared && ts.ID != "" {
		return nil, errors.New("shared_name with a task_id")
	}
	if len(ts.Subtasks) > maxSubtasks {
		return nil, fmt.Errorf("%d subtasks, more than %d", len(ts.Subtasks), maxSubtasks)
	}
	if math.IsNaN(ts.QueueMax) || math.IsInf(ts.QueueMax, 0) || ts.QueueHits < 0 || ts.UpSustained < 0 ||
		ts.LastDominant < -1 || ts.LastDominant >= maxSubtasks || ts.PrevDominant < -1 || ts.PrevDominant >= maxSubtasks {
		return nil, errors.New("counters out of range")
	}
	t := &taskState{
		job: j, id: strings.Clone(ts.ID), name: strings.Clone(ts.Name), shared: ts.Shared,
		lastSeen: ts.LastSeen, queueMax: ts.QueueMax, queueHits: ts.QueueHits,
		lastDominant: ts.LastDominant, prevDominant: ts.PrevDominant, lastMoveWindow: ts.LastMoveWindow,
		hasMoved: ts.HasMoved, upSustained: ts.UpSustained,
	}
	t.alt, t.key = t.name, filteredKey(t.name)
	if ts.Parallelism > 0 {
		r, err := keygroup.NewRouter(ts.Parallelism, ts.MaxParallelism)
		if err != nil {
			return nil, err
		}
		t.router, t.hasRouter = r, true
		t.parallelism, t.maxParallelism = ts.Parallelism, ts.MaxParallelism
	}
	pool, totals, err := restorePool(ts.HotKeyPool, ts.HotKeyRecords)
	if err != nil {
		return nil, err
	}
	t.pool, t.poolTotals = pool, totals
	t.subs = make([]subHistory, len(ts.Subtasks))
	for si := range ts.Subtasks {
		ss := &ts.Subtasks[si]
		if err := errors.Join(validStateString(ss.Host), validStateString(ss.Attempt)); err != nil {
			return nil, fmt.Errorf("subtask %d: %w", si, err)
		}
		if ss.Sustained < 0 || !finiteNumber(ss.Count) || ss.SatSince > ss.SatUntil {
			return nil, fmt.Errorf("subtask %d: counters out of range", si)
		}
		h := &t.subs[si]
		*h = subHistory{host: strings.Clone(ss.Host), attempt: strings.Clone(ss.Attempt), tmID: strings.Clone(ss.TMID), sustained: ss.Sustained,
			held: ss.Held, satSince: ss.SatSince, satUntil: ss.SatUntil, starting: ss.Starting}
		h.last[cRecordsIn] = reading{ts: ss.CountTS, v: ss.Count, ok: ss.HasCount}
		for _, x := range [...]struct {
			c  int
			cs *CounterState
		}{{cBusy, ss.BusyCounter}, {cBackPressured, ss.BackPressuredCounter}, {cIdle, ss.IdleCounter}} {
			c, cs := x.c, x.cs
			if cs == nil {
				continue
			}
			if !finiteNumber(cs.Value) {
				return nil, fmt.Errorf("subtask %d: counters out of range", si)
			}
			h.last[c] = reading{ts: cs.TS, v: cs.Value, ok: true}
		}
	}
	return t, nil
}

// restorePool checks and loads a task's hot-key evidence. Windows beyond
// the engine's pool reach are dropped by updatePool at the next window.
func restorePool(ps []PoolKeyState, rs []PoolRecordState) ([]poolKey, []poolTotal, error) {
	if len(ps) > maxPoolKeys || len(rs) > MaxHotKeyPoolWindows {
		return nil, nil, fmt.Errorf("hot_key_pool: %d keys and %d windows, more than %d and %d", len(ps), len(rs), maxPoolKeys, MaxHotKeyPoolWindows)
	}
	var totals []poolTotal
	for i, r := range rs {
		if !finiteNumber(r.Records) || r.Records <= 0 || i > 0 && rs[i-1].Window >= r.Window {
			return nil, nil, fmt.Errorf("hot_key_records window %d: out of range or order", i)
		}
		totals = append(totals, poolTotal{ws: r.Window, records: r.Records})
	}
	var out []poolKey
	for i := range ps {
		p := &ps[i]
		if err := validStateString(p.Key); err != nil {
			return nil, nil, fmt.Errorf("hot_key_pool key %d: %w", i, err)
		}
		if i > 0 && ps[i-1].Key >= p.Key {
			return nil, nil, fmt.Errorf("hot_key_pool key %d: not sorted by key", i)
		}
		if len(p.Windows) == 0 || len(p.Windows) > MaxHotKeyPoolWindows {
			return nil, nil, fmt.Errorf("hot_key_pool key %d: %d windows", i, len(p.Windows))
		}
		pk := poolKey{key: strings.Clone(p.Key), wins: make([]poolWin, len(p.Windows))}
		for j, w := range p.Windows {
			if !finiteNumber(w.Count) || !finiteNumber(w.Guaranteed) || !finiteNumber(w.Records) || !finiteNumber(w.SubtaskRecord) ||
				!finiteNumber(w.SubtaskCount) || !finiteNumber(w.SubtaskGuaranteed) || w.SubtaskGuaranteed < 0 || w.SubtaskCount < w.SubtaskGuaranteed ||
				w.Guaranteed < 0 || w.Count < w.Guaranteed || w.Records <= 0 || w.Subtask < -1 || w.Subtask >= maxSubtasks ||
				j > 0 && p.Windows[j-1].Window >= w.Window {
				return nil, nil, fmt.Errorf("hot_key_pool key %d window %d: out of range or order", i, j)
			}
			pk.wins[j] = poolWin{ws: w.Window, count: w.Count, g: w.Guaranteed, weight: w.Records, sub: w.Subtask, subWeight: w.SubtaskRecord,
				subCount: w.SubtaskCount, subG: w.SubtaskGuaranteed}
		}
		out = append(out, pk)
	}
	return out, totals, nil
}

func finiteNumber(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// mergeTask folds b into a: two name-only tasks whose names filter alike.
// States saved before names were compared in their filtered form kept
// such spellings of one task apart, typically one with the key samples
// (the routing) and one with the metrics (the subtask history); the task
// of the larger subtask history (on a tie, the one seen last, then a)
// gives the metric state, the other the routing if a has none.
func mergeTask(a, b *taskState) {
	switch {
	case humaner(b.name, a.name):
		a.alt, a.name = a.name, b.name
	case a.alt == a.name && isFiltered(b.name):
		a.alt = b.name
	}
	if !a.hasRouter && b.hasRouter {
		a.router, a.hasRouter, a.parallelism, a.maxParallelism = b.router, true, b.parallelism, b.maxParallelism
	}
	if len(b.subs) > len(a.subs) || len(b.subs) == len(a.subs) && b.lastSeen > a.lastSeen {
		a.subs, a.queueMax, a.queueHits, a.upSustained = b.subs, b.queueMax, b.queueHits, b.upSustained
		a.lastDominant, a.prevDominant, a.lastMoveWindow, a.hasMoved = b.lastDominant, b.prevDominant, b.lastMoveWindow, b.hasMoved
	}
	a.lastSeen = max(a.lastSeen, b.lastSeen)
}

// state is the history's saved form, nil when it holds nothing.
func (h *ckptHistory) state() *CheckpointState {
	if h.empty() {
		return nil
	}
	cs := &CheckpointState{TriggerGapsMs: slices.Clone(h.gaps), FailedSince: h.failedSince, NoneYet: h.noneYet}
	ptr := func(v float64, ok bool) *float64 {
		if !ok {
			return nil
		}
		return &v
	}
	for _, p := range h.points {
		cs.Points = append(cs.Points, CheckpointPoint{Trigger: p.trig, DurationMs: p.ms,
			SizeBytes: ptr(p.bytes, p.hasBytes), BarrierMs: ptr(p.barrier, p.hasBarrier), TimedOut: p.timedOut})
	}
	cs.LastDuration, cs.LastSize, cs.Completed = ptr(h.lastMs, h.hasMs), ptr(h.lastBytes, h.hasBytes), ptr(h.completed, h.hasCompleted)
	if h.hasEnd {
		end := h.lastEnd
		cs.LastEnd = &end
	}
	if h.hasRead {
		read := h.lastRead
		cs.LastRead = &read
	}
	return cs
}

// restoreCkpt checks and loads a job's saved checkpoint history.
func restoreCkpt(cs *CheckpointState) (ckptHistory, error) {
	var h ckptHistory
	// A state saved by a version that kept more is trimmed to the newest
	// the engine keeps; an absurd one is refused.
	const maxSaved = 1000
	if len(cs.Points) > maxSaved || len(cs.TriggerGapsMs) > maxSaved {
		return h, fmt.Errorf("%d points and %d gaps, more than %d", len(cs.Points), len(cs.TriggerGapsMs), maxSaved)
	}
	// A negative reading is Flink's "none yet" (-1), which states saved
	// before the decoders understood it hold: it is no reading.
	val := func(p *float64) (float64, bool, error) {
		if p == nil || *p < 0 {
			return 0, false, nil
		}
		if !finiteNumber(*p) {
			return 0, false, errors.New("a reading out of range")
		}
		return *p, true, nil
	}
	for i, p := range cs.Points {
		q := ckptPoint{trig: p.Trigger, ms: p.DurationMs, timedOut: p.TimedOut}
		var errB, errS error
		q.barrier, q.hasBarrier, errB = val(p.BarrierMs)
		q.bytes, q.hasBytes, errS = val(p.SizeBytes)
		if err := errors.Join(errB, errS); err != nil || !finiteNumber(p.DurationMs) || p.DurationMs < 0 {
			return h, fmt.Errorf("point %d: out of range", i)
		}
		h.add(q)
	}
	for i, g := range cs.TriggerGapsMs {
		if !finiteNumber(g) || g <= 0 {
			return h, fmt.Errorf("trigger gap %d: out of range", i)
		}
	}
	h.gaps = slices.Clone(cs.TriggerGapsMs[max(0, len(cs.TriggerGapsMs)-ckptMaxGaps):])
	var errs [3]error
	h.lastMs, h.hasMs, errs[0] = val(cs.LastDuration)
	h.lastBytes, h.hasBytes, errs[1] = val(cs.LastSize)
	h.completed, h.hasCompleted, errs[2] = val(cs.Completed)
	if err := errors.Join(errs[:]...); err != nil {
		return h, err
	}
	if cs.LastEnd != nil {
		h.lastEnd, h.hasEnd = *cs.LastEnd, true
	}
	if cs.LastRead != nil {
		h.lastRead, h.hasRead = *cs.LastRead, true
	}
	h.failedSince = cs.FailedSince
	h.noneYet = !h.hasMs && len(h.points) == 0 && (cs.NoneYet || cs.LastDuration != nil && *cs.LastDuration < 0)
	return h, nil
}
