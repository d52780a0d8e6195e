package clickhouse

import (
	"context"

	"github.com/skewlens/skewlens/skew/alert"
)

// SaveAlertState stores the alert state of each job for a consumer group
// (alert.StateMachine.Snapshot; an empty State replaces an older one when a
// job's alerts are over), under version (later versions win), and returns
// once the server has acknowledged it. Like SaveState it makes one
// attempt (the caller retries), is not paced (the pipeline saves it only
// when windows close), and its error is permanent (retry.IsPermanent)
// when a retry cannot help.
func (w *Writer) SaveAlertState(ctx context.Context, group string, version uint64, states []alert.JobSnapshot) error {
	parts := make([]jobPart, len(states))
	for i, st := range states {
		parts[i] = jobPart{st.JobID, string(st.State)}
	}
	return w.saveJobStates(ctx, "save alert state", group, partAlerts, version, parts)
}

// LoadAlertState returns the latest saved alert state of every job of a
// consumer group whose alerts are not over, ordered by job ID, for
// alert.StateMachine.Restore (which validates them). It makes one attempt;
// the caller (start-up) retries.
func (w *Writer) LoadAlertState(ctx context.Context, group string) ([]alert.JobSnapshot, error) {
	var out []alert.JobSnapshot
	err := w.loadJobStates(ctx, "load alert state", group, partAlerts, func(job, state string) error {
		out = append(out, alert.JobSnapshot{JobID: job, State: []byte(state)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
