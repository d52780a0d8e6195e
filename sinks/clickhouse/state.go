package clickhouse

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// stateColumns are the engine_state columns SaveState inserts.
var stateColumns = []string{"consumer_group", "job_id", "closed_up_to", "state", "version", "saved_at"}

// SaveState stores the engine's cross-window state of each job for a
// consumer group, under version (later versions win), and returns once the
// server has acknowledged it. Like Write it makes one attempt (its caller
// retries) and its error is permanent (retry.IsPermanent) when a retry
// cannot help. It is not paced: the
// pipeline saves state only when windows close.
func (s *Sink) SaveState(ctx context.Context, group string, version uint64, states []skew.JobState) error {
	if len(states) == 0 {
		return nil
	}
	now := time.Now().UTC().Truncate(time.Second)
	rows := make([]row, 0, len(states))
	for i := range states {
		st := &states[i]
		b, err := json.Marshal(st)
		if err != nil {
			return fatal(fmt.Sprintf("encode state of job %.64q", st.JobID), err)
		}
		rows = append(rows, row{group, st.JobID, st.ClosedUpTo, string(b), version, now})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fatal("save state", ErrClosed)
	}
	op := fmt.Sprintf("insert %d rows into engine_state", len(rows))
	return s.attempt(ctx, op, func(ctx context.Context) error {
		return s.insertRows(ctx, "engine_state", stateColumns, rows)
	})
}

// LoadState returns the latest saved state of every job of a consumer
// group, ordered by job ID. A state that does not decode is an error that
// names the job: starting without it would silently change findings.
func (s *Sink) LoadState(ctx context.Context, group string) ([]skew.JobState, error) {
	var out []skew.JobState
	err := s.retry(ctx, "load engine state", "engine_state", func(ctx context.Context) error {
		out = out[:0]
		rows, err := s.conn.Query(ctx, "SELECT job_id, argMax(state, version) FROM "+s.table("engine_state")+
			" WHERE consumer_group = ? GROUP BY job_id ORDER BY job_id", group)
		if err != nil {
			return fmt.Errorf("query engine_state: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var id, body string
			if err := rows.Scan(&id, &body); err != nil {
				return fmt.Errorf("scan engine_state: %w", err)
			}
			var st skew.JobState
			if err := json.Unmarshal([]byte(body), &st); err != nil {
				return fatal(fmt.Sprintf("decode engine state of job %.64q", id), err)
			}
			out = append(out, st)
		}
		return rows.Err()
	})
	return out, err
}
