package alert

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
)

// SnapshotVersion is the version of the encoding StateMachine.Snapshot writes
// (the "v" field of JobSnapshot.State). Restore refuses other versions: a
// change of the encoding gets a new version, and Restore learns to read
// the old one.
const SnapshotVersion = 1

// JobSnapshot is the saved alert state of one job: what StateMachine.Snapshot
// returns and StateMachine.Restore takes. The pipeline stores it per consumer
// group and job, beside the engine's state, so that a restarted pipeline
// neither fires an ongoing condition again nor forgets to resolve one
// that ended.
type JobSnapshot struct {
	JobID string
	// State is the job's alerts in a versioned JSON
	// encoding (SnapshotVersion). Equal state machines give byte-identical
	// States. Empty means the job has nothing to restore: its alerts are
	// over (callers store it to replace an older state).
	State []byte
}

// snapJob is the encoding of one job's state. Field order is fixed, and
// the alerts are sorted, so the encoding is deterministic. (Encodings
// written before alerts followed incidents carry "now", "reported" and
// key "runs" too; they are ignored.)
type snapJob struct {
	V      int         `json:"v"`
	JobID  string      `json:"job_id"`
	Alerts []snapAlert `json:"alerts,omitempty"`
}

type snapAlert struct {
	TaskName   string            `json:"task_name"`
	Subtask    int               `json:"subtask"`
	Cause      string            `json:"cause"`
	Firing     bool              `json:"firing,omitempty"`
	Start      int64             `json:"start"`
	LastSeen   int64             `json:"last_seen"`
	LastNotify int64             `json:"last_notify,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	Latest     skew.Finding      `json:"latest"`
	Keys       []skew.HotKey     `json:"keys,omitempty"`
}

// Snapshot returns the state of every job with alerts (pending or
// firing), ordered by job ID. A job that drops out of the snapshot (its
// alerts are over) has nothing left to restore: callers that store
// snapshots store an empty State for it. Which incidents an alert covers
// is not saved: the incidents are, and Restore takes them.
//
// The error names the jobs whose state cannot be encoded (a finding with
// a number JSON cannot hold); they are left out, the others are returned.
// Snapshot changes nothing.
func (t *StateMachine) Snapshot() ([]JobSnapshot, error) {
	jobs := map[string]*snapJob{}
	for _, st := range t.states {
		j := jobs[st.id.JobID]
		if j == nil {
			j = &snapJob{V: SnapshotVersion, JobID: st.id.JobID}
			jobs[st.id.JobID] = j
		}
		j.Alerts = append(j.Alerts, snapAlert{
			TaskName: st.id.TaskName, Subtask: st.id.Subtask, Cause: st.id.Cause, Firing: st.firing,
			Start: st.start, LastSeen: st.lastSeen, LastNotify: st.lastNotify,
			Labels: st.labels, Latest: st.latest, Keys: st.keys,
		})
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
		slices.SortFunc(j.Alerts, func(x, y snapAlert) int { return x.identity(id).Compare(y.identity(id)) })
		b, err := json.Marshal(j)
		if err != nil {
			errs = append(errs, fmt.Errorf("alert state of job %.64q: %w", id, err))
			continue
		}
		out = append(out, JobSnapshot{JobID: id, State: b})
	}
	return out, errors.Join(errs...)
}

// identity is the alert's identity in the state of job: the run its
// incidents opened in (its latest finding may be of a later run, see
// state.run).
func (a *snapAlert) identity(job string) incident.Identity {
	return incident.Identity{JobID: job, TaskName: a.TaskName, Subtask: a.Subtask, Cause: a.Cause}
}

// Reset drops every alert: the state machine is then as NewStateMachine
// made it (its configuration kept), and Restore may be called again. A
// pipeline whose partitions moved to another instance resets and restores
// the stored state, so that it neither resolves nor stores the alerts of
// jobs it no longer reads.
func (t *StateMachine) Reset() {
	clear(t.states)
	t.now, t.firing = 0, 0
}

// maxSnapString bounds the IDs, names and keys a restored state may
// carry, as the decoders bound them in events.
const maxSnapString = 64 << 10

// Restore loads the job states Snapshot returned, with the open incidents
// restored beside them (incident.Tracker.Restore): an alert covers the
// open incidents of its identity. Call it on a new or Reset StateMachine.
// Empty States are skipped. A state that does not decode or validate
// (another SnapshotVersion, a job ID that does not match, an alert whose
// latest finding is not of its identity, times out of order, ...) costs
// that job, and only that job, its alert state: the job is returned
// among the refused, in job order, with why, and the other jobs are
// restored; the refused job's open incidents get alerts again with
// their next findings. The error is for a StateMachine that has seen changes
// already: nothing is restored then.
//
// An alert none of whose incidents is open any more ended while the
// pipeline was down (its incidents closed and were stored, its own state
// was not): it resolves now, with reason absent, and the returned events
// say so. An open incident without an alert gets one with its next
// finding. Give it the states and incidents of the jobs this state machine
// owns only: it resolves and snapshots their alerts as it does its own.
func (t *StateMachine) Restore(snaps []JobSnapshot, open []incident.Incident) ([]Event, []incident.RefusedJob, error) {
	if len(t.states) > 0 || t.now != 0 {
		return nil, nil, errors.New("alert: restore: the tracker has seen changes already")
	}
	var jobs []snapJob
	seen := map[string]bool{}
	refused := map[string]error{}
	for i := range snaps {
		s := &snaps[i]
		if len(s.State) == 0 {
			continue
		}
		if seen[s.JobID] {
			refused[s.JobID] = errors.New("two states of the job")
			continue
		}
		seen[s.JobID] = true
		j, err := decodeSnapJob(s)
		if err != nil {
			refused[s.JobID] = err
			continue
		}
		jobs = append(jobs, j)
	}
	for _, j := range jobs {
		if refused[j.JobID] != nil {
			continue
		}
		for _, a := range j.Alerts {
			st := &state{
				id: a.identity(j.JobID), firing: a.Firing, start: a.Start, lastSeen: a.LastSeen, lastNotify: a.LastNotify,
				labels: a.Labels, latest: a.Latest, keys: slices.Clone(a.Keys), open: map[string]openIncident{},
			}
			t.states[st.id] = st
			if st.firing {
				t.firing++
			}
		}
	}
	for i := range open {
		in := &open[i]
		id := incident.Identity{JobID: in.JobID, TaskName: in.TaskName, Subtask: in.Subtask, Cause: in.Cause}
		if st := t.states[id]; st != nil && in.State == incident.StateOpen {
			// A firing alert's incidents had lasted; a pending one's had not.
			st.open[in.ID] = openIncident{key: in.Key, start: in.Start, lasted: st.firing}
		}
	}
	var ended []*state
	for _, st := range t.states {
		if len(st.open) == 0 {
			ended = append(ended, st)
		}
	}
	slices.SortFunc(ended, func(a, b *state) int { return a.id.Compare(b.id) })
	var events []Event
	for _, st := range ended {
		events = t.resolve(st, st.lastSeen, incident.ReasonAbsent, "", events)
	}
	out := make([]incident.RefusedJob, 0, len(refused))
	for j, err := range refused {
		out = append(out, incident.RefusedJob{JobID: j, Err: fmt.Errorf("alert state: %w", err)})
	}
	slices.SortFunc(out, func(a, b incident.RefusedJob) int { return strings.Compare(a.JobID, b.JobID) })
	return events, out, nil
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
	ids := map[incident.Identity]bool{}
	for i := range j.Alerts {
		a := &j.Alerts[i]
		if err := validAlert(j.JobID, a); err != nil {
			return j, fmt.Errorf("alert %d: %w", i, err)
		}
		if ids[a.identity(j.JobID)] {
			return j, fmt.Errorf("alert %d: %s twice", i, a.identity(j.JobID))
		}
		ids[a.identity(j.JobID)] = true
	}
	return j, nil
}

// validAlert checks what the StateMachine relies on: the alert's latest
// finding makes an alert of its identity, and its times are in order.
func validAlert(jobID string, a *snapAlert) error {
	for _, s := range []string{a.TaskName, a.Cause} {
		if err := validSnapString(s); err != nil {
			return err
		}
	}
	// The latest finding may be of a later run of the job: an incident
	// follows its job into the run that replaced it, keeping its alert.
	if id, ok := incident.IdentityOf(&a.Latest); !ok || id != a.identity(a.Latest.JobID) {
		return fmt.Errorf("latest finding is not of the alert %s", a.identity(jobID))
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
