package skew

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// KindJobEnd marks the end of one run of a job (one job id): its
// incidents close, its alerts resolve and its salting plans retire or
// carry over to the next run. The finding is job-wide: TaskName is empty
// and SubtaskIndex null.
const KindJobEnd = "job_end"

// Reasons a run ends (JobEnd.Reason).
const (
	// EndRestarted: a run of the same job name started after this one's
	// last event (Flink gives a resubmitted job a new id).
	EndRestarted = "restarted"
	// EndStopped: the run sent nothing for Config.JobEndAfterMs.
	EndStopped = "stopped"
)

// JobEnd is the body of a job_end finding.
type JobEnd struct {
	Reason string `json:"reason"`
	// Successor is the job id of the next run (EndRestarted only).
	Successor string `json:"successor,omitempty"`
	// LastEventAt is the event time (epoch ms) of the run's last event.
	LastEventAt int64 `json:"last_event_at"`
	// SuccessorTasks are the next run's tasks as the engine knows them
	// when this run ends (EndRestarted only), by name: what decides
	// whether a salting plan still routes correctly for it.
	SuccessorTasks []TaskShape `json:"successor_tasks,omitempty"`
}

// TaskShape is a task's parallelism as the engine knows it.
type TaskShape struct {
	Name string `json:"name"`
	// Parallelism is from the key samples, else the subtasks that
	// reported metrics.
	Parallelism int `json:"parallelism"`
	// MaxParallelism is from the key samples; 0 when none came yet.
	MaxParallelism int `json:"max_parallelism,omitempty"`
}

// maxSources bounds the sources a job keeps: its records are keyed by
// job (name, else id), so one partition of each topic (metrics and
// samples) holds them, and more come only while a topic's partitions are
// being added.
const maxSources = 4

// addSource adds src to the job's sources, unless it is unknown or known;
// beyond maxSources the oldest goes.
func (j *jobState) addSource(src Source) {
	if src.Topic == "" || slices.Contains(j.sources, src) {
		return
	}
	if len(j.sources) == maxSources {
		j.sources = slices.Delete(j.sources, 0, 1)
	}
	j.sources = append(j.sources, Source{Topic: strings.Clone(src.Topic), Partition: src.Partition})
}

// saw records an accepted event of the job at ts, read from src: its
// run's first and last event times move, and src joins its sources.
func (j *jobState) saw(ts int64, src Source) {
	j.addSource(src)
	if !j.hasEvents || ts < j.firstEvent {
		j.firstEvent = ts
	}
	if !j.hasEvents || ts > j.lastEvent {
		j.lastEvent = ts
	}
	j.hasEvents = true
}

// endJobs ends, at the close of the window ending at we, the runs that a
// later run of the same job name replaced and those silent for
// JobEndAfterMs, and the runs in forgotten (past the history horizon:
// stopped, whatever JobEndAfterMs says), appends a job_end finding for
// each (in job id order) and frees their state. A run is replaced when
// the later run's first event is after its last one and the later run
// reported in an earlier window than this one, so that its first window,
// which may be partial, does not decide its shape. A restored job ends as
// one that never stopped would: the pipeline restores only the jobs whose
// sources it reads. The rule: docs/architecture.md, "The end of a job's
// run".
func (e *Engine) endJobs(jobIDs []string, ws, we int64, forgotten []*jobState, dst []Finding) []Finding {
	type end struct {
		j  *jobState
		by *jobState // the successor, or nil
	}
	var ends []end
	var byName map[string][]*jobState
	for _, id := range jobIDs {
		j := e.jobs[id]
		if j == nil || !j.hasEvents || j.name == "" {
			continue
		}
		if byName == nil {
			byName = map[string][]*jobState{}
		}
		byName[j.name] = append(byName[j.name], j)
	}
	ended := map[*jobState]bool{}
	for _, runs := range byName {
		if len(runs) < 2 {
			continue
		}
		// The latest run that started before this window replaces every
		// run whose last event is before its first.
		var next *jobState
		for _, r := range runs {
			if r.firstEvent < ws && (next == nil || cmp.Or(cmp.Compare(r.firstEvent, next.firstEvent), cmp.Compare(r.id, next.id)) > 0) {
				next = r
			}
		}
		if next == nil {
			continue
		}
		for _, r := range runs {
			if r != next && r.lastEvent < next.firstEvent {
				ends = append(ends, end{r, next})
				ended[r] = true
			}
		}
	}
	for _, id := range jobIDs {
		j := e.jobs[id]
		if j != nil && j.hasEvents && !ended[j] && (j.lastEvent <= we-e.cfg.JobEndAfterMs || slices.Contains(forgotten, j)) {
			ends = append(ends, end{j: j})
		}
	}
	slices.SortFunc(ends, func(a, b end) int { return cmp.Compare(a.j.id, b.j.id) })
	for _, x := range ends {
		f := Finding{Kind: KindJobEnd, JobID: x.j.id, JobName: x.j.name, WindowStart: ws, WindowEnd: we,
			JobEnd: &JobEnd{Reason: EndStopped, LastEventAt: x.j.lastEvent}}
		since := time.UnixMilli(x.j.lastEvent).UTC().Format(time.TimeOnly)
		if x.by != nil {
			f.JobEnd.Reason, f.JobEnd.Successor = EndRestarted, x.by.id
			f.JobEnd.SuccessorTasks = shapes(x.by)
			f.Summary = fmt.Sprintf("Job %s was restarted as %s (last event of this run at %s UTC): its incidents close, and its salting plans carry over where the parallelism is unchanged.",
				JobLabel(x.j.name, x.j.id), ShortID(x.by.id), since)
		} else if x.j.lastEvent > we-e.cfg.JobEndAfterMs {
			// Forgotten before JobEndAfterMs passed (it is longer than the
			// history the engine keeps).
			f.Summary = fmt.Sprintf("Job %s sent nothing for %d windows since %s UTC, the history the engine keeps: it stopped; its incidents close and its salting plans are retired.",
				JobLabel(x.j.name, x.j.id), e.cfg.HistoryWindows, since)
		} else {
			f.Summary = fmt.Sprintf("Job %s sent nothing for %s since %s UTC: it stopped; its incidents close and its salting plans are retired.",
				JobLabel(x.j.name, x.j.id), time.Duration(e.cfg.JobEndAfterMs)*time.Millisecond, since)
		}
		dst = append(dst, f)
		e.dropJob(x.j)
	}
	return dst
}

// AdvanceQuiet ends the runs that sent nothing for JobEndAfterMs while
// the whole input was quiet: no partition delivered an event time, so
// the event-time watermark (Advance) stands still, and without it the
// last runs to report would never end. watermark is a processing-time
// one: the highest event time delivered plus the wall time the input has
// been quiet since (window.Watermarks.Quiet); the caller owns the clock.
//
// It moves nothing unless a run is due: for each run whose stop is due at
// or before watermark, earliest first, it closes the open windows up to
// the window of its end, as Advance would (their findings first, so
// nothing accepted is lost), then ends the run in that window (endJobs):
// the first window after lastEvent+JobEndAfterMs, or the first one not
// closed yet, whichever is later. So the finding's window and the run's
// last event are event times, and the same input ends the same runs in
// the same windows however the wall time went. Events before that window
// are late from then on, as after Advance.
//
// It returns the findings and the end of the last window it ended runs
// in (the new watermark), or math.MinInt64 when none was due. The rule:
// docs/architecture.md, "The end of a job's run".
func (e *Engine) AdvanceQuiet(watermark int64, dst []Finding) ([]Finding, int64) {
	to := int64(math.MinInt64)
	for {
		we, ok := e.nextStop()
		if !ok {
			return dst, to
		}
		if e.closedUpTo != math.MinInt64 {
			we = max(we, e.closedUpTo+e.cfg.WindowMs)
		}
		if we > watermark {
			return dst, to
		}
		// The run's open windows close first; if its end window was
		// open, closing it ends the run already.
		dst = e.Advance(we, dst)
		dst = e.endJobs(e.jobIDs(), we-e.cfg.WindowMs, we, nil, dst)
		to = we
	}
}

// nextStop returns the end of the first window in which a run with events
// has been silent for JobEndAfterMs, the earliest over the runs; ok is
// false when no run has events.
func (e *Engine) nextStop() (we int64, ok bool) {
	for _, j := range e.jobs {
		if !j.hasEvents {
			continue
		}
		// The first window end at or after lastEvent+JobEndAfterMs.
		end := e.WindowStart(j.lastEvent + e.cfg.JobEndAfterMs + e.cfg.WindowMs - 1)
		if !ok || end < we {
			we, ok = end, true
		}
	}
	return we, ok
}

// jobIDs returns the ids of the jobs tracked, sorted: the order in which
// windows are diagnosed and runs ended.
func (e *Engine) jobIDs() []string {
	ids := make([]string, 0, len(e.jobs))
	for id := range e.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// shapes returns the tasks of j with their parallelism, by name.
func shapes(j *jobState) []TaskShape {
	out := make([]TaskShape, 0, len(j.tasks))
	for _, t := range j.tasks {
		s := TaskShape{Name: t.name, Parallelism: len(t.subs)}
		if t.hasRouter {
			s.Parallelism, s.MaxParallelism = t.parallelism, t.maxParallelism
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b TaskShape) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// dropJob frees a job's state, windows included, and keeps its id for
// the next Snapshot's tombstones (at most Config.MaxJobs: beyond, the
// oldest is forgotten, and its saved state stays until Restore finds it
// past the history horizon).
func (e *Engine) dropJob(j *jobState) {
	if len(e.dropped) == e.cfg.MaxJobs {
		e.dropped = slices.Delete(e.dropped, 0, 1)
	}
	e.dropped = append(e.dropped, j.id)
	for _, t := range j.tasks {
		if e.last == t {
			e.last = nil
		}
		for _, w := range t.wins {
			e.release(w)
		}
	}
	delete(e.jobs, j.id)
}
