package incident

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/skewlens/skewlens/skew"
)

// CauseHotKey is the cause of incidents made from hot_key findings, beside
// the engine's saturation causes (skew.CauseDataSkew and the others).
const CauseHotKey = "hot_key"

// Causes returns every cause an incident (and its alert) can have, in a
// fixed order.
func Causes() []string {
	return []string{CauseHotKey, skew.CauseDataSkew, skew.CauseRotatingHotKey, skew.CauseSlowSubtask, skew.CauseUnderProvisioned, skew.CauseCheckpointRisk}
}

// Identity is what makes two findings the same condition: one alert, and
// one incident (for hot_key, one incident per key).
type Identity struct {
	JobID    string
	TaskName string
	// Subtask is the subtask index, or -1 for a task-wide condition
	// (under_provisioned, rotating_hot_key, checkpoint_risk, and hot keys
	// whose subtask is unknown).
	Subtask int
	// Cause is a saturation cause or CauseHotKey.
	Cause string
}

// String returns "job_id/task_name/subtask/cause" (subtask "-1" for
// task-wide alerts): the alert's id in JSON and its Kafka message key.
// Task names may contain "/", so parse it from both ends.
func (id Identity) String() string {
	var b strings.Builder
	b.Grow(len(id.JobID) + len(id.TaskName) + len(id.Cause) + 8)
	b.WriteString(id.JobID)
	b.WriteByte('/')
	b.WriteString(id.TaskName)
	b.WriteByte('/')
	b.WriteString(strconv.Itoa(id.Subtask))
	b.WriteByte('/')
	b.WriteString(id.Cause)
	return b.String()
}

// Compare orders identities: by job, task, subtask, then cause.
func (id Identity) Compare(o Identity) int {
	if c := strings.Compare(id.JobID, o.JobID); c != 0 {
		return c
	}
	if c := strings.Compare(id.TaskName, o.TaskName); c != 0 {
		return c
	}
	if id.Subtask != o.Subtask {
		if id.Subtask < o.Subtask {
			return -1
		}
		return 1
	}
	return strings.Compare(id.Cause, o.Cause)
}

// IdentityOf returns the identity of a finding that makes incidents (and
// so alerts), and false for findings that make none (other kinds,
// malformed findings, hot keys that are not skew.HotKey.Actionable).
//
// A rotating hot key is task-wide: its hot spot moves from subtask to
// subtask by design (a time-bucketed key), and an identity per subtask
// would resolve and re-fire at every move.
func IdentityOf(f *skew.Finding) (Identity, bool) {
	if f.JobID == "" || f.TaskName == "" {
		return Identity{}, false
	}
	id := Identity{JobID: f.JobID, TaskName: f.TaskName, Subtask: -1}
	if f.SubtaskIndex != nil && *f.SubtaskIndex >= 0 {
		id.Subtask = *f.SubtaskIndex
	}
	switch f.Kind {
	case skew.KindHotKey:
		if f.HotKey == nil || !f.HotKey.Actionable() {
			return Identity{}, false
		}
		id.Cause = CauseHotKey
	case skew.KindSaturation:
		if f.Saturation == nil {
			return Identity{}, false
		}
		id.Cause = f.Cause
		switch f.Cause {
		case skew.CauseDataSkew, skew.CauseSlowSubtask:
		case skew.CauseUnderProvisioned, skew.CauseRotatingHotKey:
			id.Subtask = -1
		case skew.CauseCheckpointRisk:
			// The subtask that holds up the barrier may change from
			// checkpoint to checkpoint while the job's risk lasts: one
			// alert per task that holds it up, not per subtask.
			id.Subtask = -1
		default:
			return Identity{}, false
		}
	default:
		return Identity{}, false
	}
	return id, true
}

// IncidentID returns the id of the incident of a condition (package
// incident): 16 hex digits of a SHA-256 over the identity, the hot key
// ("" for causes other than hot_key) and the start of the incident's
// first window (epoch ms). It depends on nothing else, so a replay or a
// restarted pipeline names an incident as an uninterrupted run does, and
// an alert names the incident of its latest finding.
func IncidentID(id Identity, key string, start int64) string {
	h := sha256.New()
	for _, s := range []string{id.JobID, id.TaskName, strconv.Itoa(id.Subtask), id.Cause, key, strconv.FormatInt(start, 10)} {
		// Length-prefixed, so that no two tuples hash the same bytes.
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// eachWindow calls fn with each run of recs that share a window end, in
// order, and the earliest window start among them: windows that end at
// or before that start are complete, and a condition missing from them
// is absent. recs must be sorted by window end; finding gives a record's
// finding.
func eachWindow[R any](recs []R, finding func(*R) *skew.Finding, fn func(start, end int64, group []R)) {
	for i := 0; i < len(recs); {
		end := finding(&recs[i]).WindowEnd
		j, start := i, end
		for ; j < len(recs) && finding(&recs[j]).WindowEnd == end; j++ {
			start = min(start, finding(&recs[j]).WindowStart)
		}
		fn(start, end, recs[i:j])
		i = j
	}
}
