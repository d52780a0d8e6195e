package clickhouse

import (
	"context"
	"fmt"
	"time"
)

// tableJobState is the table of migration 0008: the state kept per
// consumer group and job, one row per part, ReplacingMergeTree(version),
// the latest state read with argMax. Every part is saved and loaded here.
const tableJobState = "job_state"

// The parts of a job's saved state.
const (
	partEngine = "engine" // skew.JobState as JSON (SaveState)
	partAlerts = "alerts" // alert.JobSnapshot.State (SaveAlertState)
)

// jobStateColumns are the job_state columns saveJobStates inserts.
var jobStateColumns = []string{"consumer_group", "part", "job_id", "state", "version", "saved_at"}

// jobPart is one job's state of a part; an empty state deletes it.
type jobPart struct{ job, state string }

// saveJobStates stores the states of part for a consumer group under
// version (later versions win), in one attempt; what names the operation
// in errors.
func (w *Writer) saveJobStates(ctx context.Context, what, group, part string, version uint64, states []jobPart) error {
	if len(states) == 0 {
		return nil
	}
	now := time.Now().UTC().Truncate(time.Second)
	rows := make([]row, len(states))
	for i, st := range states {
		if st.job == "" {
			return permanentErr(what, fmt.Errorf("state %d without a job_id", i))
		}
		rows[i] = row{group, part, st.job, st.state, version, now}
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.s.closed {
		return permanentErr(what, ErrClosed)
	}
	op := fmt.Sprintf("insert %d rows of %s into %s", len(rows), part, tableJobState)
	return w.s.classify(ctx, op, w.s.insertRows(ctx, tableJobState, jobStateColumns, rows))
}

// loadJobStates calls each with the latest state of part of every job of
// a consumer group, by job id, leaving out empty states (deleted), once
// the read succeeded; an error of each stops the calls and is returned.
// It makes one attempt: the caller retries.
func (w *Writer) loadJobStates(ctx context.Context, what, group, part string, each func(job, state string) error) error {
	var jobs, states []string
	err := w.s.query(ctx, what, "SELECT job_id, argMax(state, version) AS s FROM "+w.s.table(tableJobState)+
		" WHERE consumer_group = ? AND part = ? GROUP BY job_id HAVING s != '' ORDER BY job_id", []any{group, part}, func(rows rowScanner) error {
		jobs, states = jobs[:0], states[:0] // a read tried again starts over
		for rows.Next() {
			var job, state string
			if err := rows.Scan(&job, &state); err != nil {
				return fmt.Errorf("scan %s: %w", tableJobState, err)
			}
			jobs, states = append(jobs, job), append(states, state)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := range jobs {
		if err := each(jobs[i], states[i]); err != nil {
			return err
		}
	}
	return nil
}
