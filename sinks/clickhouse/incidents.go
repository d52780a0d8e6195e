package clickhouse

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew/incident"
)

// tableIncidents is the table of migration 0005.
const tableIncidents = "incidents"

// Limits of Incidents.
const (
	DefaultIncidentsLimit = 100
	MaxIncidentsLimit     = 10000
)

// incidentColumns are the incidents columns WriteIncidents inserts.
func incidentColumns() []string {
	return []string{"id", "job_id", "job_name", "task_name", "subtask", "cause", "key", "state",
		"incident_start", "incident_end", "last_seen", "windows",
		"peak_busy_ms_per_s", "mean_busy_ms_per_s", "peak_input_ratio", "mean_input_ratio", "peak_share", "mean_share",
		"hot_keys", "summary", "body", "version", "inserted_at"}
}

// incidentRow maps one incident to its row; its version is UpdatedAt.
func incidentRow(in *incident.Incident, now time.Time) (row, error) {
	if in.ID == "" || in.JobID == "" || in.UpdatedAt < 0 {
		return nil, fmt.Errorf("incident %q of job %.64q: no id, no job or negative updated_at", in.ID, in.JobID)
	}
	body, err := marshalJSON(in)
	if err != nil {
		return nil, fmt.Errorf("encode incident %s: %w", in.ID, err)
	}
	keys := in.HotKeys
	if keys == nil {
		keys = []string{}
	}
	return row{in.ID, in.JobID, in.JobName, in.TaskName, clampInt32(in.Subtask), in.Cause, in.Key, in.State,
		in.Start, in.End, in.LastSeen, uint32(max(0, in.Windows)),
		in.Busy.Peak, in.Busy.Mean, in.InputRatio.Peak, in.InputRatio.Mean, in.Share.Peak, in.Share.Mean,
		keys, in.Summary, body, uint64(in.UpdatedAt), now}, nil
}

// WriteIncidents stores incident changes as incident.Tracker returns them,
// one row each, and returns once the server acknowledged them. Writing the
// same changes again (a replay, a retry) adds rows that merges collapse:
// the version is the incident's UpdatedAt. Like Write it is serialised
// with the other writes, paced by FlushInterval, makes one attempt (the
// caller retries), and returns a permanent error for an incident that
// cannot be stored (nothing is inserted then).
func (w *Writer) WriteIncidents(ctx context.Context, ins []incident.Incident) error {
	if len(ins) == 0 {
		return nil
	}
	now := time.Now().UTC().Truncate(time.Second)
	rows := make([]row, 0, len(ins))
	for i := range ins {
		r, err := incidentRow(&ins[i], now)
		if err != nil {
			w.s.m.insertErrors.WithLabelValues("fatal").Inc()
			return permanentErr("write incidents", err)
		}
		rows = append(rows, r)
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.s.closed {
		return permanentErr("write incidents", ErrClosed)
	}
	cols := incidentColumns()
	for start := 0; start < len(rows); start += w.s.cfg.BatchMaxRows {
		chunk := rows[start:min(start+w.s.cfg.BatchMaxRows, len(rows))]
		if err := w.s.pace(ctx, tableIncidents); err != nil {
			return err
		}
		op := fmt.Sprintf("insert %d rows into %s", len(chunk), tableIncidents)
		err := w.s.classify(ctx, op, w.s.insertRows(ctx, tableIncidents, cols, chunk))
		w.s.lastInsert[tableIncidents] = time.Now()
		if err != nil {
			return err
		}
	}
	return nil
}

// LoadIncidents returns what incident.Tracker.Restore needs: the latest
// state of every incident that is open, and for each job the end of the
// latest window any incident of it saw, including the incidents that
// followed a new run of their job (incident.Incident.RunJobID, in the body
// only: the row's job_id stays the run the incident opened in, so that the
// incidents of a job are found by its id). An open incident whose stored
// body does not decode is left out, and its job returned among the refused
// (incidentsink.IncidentObserver.Resume restores none of that job's open
// incidents). It makes one attempt; the caller (start-up) retries.
func (w *Writer) LoadIncidents(ctx context.Context) (open []incident.Incident, seen map[string]int64, refused []incident.RefusedJob, err error) {
	t := w.s.table(tableIncidents)
	seen = map[string]int64{}
	seenQ, openQ := loadIncidentsQueries(t)
	err = w.s.query(ctx, "load incidents", seenQ, nil, func(rows rowScanner) error {
		for rows.Next() {
			var (
				job  string
				last int64
			)
			if err := rows.Scan(&job, &last); err != nil {
				return fmt.Errorf("scan incidents: %w", err)
			}
			seen[job] = max(seen[job], last)
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	err = w.s.query(ctx, "load open incidents", openQ, []any{incident.StateOpen}, func(rows rowScanner) error {
		open, refused = open[:0], refused[:0]
		for rows.Next() {
			var id, job, body, state string
			if err := rows.Scan(&id, &job, &body, &state); err != nil {
				return fmt.Errorf("scan incidents: %w", err)
			}
			var in incident.Incident
			if err := json.Unmarshal([]byte(body), &in); err != nil {
				refused = append(refused, incident.RefusedJob{JobID: job, Err: fmt.Errorf("incident %.64q does not decode: %w", id, err)})
				continue
			}
			open = append(open, in)
		}
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return open, seen, refused, nil
}

// loadIncidentsQueries returns the queries of LoadIncidents: each job's
// latest window, by job_id and by the run an incident followed (a job may come twice: the caller takes the later), and the
// open incidents (one parameter: the open state). visitParamExtractString
// reads the top-level run_job_id of the body; 18.16 has it, and the
// casts give both halves of the union one type (job_id is
// LowCardinality in the modern dialect).
func loadIncidentsQueries(table string) (seen, open string) {
	return "SELECT CAST(job_id AS String) AS j, max(last_seen) FROM " + table + " GROUP BY j" +
			" UNION ALL SELECT CAST(visitParamExtractString(body, 'run_job_id') AS String) AS j, max(last_seen) FROM " + table +
			" WHERE j != '' GROUP BY j",
		"SELECT id, CAST(any(job_id) AS String) AS j, argMax(body, version) AS b, argMax(state, version) AS st FROM " + table + " GROUP BY id HAVING st = ? ORDER BY id"
}

// IncidentReader reads incidents (servestore.IncidentReader).
type IncidentReader struct{ s *Store }

// Incidents returns the Store's reader of incidents.
func (s *Store) Incidents() *IncidentReader { return &IncidentReader{s} }

// Incidents returns incidents (their body, the incident.Incident JSON),
// latest start first: the latest state of each (argMax by version, so
// replays count once), filtered by job, state and since (incidents whose
// latest window ended at or after it).
func (r *IncidentReader) Incidents(ctx context.Context, iq servestore.IncidentsQuery) ([]json.RawMessage, error) {
	q, args := incidentsQuery(r.s.table(tableIncidents), iq)
	var out []json.RawMessage
	err := r.s.query(ctx, "read incidents", q, args, func(rows rowScanner) error {
		out = out[:0]
		for rows.Next() {
			var (
				id, body string
				start    int64
			)
			if err := rows.Scan(&id, &body, &start); err != nil {
				return err
			}
			if b, ok := r.s.jsonBody("incidents", body, "id", id); ok {
				out = append(out, b)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// incidentsQuery builds the query of Incidents; values are parameters.
func incidentsQuery(table string, iq servestore.IncidentsQuery) (string, []any) {
	var where, having whereClause
	where.equal("job_id", iq.JobID)
	having.equal("st", iq.State)
	if !iq.Since.IsZero() {
		having.add("seen >= ?", iq.Since.UnixMilli())
	}
	q := "SELECT id, argMax(body, version) AS b, argMax(incident_start, version) AS s, argMax(state, version) AS st, " +
		"argMax(last_seen, version) AS seen FROM " + table + where.sql() + " GROUP BY id" + having.join(" HAVING ")
	q = "SELECT id, b, s FROM (" + q + ") ORDER BY s DESC, id LIMIT " + fmt.Sprint(clampLimit(iq.Limit, DefaultIncidentsLimit, MaxIncidentsLimit))
	return q, append(where.args, having.args...)
}
