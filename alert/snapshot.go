package alert

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/skewlens/skewlens/skew"
)

// SnapshotVersion is the version of the encoding Tracker.Snapshot writes
// (the "v" field of JobSnapshot.State). Restore refuses other versions: a
// change of the encoding gets a new version, and Restore learns to read
// the old one.
const SnapshotVersion = 1

// JobSnapshot is the saved alert state of one job: what Tracker.Snapshot
// returns and Tracker.Restore takes. The pipeline stores it per consumer
// group and job, beside the engine's state, so that a restarted pipeline
// neither fires an ongoing condition again nor forgets to resolve one
// that ended.
type JobSnapshot struct {
	JobID string
	// State is the job's alerts and latest report in a versioned JSON
	// encoding (SnapshotVersion). Equal trackers give byte-identical
	// States. Empty means the job has nothing to restore: its alerts are
	// over (callers store it to replace an older state).
	State []byte
}

// snapJob is the encoding of one job's state. Field order is fixed, and
// the alerts and key runs are sorted, so the encoding is deterministic.
type snapJob struct {
	V     int    `json:"v"`
	JobID string `json:"job_id"`
	// Now is the event time of the job's state when the snapshot was
	// taken: the tracker's, or that of the job's restored state if later.
	// Restore does not take it as the tracker's event time (see there).
	Now int64 `json:"now"`
	// Reported is the end of the job's latest window with a report, 0 if
	// none is remembered.
	Reported int64       `json:"reported,omitempty"`
	Alerts   []snapAlert `json:"alerts,omitempty"`
}

type snapAlert struct {
	TaskName   string            `json:"task_name"`
	Subtask    int               `json:"subtask"`
	Cause      string            `json:"cause"`
	Firing     bool              `json:"firing,omitempty"`
	Start      int64             `json:"start"`
	LastSeen   int64             `json:"last_seen"`
	LastNotify int64             `json:"last_notify,omitempty"`
	Touched    int64             `json:"touched"`
	Labels     map[string]string `json:"labels,omitempty"`
	Latest     skew.Finding      `json:"latest"`
	Keys       []skew.HotKey     `json:"keys,omitempty"`
	Runs       []snapRun         `json:"runs,omitempty"`
}

type snapRun struct {
	Key      string `json:"key"`
	Start    int64  `json:"start"`
	LastSeen int64  `json:"last_seen"`
}

// Snapshot returns the state of every job the tracker owns, ordered by
// job ID: the jobs with alerts (pending or firing), with a remembered
// report, and those Restore brought back that have reported since. Jobs
// restored and not heard of since are left out, so that an instance never
// overwrites the state another instance of a consumer group keeps for a
// job it consumes. A job that drops out of the snapshot (its alerts are
// over and its report forgotten) has nothing left to restore: callers
// that store snapshots store an empty State for it.
//
// The error names the jobs whose state cannot be encoded (a finding with
// a number JSON cannot hold); they are left out, the others are returned.
// Snapshot changes nothing.
func (t *Tracker) Snapshot() ([]JobSnapshot, error) {
	jobs := map[string]*snapJob{}
	job := func(id string) *snapJob {
		j := jobs[id]
		if j == nil {
			j = &snapJob{V: SnapshotVersion, JobID: id, Now: t.jobNow(id), Reported: t.reports[id]}
			jobs[id] = j
		}
		return j
	}
	for _, st := range t.states {
		j := job(st.id.JobID)
		a := snapAlert{
			TaskName: st.id.TaskName, Subtask: st.id.Subtask, Cause: st.id.Cause, Firing: st.firing,
			Start: st.start, LastSeen: st.lastSeen, LastNotify: st.lastNotify, Touched: st.touched,
			Labels: st.labels, Latest: st.latest, Keys: st.keys,
		}
		for k, r := range st.runs {
			a.Runs = append(a.Runs, snapRun{Key: k, Start: r.start, LastSeen: r.lastSeen})
		}
		slices.SortFunc(a.Runs, func(x, y snapRun) int { return cmp.Compare(x.Key, y.Key) })
		j.Alerts = append(j.Alerts, a)
	}
	for id := range t.reports {
		job(id)
	}
	for id := range t.restored {
		job(id)
	}
	ids := make([]string, 0, len(jobs))
	for id := range jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]JobSnapshot, 0, len(ids))
	var errs []error
	for _, id := range ids {
		j := jobs[id]
		slices.SortFunc(j.Alerts, func(x, y snapAlert) int { return x.identity().compare(y.identity()) })
		b, err := json.Marshal(j)
		if err != nil {
			errs = append(errs, fmt.Errorf("alert state of job %.64q: %w", id, err))
			continue
		}
		out = append(out, JobSnapshot{JobID: id, State: b})
	}
	return out, errors.Join(errs...)
}

func (a *snapAlert) identity() Identity {
	return Identity{JobID: a.Latest.JobID, TaskName: a.TaskName, Subtask: a.Subtask, Cause: a.Cause}
}

// Reset drops every alert and report: the tracker is then as
// NewTracker made it (its configuration and Refused count kept), and
// Restore may be called again. A pipeline whose partitions moved to
// another instance resets and restores the stored state, so that it
// neither resolves nor stores the alerts of jobs it no longer reads.
func (t *Tracker) Reset() {
	clear(t.states)
	clear(t.reports)
	clear(t.restored)
	t.now, t.firing = 0, 0
}

// maxSnapString bounds the IDs, names and keys a restored state may
// carry, as the decoders bound them in events.
const maxSnapString = 64 << 10

// Restore loads the job states Snapshot returned. Call it on a new
// Tracker, before the first Observe. Empty States are skipped. A state
// that does not decode or validate (another SnapshotVersion, a job ID
// that does not match, an alert whose latest finding is not of its
// identity, times out of order, ...) is an error naming the job, and
// nothing is restored. Alerts beyond MaxTracked are refused and counted
// (Refused), as Observe refuses them.
//
// Give it the states of the jobs this tracker owns only (the pipeline
// restores those whose engine state it restored): it resolves and
// snapshots their alerts as it does its own. An alert whose condition
// ended while the pipeline was down resolves at the event time an
// uninterrupted tracker would have resolved it; a firing alert whose
// condition goes on does not fire again.
//
// The tracker's event time is not taken from what is restored: the jobs
// of a consumer group progress apart (a job that moved here resumes from
// its last owner's commit, behind or ahead of the jobs of other
// instances), and an event time set by the furthest job would resolve
// the alerts of the others at their first window, which then fire again.
// The first Observe or Advance sets it, as incident.Tracker.Restore does.
func (t *Tracker) Restore(snaps []JobSnapshot) error {
	if len(t.states) > 0 || len(t.reports) > 0 || t.now != 0 {
		return errors.New("alert: restore: the tracker has seen findings already")
	}
	var jobs []snapJob
	seen := map[string]bool{}
	for i := range snaps {
		s := &snaps[i]
		if len(s.State) == 0 {
			continue
		}
		j, err := decodeSnapJob(s)
		if err != nil {
			return fmt.Errorf("alert: restore job %d (%.64q): %w", i, s.JobID, err)
		}
		if seen[j.JobID] {
			return fmt.Errorf("alert: restore job %d (%.64q): duplicate job", i, s.JobID)
		}
		seen[j.JobID] = true
		jobs = append(jobs, j)
	}
	for _, j := range jobs {
		t.restored[j.JobID] = j.Now
		if j.Reported > 0 {
			t.reports[j.JobID] = j.Reported
		}
		for _, a := range j.Alerts {
			if len(t.states) >= t.cfg.MaxTracked {
				t.refused++
				continue
			}
			st := &state{
				id: a.identity(), firing: a.Firing, start: a.Start, lastSeen: a.LastSeen, lastNotify: a.LastNotify,
				labels: a.Labels, latest: cloneFinding(&a.Latest), keys: slices.Clone(a.Keys), touched: a.Touched,
			}
			for _, r := range a.Runs {
				if st.runs == nil {
					st.runs = make(map[string]keyRun, len(a.Runs))
				}
				st.runs[r.Key] = keyRun{start: r.Start, lastSeen: r.LastSeen}
			}
			t.states[st.id] = st
			if st.firing {
				t.firing++
			}
		}
	}
	return nil
}

// decodeSnapJob decodes and validates one job's state.
func decodeSnapJob(s *JobSnapshot) (snapJob, error) {
	var j snapJob
	if err := json.Unmarshal(s.State, &j); err != nil {
		return j, fmt.Errorf("decode: %w", err)
	}
	if j.V != SnapshotVersion {
		return j, fmt.Errorf("encoding version %d, this build reads %d", j.V, SnapshotVersion)
	}
	if j.JobID == "" || j.JobID != s.JobID {
		return j, fmt.Errorf("state of job %.64q", j.JobID)
	}
	if err := validSnapString(j.JobID); err != nil {
		return j, err
	}
	ids := map[Identity]bool{}
	for i := range j.Alerts {
		a := &j.Alerts[i]
		if err := validAlert(j.JobID, a); err != nil {
			return j, fmt.Errorf("alert %d: %w", i, err)
		}
		if ids[a.identity()] {
			return j, fmt.Errorf("alert %d: %s twice", i, a.identity())
		}
		ids[a.identity()] = true
	}
	return j, nil
}

// validAlert checks what the Tracker relies on: the alert's latest
// finding makes an alert of its identity, and its times are in order.
func validAlert(jobID string, a *snapAlert) error {
	for _, s := range []string{a.TaskName, a.Cause} {
		if err := validSnapString(s); err != nil {
			return err
		}
	}
	if a.Latest.JobID != jobID {
		return fmt.Errorf("latest finding of job %.64q", a.Latest.JobID)
	}
	if id, ok := identityOf(&a.Latest); !ok || id != a.identity() {
		return fmt.Errorf("latest finding is not of the alert %s", a.identity())
	}
	if a.Start > a.LastSeen || a.Latest.WindowEnd != a.LastSeen || a.LastNotify > a.LastSeen {
		return fmt.Errorf("times out of order: start %d, last seen %d, last notified %d, latest window end %d",
			a.Start, a.LastSeen, a.LastNotify, a.Latest.WindowEnd)
	}
	if a.Firing && len(a.Labels) == 0 {
		return errors.New("a firing alert without labels")
	}
	for k, v := range a.Labels {
		if err := errors.Join(validSnapString(k), validSnapString(v)); err != nil {
			return fmt.Errorf("label %.64q: %w", k, err)
		}
	}
	for _, k := range a.Keys {
		if err := validSnapString(k.Key); err != nil {
			return fmt.Errorf("hot key: %w", err)
		}
	}
	for _, r := range a.Runs {
		if err := validSnapString(r.Key); err != nil || r.Start > r.LastSeen {
			return fmt.Errorf("run of key %.64q: %v, start %d, last seen %d", r.Key, err, r.Start, r.LastSeen)
		}
	}
	return nil
}

func validSnapString(s string) error {
	if len(s) > maxSnapString {
		return fmt.Errorf("%d bytes, more than %d", len(s), maxSnapString)
	}
	if !utf8.ValidString(s) {
		return errors.New("not valid UTF-8")
	}
	return nil
}
