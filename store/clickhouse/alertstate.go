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
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.s.closed {
		return permanentErr("save alert state", ErrClosed)
	}
	op := fmt.Sprintf("insert %d rows into %s", len(rows), tableAlertState)
	return w.s.classify(ctx, op, w.s.insertRows(ctx, tableAlertState, alertStateColumns, rows))
}

// LoadAlertState returns the latest saved alert state of every job of a
// consumer group whose alerts are not over, ordered by job ID, for
// alert.Tracker.Restore (which validates them). It makes one attempt;
// the caller (start-up) retries.
func (w *Writer) LoadAlertState(ctx context.Context, group string) ([]alert.JobSnapshot, error) {
	var out []alert.JobSnapshot
	err := w.s.query(ctx, "load alert state", "SELECT job_id, argMax(state, version) AS s FROM "+w.s.table(tableAlertState)+
		" WHERE consumer_group = ? GROUP BY job_id HAVING s != '' ORDER BY job_id", []any{group}, func(rows rowScanner) error {
		out = out[:0]
		for rows.Next() {
			var id, body string
			if err := rows.Scan(&id, &body); err != nil {
				return fmt.Errorf("scan %s: %w", tableAlertState, err)
			}
			out = append(out, alert.JobSnapshot{JobID: id, State: []byte(body)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
