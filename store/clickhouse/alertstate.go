package clickhouse

import (
	"context"
	"fmt"
	"time"

	"github.com/skewlens/skewlens/alert"
)

// tableAlertState is the table of migration 0006.
const tableAlertState = "alert_state"

// alertStateColumns are the alert_state columns SaveAlertState inserts.
var alertStateColumns = []string{"consumer_group", "job_id", "state", "version", "saved_at"}

// SaveAlertState stores the alert state of each job for a consumer group
// (alert.Tracker.Snapshot; an empty State replaces an older one when a
// job's alerts are over), under version (later versions win), and returns
// once the server has acknowledged it. Like SaveState it makes one
// attempt (the caller retries), is not paced (the pipeline saves it only
// when windows close), and its error is permanent (retry.IsPermanent)
// when a retry cannot help.
func (w *Writer) SaveAlertState(ctx context.Context, group string, version uint64, states []alert.JobSnapshot) error {
	if len(states) == 0 {
		return nil
	}
	now := time.Now().UTC().Truncate(time.Second)
	rows := make([]row, 0, len(states))
	for i := range states {
		st := &states[i]
		if st.JobID == "" {
			return permanentErr("save alert state", fmt.Errorf("state %d without a job_id", i))
		}
		rows = append(rows, row{group, st.JobID, string(st.State), version, now})
	}
	return w.saveJobStates(ctx, "save alert state", tableAlertState, alertStateColumns, rows)
}

// LoadAlertState returns the latest saved alert state of every job of a
// consumer group whose alerts are not over, ordered by job ID, for
// alert.Tracker.Restore (which validates them). It makes one attempt;
// the caller (start-up) retries.
func (w *Writer) LoadAlertState(ctx context.Context, group string) ([]alert.JobSnapshot, error) {
	var out []alert.JobSnapshot
	err := w.loadJobStates(ctx, "load alert state", tableAlertState, group, true, func(job, state string) error {
		out = append(out, alert.JobSnapshot{JobID: job, State: []byte(state)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
