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
	LastSeen   int64 `json:"last_seen"`
	// LastFailed is the last value of the failed-checkpoints counter.
	LastFailed *float64    `json:"last_failed,omitempty"`
	Tasks      []TaskState `json:"tasks,omitempty"`
}

// TaskState is the cross-window state of one task.
type TaskState struct {
	Name           string         `json:"name"`
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
}

// SubtaskState is the cross-window state of one subtask.
type SubtaskState struct {
	Host      string `json:"host,omitempty"`
	Attempt   string `json:"attempt,omitempty"`
	Sustained int    `json:"sustained,omitempty"`
	// The last numRecordsIn counter reading, for rates across windows.
	CountTS  int64   `json:"count_ts,omitempty"`
	Count    float64 `json:"count,omitempty"`
	HasCount bool    `json:"has_count,omitempty"`
}

// Snapshot appends the state of every job the engine has seen events of
// to dst, ordered by job ID. Jobs that were only restored and have had no
// event since are left out, so that an instance never overwrites the state
// another instance of a consumer group keeps for a job it now owns.
//
// Take the snapshot right after the findings of the closed windows are
// written, and commit Kafka offsets only after the snapshot is stored:
// then a restart from the stored state and the committed offsets gives the
// findings an uninterrupted run gives.
func (e *Engine) Snapshot(dst []JobState) []JobState {
	ids := make([]string, 0, len(e.jobs))
	for id, j := range e.jobs {
		if !j.restoredOnly {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		j := e.jobs[id]
		js := JobState{JobID: j.id, JobName: j.name, WindowMs: e.cfg.WindowMs, ClosedUpTo: max(e.closedUpTo, j.resumeFrom), LastSeen: j.lastSeen}
		if js.ClosedUpTo == math.MinInt64 {
			continue // nothing closed yet: nothing to carry over
		}
		if j.hasLastFailed {
			v := j.lastFailed
			js.LastFailed = &v
		}
		names := make([]string, 0, len(j.tasks))
		for n := range j.tasks {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			t := j.tasks[n]
			ts := TaskState{
				Name: t.name, LastSeen: t.lastSeen, QueueMax: t.queueMax, QueueHits: t.queueHits,
				LastDominant: t.lastDominant, PrevDominant: t.prevDominant, LastMoveWindow: t.lastMoveWindow,
				HasMoved: t.hasMoved, UpSustained: t.upSustained,
			}
			if t.hasRouter {
				ts.Parallelism, ts.MaxParallelism = t.parallelism, t.maxParallelism
			}
			for _, h := range t.subs {
				ts.Subtasks = append(ts.Subtasks, SubtaskState{
					Host: h.host, Attempt: h.attempt, Sustained: h.sustained,
					CountTS: h.countTS, Count: h.count, HasCount: h.hasCount,
				})
			}
			js.Tasks = append(js.Tasks, ts)
		}
		dst = append(dst, js)
	}
	return dst
}

// maxStateString bounds the IDs and names a restored state may carry, as
// the decoders bound them in events.
const maxStateString = 64 << 10

// Restore loads job states saved by Snapshot. Call it before the first
// event. Events of a restored job in windows that start before its
// ClosedUpTo are Replayed from then on: they were diagnosed and written
// before the restart. A state that does not validate (including one saved
// with another window length) is an error and nothing is restored.
//
// Jobs and tasks last seen more than HistoryWindows before the newest
// ClosedUpTo are left out: an uninterrupted engine would have forgotten
// them, and their saved state is merely the last one written.
func (e *Engine) Restore(states []JobState) error {
	if len(e.jobs) > 0 || len(e.open) > 0 {
		return errors.New("restore: the engine has seen events already")
	}
	newest := int64(math.MinInt64)
	for i := range states {
		newest = max(newest, states[i].ClosedUpTo)
	}
	horizon := int64(math.MinInt64)
	if span := int64(e.cfg.HistoryWindows) * e.cfg.WindowMs; newest > math.MinInt64+span {
		horizon = newest - span
	}
	jobs := make(map[string]*jobState, len(states))
	for i := range states {
		s := &states[i]
		if s.WindowMs != e.cfg.WindowMs {
			return fmt.Errorf("restore job %d (%.64q): saved with %d ms windows, the engine has %d ms: keep the window length or start a new consumer group",
				i, s.JobID, s.WindowMs, e.cfg.WindowMs)
		}
		if s.ClosedUpTo != e.WindowStart(s.ClosedUpTo) {
			return fmt.Errorf("restore job %d (%.64q): closed_up_to %d is not a window boundary", i, s.JobID, s.ClosedUpTo)
		}
		if s.LastSeen < horizon {
			continue
		}
		j, err := restoreJob(s, horizon)
		if err != nil {
			return fmt.Errorf("restore job %d (%.64q): %w", i, s.JobID, err)
		}
		if _, dup := jobs[j.id]; dup {
			return fmt.Errorf("restore job %d (%.64q): duplicate job", i, s.JobID)
		}
		jobs[j.id] = j
	}
	e.jobs = jobs
	e.last = nil
	return nil
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

func restoreJob(s *JobState, horizon int64) (*jobState, error) {
	if s.JobID == "" {
		return nil, errors.New("empty job_id")
	}
	for _, v := range []string{s.JobID, s.JobName} {
		if err := validStateString(v); err != nil {
			return nil, err
		}
	}
	j := &jobState{
		id: strings.Clone(s.JobID), name: strings.Clone(s.JobName), tasks: make(map[string]*taskState, len(s.Tasks)),
		lastSeen: s.LastSeen, resumeFrom: s.ClosedUpTo, restoredOnly: true,
	}
	if s.LastFailed != nil {
		if math.IsNaN(*s.LastFailed) || math.IsInf(*s.LastFailed, 0) {
			return nil, errors.New("last_failed is not a number")
		}
		j.lastFailed, j.hasLastFailed = *s.LastFailed, true
	}
	for ti := range s.Tasks {
		ts := &s.Tasks[ti]
		if err := validStateString(ts.Name); err != nil {
			return nil, fmt.Errorf("task %d: %w", ti, err)
		}
		if _, dup := j.tasks[ts.Name]; dup {
			return nil, fmt.Errorf("task %.64q twice", ts.Name)
		}
		if ts.LastSeen < horizon {
			continue
		}
		if len(ts.Subtasks) > maxSubtasks {
			return nil, fmt.Errorf("task %.64q: %d subtasks, more than %d", ts.Name, len(ts.Subtasks), maxSubtasks)
		}
		if math.IsNaN(ts.QueueMax) || math.IsInf(ts.QueueMax, 0) || ts.QueueHits < 0 || ts.UpSustained < 0 ||
			ts.LastDominant < -1 || ts.LastDominant >= maxSubtasks || ts.PrevDominant < -1 || ts.PrevDominant >= maxSubtasks {
			return nil, fmt.Errorf("task %.64q: counters out of range", ts.Name)
		}
		t := &taskState{
			job: j, name: strings.Clone(ts.Name), lastSeen: ts.LastSeen, queueMax: ts.QueueMax, queueHits: ts.QueueHits,
			lastDominant: ts.LastDominant, prevDominant: ts.PrevDominant, lastMoveWindow: ts.LastMoveWindow,
			hasMoved: ts.HasMoved, upSustained: ts.UpSustained,
		}
		if ts.Parallelism > 0 {
			r, err := keygroup.NewRouter(ts.Parallelism, ts.MaxParallelism)
			if err != nil {
				return nil, fmt.Errorf("task %.64q: %w", ts.Name, err)
			}
			t.router, t.hasRouter = r, true
			t.parallelism, t.maxParallelism = ts.Parallelism, ts.MaxParallelism
		}
		t.subs = make([]subHistory, len(ts.Subtasks))
		for si, ss := range ts.Subtasks {
			if err := errors.Join(validStateString(ss.Host), validStateString(ss.Attempt)); err != nil {
				return nil, fmt.Errorf("task %.64q subtask %d: %w", ts.Name, si, err)
			}
			if ss.Sustained < 0 || math.IsNaN(ss.Count) || math.IsInf(ss.Count, 0) {
				return nil, fmt.Errorf("task %.64q subtask %d: counters out of range", ts.Name, si)
			}
			t.subs[si] = subHistory{host: strings.Clone(ss.Host), attempt: strings.Clone(ss.Attempt), sustained: ss.Sustained,
				countTS: ss.CountTS, count: ss.Count, hasCount: ss.HasCount}
		}
		j.tasks[t.name] = t
	}
	return j, nil
}
