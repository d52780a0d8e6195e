package clickhouse

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew"
)

// Limits of Stats.
const (
	DefaultStatsLimit = 100
	MaxStatsLimit     = 10000
)

// Stats returns statistics rows newest window first (then by job, task
// and subtask), each as the skew.Finding JSON contract of kind
// subtask_stats, built from the typed columns of subtask_stats: the
// latest version of each row, so replays count once. Rows written before
// migration 0004 have no busy_source; a row JSON cannot carry (NaN, from
// another tool) is skipped with a warning. It makes one attempt (the
// caller retries) and is safe for concurrent use, also with Write.
func (r *StatsReader) Stats(ctx context.Context, sq servestore.StatsQuery) ([]json.RawMessage, error) {
	q, args := statsQuery(r.s.table(tableSubtaskStats), sq)
	var out []json.RawMessage
	err := r.s.query(ctx, "read subtask stats", q, args, func(rows rowScanner) error {
		out = out[:0]
		for rows.Next() {
			f, err := scanStats(rows)
			if err != nil {
				return err
			}
			b, err := marshalJSON(f)
			if err != nil {
				// The sink writes finite numbers only; a row from another
				// tool that JSON cannot carry (NaN) is skipped rather than
				// failing every query.
				r.s.log.Warn("clickhouse sink: skipping a subtask_stats row that JSON cannot carry",
					"job_id", fmt.Sprintf("%.64q", f.JobID), "task_name", fmt.Sprintf("%.64q", f.TaskName),
					"subtask_index", *f.SubtaskIndex, "window_start", f.WindowStart, "err", err)
				continue
			}
			out = append(out, json.RawMessage(b))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// scanStats scans one row of statsQuery (statsColumns) into a finding.
func scanStats(rows rowScanner) (*skew.Finding, error) {
	var (
		f         = &skew.Finding{Kind: skew.KindSubtaskStats}
		st        = &skew.SubtaskStats{}
		subtask   int32
		saturated uint8
	)
	if err := rows.Scan(&f.JobID, &f.JobName, &f.TaskName, &subtask, &f.WindowStart, &f.WindowEnd,
		&st.Host, &st.TaskAttemptID, &st.BusyMsPerSecond, &st.BackPressuredMsPerSecond,
		&st.IdleMsPerSecond, &st.RecordsInPerSecond, &st.RecordsOutPerSecond, &st.InputShare,
		&st.InPoolUsage, &st.OutPoolUsage, &st.InputQueueLength, &st.OutputQueueLength,
		&st.QueueCapacity, &st.CheckpointAlignMs, &st.CheckpointDelayMs, &saturated,
		&st.BusySource, &st.SkewScore, &st.MaxMedianRatio); err != nil {
		return nil, fmt.Errorf("scan subtask_stats: %w", err)
	}
	idx := int(subtask)
	f.SubtaskIndex = &idx
	st.Saturated = saturated != 0
	f.Stats = st
	return f, nil
}
