package clickhouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/plans"
)

// Write stores every finding of fs, in batches of at most BatchMaxRows rows:
// one row in the findings table and one in its kind's table (hot_keys,
// salting_plans), or for a subtask_stats finding one row in subtask_stats
// only. version is the caller's monotonically increasing number (e.g. the
// input's highest Kafka offset): rows with the same key and a higher version
// replace older ones, so writing the same findings again after a crash
// duplicates nothing. Write blocks until the server has acknowledged every
// row, so the caller may commit its input offsets when it returns nil; it
// paces inserts per table by FlushInterval. It makes one attempt: the caller
// retries (the runner does, without bound, while it stops consuming). A
// finding that cannot be stored (then nothing of fs is inserted) or a server
// error no retry can fix is permanent (retry.IsPermanent). When ctx ends it
// returns ctx's error. A failed or interrupted Write may have inserted some
// of the tables, which is harmless: replays replace.
func (w *Writer) Write(ctx context.Context, version uint64, fs []skew.Finding) error {
	// Every finding is mapped, and so checked, before anything is
	// inserted. The rows of the few real findings are kept; a statistics
	// row (one per subtask and window: 100k a window on a fleet of 100k
	// subtasks) is mapped into a scratch that is dropped, and mapped again
	// as it is appended to its batch, so a write never holds them all as
	// Go values (that doubled a fleet's peak heap).
	rows, scratch := tableRows{}, tableRows{}
	stats := 0
	now := time.Now()
	for i := range fs {
		f := &fs[i]
		dst := rows
		if f.Kind == skew.KindSubtaskStats {
			scratch[tableSubtaskStats] = scratch[tableSubtaskStats][:0]
			dst = scratch
			stats++
		}
		if err := mapFinding(dst, f, version, now); err != nil {
			w.s.m.insertErrors.WithLabelValues("fatal").Inc()
			return permanentErr(fmt.Sprintf("finding %d (%s, job %s, task %s, window %d)", i, f.Kind, f.JobID, f.TaskName, f.WindowStart), err)
		}
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.s.closed {
		return permanentErr("write", ErrClosed)
	}
	for _, table := range tableOrder() {
		if table == tableSubtaskStats {
			if err := w.writeStats(ctx, stats, version, now, fs); err != nil {
				return err
			}
			continue
		}
		rs := rows[table]
		for start := 0; start < len(rs); start += w.s.cfg.BatchMaxRows {
			chunk := rs[start:min(start+w.s.cfg.BatchMaxRows, len(rs))]
			if err := w.insert(ctx, table, len(chunk), func(add func(row) error) error {
				for _, r := range chunk {
					if err := add(r); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeStats inserts the statistics rows of the n subtask_stats findings
// of fs, in batches of at most BatchMaxRows, mapping each row as it is
// appended (Write checked them all before). The caller holds the lock.
func (w *Writer) writeStats(ctx context.Context, n int, version uint64, now time.Time, fs []skew.Finding) error {
	one := tableRows{}
	next := 0 // the index in fs to look for the next statistics finding from
	for done := 0; done < n; {
		size := min(w.s.cfg.BatchMaxRows, n-done)
		err := w.insert(ctx, tableSubtaskStats, size, func(add func(row) error) error {
			for added := 0; added < size; next++ {
				f := &fs[next]
				if f.Kind != skew.KindSubtaskStats {
					continue
				}
				one[tableSubtaskStats] = one[tableSubtaskStats][:0]
				if err := mapFinding(one, f, version, now); err != nil {
					return permanentErr(fmt.Sprintf("finding %d", next), err)
				}
				if err := add(one[tableSubtaskStats][0]); err != nil {
					return err
				}
				added++
			}
			return nil
		})
		if err != nil {
			return err
		}
		done += size
	}
	return nil
}

// insert sends one batch of size rows, which fill hands to add, into
// table, after the table's pacing; the caller holds the lock.
func (w *Writer) insert(ctx context.Context, table string, size int, fill func(add func(row) error) error) error {
	if err := w.s.pace(ctx, table); err != nil {
		return err
	}
	op := fmt.Sprintf("insert %d rows into %s", size, table)
	err := w.s.classify(ctx, op, w.s.insertEach(ctx, table, insertColumns(table), fill))
	w.s.lastInsert[table] = time.Now()
	return err
}

// SaveState stores the engine's cross-window state of each job for a
// consumer group (a tombstone, skew.JobState.Ended, as an empty state
// that deletes the job's), under version (later versions win), and
// returns once the server has acknowledged it. Like Write it makes one
// attempt (the caller retries) and its error is permanent
// (retry.IsPermanent) when a retry cannot help. It is not paced: the
// pipeline saves state only when windows close.
func (w *Writer) SaveState(ctx context.Context, group string, version uint64, states []skew.JobState) error {
	parts := make([]jobPart, 0, len(states))
	for i := range states {
		st := &states[i]
		if st.Ended {
			parts = append(parts, jobPart{job: st.JobID})
			continue
		}
		b, err := json.Marshal(st)
		if err != nil {
			return permanentErr(fmt.Sprintf("encode state of job %.64q", st.JobID), err)
		}
		parts = append(parts, jobPart{st.JobID, string(b)})
	}
	return w.saveJobStates(ctx, "save state", group, partEngine, version, parts)
}

// LoadState returns the latest saved state of every job of a consumer
// group whose state was not deleted, ordered by job ID, and the states
// that do not decode (corrupt, or of another version), each refused with
// its job and the reason: one job's unreadable state costs that job its
// history, never the others' (skew.Engine.Restore refuses likewise). It
// makes one attempt; the caller (start-up) retries.
func (w *Writer) LoadState(ctx context.Context, group string) ([]skew.JobState, []skew.RefusedJob, error) {
	var out []skew.JobState
	var refused []skew.RefusedJob
	err := w.loadJobStates(ctx, "load engine state", group, partEngine, func(job, state string) error {
		var st skew.JobState
		if err := json.Unmarshal([]byte(state), &st); err != nil {
			refused = append(refused, skew.RefusedJob{JobID: job, Err: fmt.Errorf("decode engine state of job %.64q: %w", job, err)})
			return nil
		}
		out = append(out, st)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, refused, nil
}

// Column lists of the inserts into the tables of migration 0003.
func planColumns() []string {
	return []string{"job_id", "task_name", "version", "generated_at", "updated_at",
		"expires_at", "retired", "body", "revision", "inserted_at"}
}

func overrideColumns() []string {
	return []string{"job_id", "task_name", "action", "key", "body", "changed_by",
		"changed_at", "deleted", "revision", "inserted_at"}
}

func auditColumns() []string {
	return []string{"at", "event_date", "changed_by", "method", "action", "job_id",
		"task_name", "key", "what", "remote_addr", "result", "inserted_at"}
}

// epochMs returns t in epoch milliseconds, 0 for the zero time (a plan
// without expiry: pinned or overridden).
func epochMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// planRevision orders the states of one plan version: twice the plan's
// updated_at (epoch ms, negative clamped to 0), so that a retirement can
// take the odd number just above the state it retires (see 0003_plans.sql).
func planRevision(p *plans.Plan) uint64 {
	ms := epochMs(p.UpdatedAt)
	if ms < 0 {
		return 0
	}
	return uint64(ms) * 2
}

// WritePlans stores plan changes, as plans.Manager emits them, in the
// plans table, in order: a new or confirmed plan as one row of its
// version, a retirement as a copy of the task's newest state with
// retired = 1 (nothing when the task has no plan or its newest state is
// already retired). Writing the same changes again (a replay) replaces
// rows instead of adding states, so the caller may write changes before
// it commits the input they came from. A plan's ExpiresAt is that of its
// last row, so the caller must also write a plan again when it is
// confirmed with a later ExpiresAt (same version), or readers will
// consider it expired. Like Write it is serialised with the other writes,
// paced by FlushInterval, makes one attempt (the caller retries: the
// runner, through planpub.PlanObserver), and returns a permanent error for a
// change that cannot be stored (nothing is inserted then).
func (w *Writer) WritePlans(ctx context.Context, changes []plans.Change) error {
	rows := make([]planRow, 0, len(changes))
	retiring := map[planTask]bool{}
	for i, c := range changes {
		op := fmt.Sprintf("plan change %d (job %s, task %s)", i, c.JobID, c.TaskName)
		if c.JobID == "" || c.TaskName == "" {
			return permanentErr(op, errors.New("empty job_id or task_name"))
		}
		if c.Retired {
			retiring[planTask{c.JobID, c.TaskName}] = true
			rows = append(rows, planRow{job: c.JobID, task: c.TaskName, retired: 1, change: i})
			continue
		}
		p := c.Plan
		if p == nil {
			return permanentErr(op, errors.New("no plan and not retired"))
		}
		if p.JobID != c.JobID || p.TaskName != c.TaskName {
			return permanentErr(op, fmt.Errorf("plan is for job %q task %q", p.JobID, p.TaskName))
		}
		body, err := marshalJSON(p)
		if err != nil {
			return permanentErr(op+": encode", err)
		}
		rows = append(rows, planRow{job: p.JobID, task: p.TaskName, version: p.Version,
			generatedAt: epochMs(p.GeneratedAt), updatedAt: epochMs(p.UpdatedAt),
			expiresAt: epochMs(p.ExpiresAt), body: body, revision: planRevision(p)})
	}
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if w.s.closed {
		return permanentErr("write plans", ErrClosed)
	}
	// newest is each retiring task's newest state: stored, then as this
	// call changes it, so a retirement retires what precedes it.
	newest := map[planTask]*planRow{}
	for t := range retiring {
		r, ok, err := w.s.lastPlanRow(ctx, t.job, t.task)
		if err != nil {
			return err
		}
		if ok {
			newest[t] = &r
		}
	}
	now := time.Now().UTC().Truncate(time.Second)
	var out []row
	for i := range rows {
		r := &rows[i]
		t := planTask{r.job, r.task}
		cur := newest[t]
		if r.retired == 0 {
			out = append(out, r.values(now))
			if retiring[t] && (cur == nil || r.version > cur.version || r.version == cur.version && r.revision > cur.revision) {
				newest[t] = r
			}
			continue
		}
		if cur == nil || cur.retired != 0 {
			continue
		}
		// The retired row keeps the plan's version; its updated_at is
		// when it was retired (event time), for a restart
		// (RestorablePlans).
		ret := *cur
		ret.retired, ret.revision = 1, cur.revision+1
		if c := changes[r.change]; !c.At.IsZero() {
			ret.updatedAt = epochMs(c.At)
		}
		out = append(out, ret.values(now))
		newest[t] = &ret
	}
	return w.s.insertPlanRows(ctx, out)
}

// planTask identifies a task's plan.
type planTask struct{ job, task string }

// insertPlanRows inserts rows into the plans table; s.mu is held.
func (s *Store) insertPlanRows(ctx context.Context, rows []row) error {
	for start := 0; start < len(rows); start += s.cfg.BatchMaxRows {
		chunk := rows[start:min(start+s.cfg.BatchMaxRows, len(rows))]
		if err := s.pace(ctx, tablePlans); err != nil {
			return err
		}
		op := fmt.Sprintf("insert %d rows into %s", len(chunk), tablePlans)
		err := s.classify(ctx, op, s.insertRows(ctx, tablePlans, planColumns(), chunk))
		s.lastInsert[tablePlans] = time.Now()
		if err != nil {
			return err
		}
	}
	return nil
}

// planRow is one row of the plans table.
type planRow struct {
	job, task                         string
	version                           uint64
	generatedAt, updatedAt, expiresAt int64
	retired                           uint8
	body                              string
	revision                          uint64
	change                            int // the change a retirement row is of, in WritePlans
}

// values returns the row in planColumns order.
func (r *planRow) values(insertedAt time.Time) row {
	return row{r.job, r.task, r.version, r.generatedAt, r.updatedAt, r.expiresAt,
		r.retired, r.body, r.revision, insertedAt}
}

// lastPlanRow reads the newest state of a task's plan.
func (s *Store) lastPlanRow(ctx context.Context, job, task string) (planRow, bool, error) {
	r := planRow{job: job, task: task}
	found := false
	q, args := lastPlanQuery(s.table(tablePlans), job, task)
	err := s.query(ctx, "read last plan of "+plans.Key(job, task), q, args,
		func(rows rowScanner) error {
			found = false
			for rows.Next() {
				if err := rows.Scan(&r.version, &r.generatedAt, &r.updatedAt, &r.expiresAt,
					&r.retired, &r.body, &r.revision); err != nil {
					return err
				}
				found = true
			}
			return nil
		})
	return r, found, err
}

// PutOverride stores o as the active override for its job, task, action
// and key, replacing one that is there, and records audit in the audit
// log. o.At orders changes of the same override: a later At wins, so the
// caller must give each change of one override a later At than the last.
// The audit entry is written first, so no change goes unaudited; when the
// override's insert then fails the audit shows a change that did not
// happen (and the caller got an error). It makes one attempt: the caller
// (skewlens serve) retries, and a retry after the override's insert
// failed records the audit entry again, with the same time.
func (w *Writer) PutOverride(ctx context.Context, o plans.Override, audit servestore.AuditEntry) error {
	if err := o.Validate(); err != nil {
		return permanentErr("put override", err)
	}
	if o.At.IsZero() || o.At.UnixNano() <= 0 {
		return permanentErr("put override", errors.New("override without a time"))
	}
	body, err := marshalJSON(o)
	if err != nil {
		return permanentErr("put override: encode", err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	r := row{o.JobID, o.TaskName, o.Action, o.Key, body, o.By, o.At.UnixMilli(), uint8(0), uint64(o.At.UnixNano()), now}
	return w.s.writeOverride(ctx, "put override "+plans.Key(o.JobID, o.TaskName)+" "+o.Action, r, audit)
}

// DeleteOverride deactivates the override for job, task, action and key
// (key is "" except for exclude) and records audit. It writes a deleted
// row timed audit.At, which must be later than the override's At; deleting
// an override that is not there writes the row all the same.
func (w *Writer) DeleteOverride(ctx context.Context, jobID, taskName, action, key string, audit servestore.AuditEntry) error {
	if jobID == "" || taskName == "" || action == "" {
		return permanentErr("delete override", errors.New("empty job_id, task_name or action"))
	}
	if audit.At.IsZero() || audit.At.UnixNano() <= 0 {
		return permanentErr("delete override", errors.New("audit entry without a time"))
	}
	now := time.Now().UTC().Truncate(time.Second)
	r := row{jobID, taskName, action, key, "", audit.By, audit.At.UnixMilli(), uint8(1), uint64(audit.At.UnixNano()), now}
	return w.s.writeOverride(ctx, "delete override "+plans.Key(jobID, taskName)+" "+action, r, audit)
}

// writeOverride inserts the audit row, then the override row.
func (s *Store) writeOverride(ctx context.Context, op string, r row, audit servestore.AuditEntry) error {
	ar, err := auditRow(audit)
	if err != nil {
		return permanentErr(op, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return permanentErr(op, ErrClosed)
	}
	if err := s.insertRows(ctx, tablePlanAudit, auditColumns(), []row{ar}); err != nil {
		return s.classify(ctx, op+": audit", err)
	}
	return s.classify(ctx, op, s.insertRows(ctx, tablePlanOverrides, overrideColumns(), []row{r}))
}

// auditRow maps an audit entry to its row.
func auditRow(a servestore.AuditEntry) (row, error) {
	if a.At.IsZero() {
		return nil, errors.New("audit entry without a time")
	}
	what := string(a.What)
	if what != "" && !json.Valid(a.What) {
		return nil, errors.New("audit entry: what is not JSON")
	}
	at := a.At.UTC()
	date := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
	return row{at.UnixMilli(), date, a.By, a.Method, a.Action, a.JobID, a.TaskName, a.Key,
		what, a.RemoteAddr, a.Result, time.Now().UTC().Truncate(time.Second)}, nil
}
