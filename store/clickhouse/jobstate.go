package clickhouse

import (
	"context"
	"fmt"
)

// The per-job state tables, engine_state (SaveState) and alert_state
// (SaveAlertState), have one layout: a row per consumer group and job,
// ReplacingMergeTree(version), the latest state read with argMax. They
// are saved and loaded here.

// saveJobStates inserts rows (one per job, cols first the consumer group
// and the job id) into table, in one attempt; what names the operation in
// errors.
func (w *Writer) saveJobStates(ctx context.Context, what, table string, cols []string, rows []row) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.s.closed {
		return permanentErr(what, ErrClosed)
	}
	op := fmt.Sprintf("insert %d rows into %s", len(rows), table)
	return w.s.classify(ctx, op, w.s.insertRows(ctx, table, cols, rows))
}

// loadJobStates calls each with the latest state of every job of a
// consumer group in table, by job id, leaving out empty states when
// skipEmpty, once the read succeeded; an error of each stops the calls
// and is returned. It makes one attempt: the caller retries.
func (w *Writer) loadJobStates(ctx context.Context, what, table, group string, skipEmpty bool, each func(job, state string) error) error {
	having := ""
	if skipEmpty {
		having = " HAVING s != ''"
	}
	var jobs, states []string
	err := w.s.query(ctx, what, "SELECT job_id, argMax(state, version) AS s FROM "+w.s.table(table)+
		" WHERE consumer_group = ? GROUP BY job_id"+having+" ORDER BY job_id", []any{group}, func(rows rowScanner) error {
		jobs, states = jobs[:0], states[:0] // a read tried again starts over
		for rows.Next() {
			var job, state string
			if err := rows.Scan(&job, &state); err != nil {
				return fmt.Errorf("scan %s: %w", table, err)
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
