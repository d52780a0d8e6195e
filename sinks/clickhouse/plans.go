package clickhouse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/skewlens/skewlens/plans"
	"github.com/skewlens/skewlens/serve"
)

// Tables of migration 0003 (plans, operator overrides, audit log).
const (
	tablePlans         = "plans"
	tablePlanOverrides = "plan_overrides"
	tablePlanAudit     = "plan_audit"
)

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

// Limits of Findings and Audit.
const (
	DefaultFindingsLimit = 100
	MaxFindingsLimit     = 10000
	DefaultAuditLimit    = 100
	MaxAuditLimit        = 10000
)

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

// closedNow reports whether the Sink is closed, without waiting: reads
// must not queue behind a Write that holds the lock while it retries
// (a lock is not context-aware). When the lock is busy it reports false;
// a read on a closed connection then fails on its own.
func (s *Sink) closedNow() bool {
	if !s.mu.TryLock() {
		return false
	}
	defer s.mu.Unlock()
	return s.closed
}

// query runs a read with retries. scan is called once per attempt with the
// rows of that attempt and must reset what it collects.
func (s *Sink) query(ctx context.Context, op, label, sql string, args []any, scan func(rows rowScanner) error) error {
	return s.retry(ctx, op, label, func(ctx context.Context) error {
		if s.closedNow() {
			return &FatalError{Op: op, Err: ErrClosed}
		}
		rows, err := s.conn.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		if err := scan(rows); err != nil {
			return err
		}
		return rows.Err()
	})
}

// rowScanner is the part of driver.Rows the readers use.
type rowScanner interface {
	Next() bool
	Scan(dest ...any) error
}

// WritePlans stores plan changes, as plans.Manager emits them, in the
// plans table, in order: a new or confirmed plan as one row of its
// version, a retirement as a copy of the task's newest state with
// retired = 1 (nothing when the task has no plan or its newest state is
// already retired). Writing the same changes again (a replay) replaces
// rows instead of adding states, so the caller may write changes before
// it commits the input they came from.
//
// The plans table keeps only what WritePlans is given: a plan's ExpiresAt
// is the one of its last row, so the caller must also write a plan again
// when it is confirmed with a later ExpiresAt (same version), or readers
// will consider it expired.
//
// Like Write it is serialised with the other writes, paced by
// FlushInterval, retries retryable errors, and returns a *FatalError for
// a change that cannot be stored (nothing is inserted then).
func (s *Sink) WritePlans(ctx context.Context, changes []plans.Change) error {
	rows := make([]planRow, 0, len(changes))
	retiring := map[planTask]bool{}
	for i, c := range changes {
		op := fmt.Sprintf("plan change %d (job %s, task %s)", i, c.JobID, c.TaskName)
		if c.JobID == "" || c.TaskName == "" {
			return &FatalError{Op: op, Err: errors.New("empty job_id or task_name")}
		}
		if c.Retired {
			retiring[planTask{c.JobID, c.TaskName}] = true
			rows = append(rows, planRow{job: c.JobID, task: c.TaskName, retired: 1})
			continue
		}
		p := c.Plan
		if p == nil {
			return &FatalError{Op: op, Err: errors.New("no plan and not retired")}
		}
		if p.JobID != c.JobID || p.TaskName != c.TaskName {
			return &FatalError{Op: op, Err: fmt.Errorf("plan is for job %q task %q", p.JobID, p.TaskName)}
		}
		body, err := marshalJSON(p)
		if err != nil {
			return &FatalError{Op: op + ": encode", Err: err}
		}
		rows = append(rows, planRow{job: p.JobID, task: p.TaskName, version: p.Version,
			generatedAt: epochMs(p.GeneratedAt), updatedAt: epochMs(p.UpdatedAt),
			expiresAt: epochMs(p.ExpiresAt), body: body, revision: planRevision(p)})
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return &FatalError{Op: "write plans", Err: ErrClosed}
	}
	// newest is each retiring task's newest state: stored, then as this
	// call changes it, so a retirement retires what precedes it.
	newest := map[planTask]*planRow{}
	for t := range retiring {
		r, ok, err := s.lastPlanRow(ctx, t.job, t.task)
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
		ret := *cur
		ret.retired, ret.revision = 1, cur.revision+1
		out = append(out, ret.values(now))
		newest[t] = &ret
	}
	return s.insertPlanRows(ctx, out)
}

// planTask identifies a task's plan.
type planTask struct{ job, task string }

// insertPlanRows inserts rows into the plans table; s.mu is held.
func (s *Sink) insertPlanRows(ctx context.Context, rows []row) error {
	for start := 0; start < len(rows); start += s.cfg.BatchMaxRows {
		chunk := rows[start:min(start+s.cfg.BatchMaxRows, len(rows))]
		if err := s.pace(ctx, tablePlans); err != nil {
			return err
		}
		err := s.retry(ctx, fmt.Sprintf("insert %d rows into %s", len(chunk), tablePlans), tablePlans,
			func(ctx context.Context) error {
				return s.insertRows(ctx, tablePlans, planColumns(), chunk)
			})
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
}

// values returns the row in planColumns order.
func (r *planRow) values(insertedAt time.Time) row {
	return row{r.job, r.task, r.version, r.generatedAt, r.updatedAt, r.expiresAt,
		r.retired, r.body, r.revision, insertedAt}
}

// lastPlanRow reads the newest state of a task's plan.
func (s *Sink) lastPlanRow(ctx context.Context, job, task string) (planRow, bool, error) {
	r := planRow{job: job, task: task}
	found := false
	q, args := lastPlanQuery(s.table(tablePlans), job, task)
	err := s.query(ctx, "read last plan of "+plans.Key(job, task), tablePlans, q, args,
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

// CurrentPlans returns the current plan of every task: the newest state
// per task (highest version, then revision) unless it is retired or
// expired at now (expires_at <= now; a plan without ExpiresAt, pinned or
// overridden, does not expire), ordered by job and task. The plans are as
// the writer stored them (plans.Manager applies overrides it knows of);
// apply the current overrides with plans.Apply.
//
// With the zero now, expired plans are returned too: every task's newest
// state that is not retired, which is what plans.Manager.Restore takes
// at start-up (its Advance then retires what has expired by event time).
func (s *Sink) CurrentPlans(ctx context.Context, now time.Time) ([]plans.Plan, error) {
	return s.currentPlans(ctx, "", "", now)
}

// Plan returns the current plan of one task, or nil when it has none (no
// plan, or the newest is retired or expired at now).
func (s *Sink) Plan(ctx context.Context, jobID, taskName string, now time.Time) (*plans.Plan, error) {
	if jobID == "" || taskName == "" {
		return nil, nil
	}
	ps, err := s.currentPlans(ctx, jobID, taskName, now)
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	return &ps[0], nil
}

func (s *Sink) currentPlans(ctx context.Context, jobID, taskName string, now time.Time) ([]plans.Plan, error) {
	q, args := currentPlansQuery(s.table(tablePlans), jobID, taskName, now)
	var out []plans.Plan
	err := s.query(ctx, "read current plans", tablePlans, q, args, func(rows rowScanner) error {
		out = out[:0]
		for rows.Next() {
			var (
				job, task, body string
				retired         uint8
				expires         int64
			)
			if err := rows.Scan(&job, &task, &body, &retired, &expires); err != nil {
				return err
			}
			var p plans.Plan
			if err := json.Unmarshal([]byte(body), &p); err != nil {
				return &FatalError{Op: "decode plan " + plans.Key(job, task), Err: err}
			}
			// The columns hold the exact bytes; JSON cannot carry
			// invalid UTF-8.
			p.JobID, p.TaskName = job, task
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Overrides returns every active override (not deleted), ordered by job,
// task, action and key.
func (s *Sink) Overrides(ctx context.Context) ([]plans.Override, error) {
	q := overridesQuery(s.table(tablePlanOverrides))
	var out []plans.Override
	err := s.query(ctx, "read overrides", tablePlanOverrides, q, nil, func(rows rowScanner) error {
		out = out[:0]
		for rows.Next() {
			var (
				job, task, action, key, body string
				deleted                      uint8
			)
			if err := rows.Scan(&job, &task, &action, &key, &body, &deleted); err != nil {
				return err
			}
			var o plans.Override
			if err := json.Unmarshal([]byte(body), &o); err != nil {
				return &FatalError{Op: "decode override " + plans.Key(job, task) + " " + action, Err: err}
			}
			o.JobID, o.TaskName, o.Action, o.Key = job, task, action, key
			out = append(out, o)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PutOverride stores o as the active override for its job, task, action
// and key, replacing one that is there, and records audit in the audit
// log. o.At orders changes of the same override: a later At wins, so the
// caller must give each change of one override a later At than the last.
// The audit entry is written first, so no change goes unaudited; when the
// override's insert then fails the audit shows a change that did not
// happen (and the caller got an error).
func (s *Sink) PutOverride(ctx context.Context, o plans.Override, audit serve.AuditEntry) error {
	if err := o.Validate(); err != nil {
		return &FatalError{Op: "put override", Err: err}
	}
	if o.At.IsZero() || o.At.UnixNano() <= 0 {
		return &FatalError{Op: "put override", Err: errors.New("override without a time")}
	}
	body, err := marshalJSON(o)
	if err != nil {
		return &FatalError{Op: "put override: encode", Err: err}
	}
	now := time.Now().UTC().Truncate(time.Second)
	r := row{o.JobID, o.TaskName, o.Action, o.Key, body, o.By, o.At.UnixMilli(), uint8(0), uint64(o.At.UnixNano()), now}
	return s.writeOverride(ctx, "put override "+plans.Key(o.JobID, o.TaskName)+" "+o.Action, r, audit)
}

// DeleteOverride deactivates the override for job, task, action and key
// (key is "" except for exclude) and records audit. It writes a deleted
// row timed audit.At, which must be later than the override's At; deleting
// an override that is not there writes the row all the same.
func (s *Sink) DeleteOverride(ctx context.Context, jobID, taskName, action, key string, audit serve.AuditEntry) error {
	if jobID == "" || taskName == "" || action == "" {
		return &FatalError{Op: "delete override", Err: errors.New("empty job_id, task_name or action")}
	}
	if audit.At.IsZero() || audit.At.UnixNano() <= 0 {
		return &FatalError{Op: "delete override", Err: errors.New("audit entry without a time")}
	}
	now := time.Now().UTC().Truncate(time.Second)
	r := row{jobID, taskName, action, key, "", audit.By, audit.At.UnixMilli(), uint8(1), uint64(audit.At.UnixNano()), now}
	return s.writeOverride(ctx, "delete override "+plans.Key(jobID, taskName)+" "+action, r, audit)
}

// writeOverride inserts the audit row, then the override row.
func (s *Sink) writeOverride(ctx context.Context, op string, r row, audit serve.AuditEntry) error {
	ar, err := auditRow(audit)
	if err != nil {
		return &FatalError{Op: op, Err: err}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return &FatalError{Op: op, Err: ErrClosed}
	}
	err = s.retry(ctx, op+": audit", tablePlanAudit, func(ctx context.Context) error {
		return s.insertRows(ctx, tablePlanAudit, auditColumns(), []row{ar})
	})
	if err != nil {
		return err
	}
	return s.retry(ctx, op, tablePlanOverrides, func(ctx context.Context) error {
		return s.insertRows(ctx, tablePlanOverrides, overrideColumns(), []row{r})
	})
}

// auditRow maps an audit entry to its row.
func auditRow(a serve.AuditEntry) (row, error) {
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

// Audit returns the newest entries of the audit log, newest first: of one
// job, or of all when jobID is "". limit 0 means DefaultAuditLimit; it is
// at most MaxAuditLimit.
func (s *Sink) Audit(ctx context.Context, jobID string, limit int) ([]serve.AuditEntry, error) {
	q, args := auditQuery(s.table(tablePlanAudit), jobID, limit)
	var out []serve.AuditEntry
	err := s.query(ctx, "read audit log", tablePlanAudit, q, args, func(rows rowScanner) error {
		out = out[:0]
		for rows.Next() {
			var (
				a    serve.AuditEntry
				at   int64
				what string
			)
			if err := rows.Scan(&at, &a.By, &a.Method, &a.Action, &a.JobID, &a.TaskName, &a.Key,
				&what, &a.RemoteAddr, &a.Result); err != nil {
				return err
			}
			a.At = time.UnixMilli(at).UTC()
			if what != "" {
				a.What = json.RawMessage(what)
				if !json.Valid(a.What) {
					// Rows written by other tools: keep the text.
					b, _ := json.Marshal(strings.ToValidUTF8(what, "\uFFFD"))
					a.What = b
				}
			}
			out = append(out, a)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Findings returns findings (their body, the skew.Finding JSON contract)
// newest window first: the latest version of each finding (argMax by
// version over the table's sort key, so replays count once).
func (s *Sink) Findings(ctx context.Context, fq serve.FindingsQuery) ([]json.RawMessage, error) {
	q, args := findingsQuery(s.table(tableFindings), fq)
	var out []json.RawMessage
	err := s.query(ctx, "read findings", tableFindings, q, args, func(rows rowScanner) error {
		out = out[:0]
		for rows.Next() {
			var body string
			if err := rows.Scan(&body); err != nil {
				return err
			}
			// The sink writes valid JSON; a row from another tool that is
			// not is skipped rather than failing every query.
			body = strings.ToValidUTF8(body, "\uFFFD")
			if !json.Valid([]byte(body)) {
				s.log.Warn("clickhouse sink: skipping a findings row whose body is not JSON", "body", fmt.Sprintf("%.80q", body))
				continue
			}
			out = append(out, json.RawMessage(body))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// clampLimit returns def for n <= 0 and at most hi.
func clampLimit(n, def, hi int) int {
	switch {
	case n <= 0:
		return def
	case n > hi:
		return hi
	}
	return n
}

// The SQL of the readers, as functions of the quoted table name and the
// caller's values so that the chDB test runs the same text. Every value
// is a bound ? argument.

// lastPlanQuery reads the newest row of one task's plan.
func lastPlanQuery(table, job, task string) (string, []any) {
	return "SELECT version, generated_at, updated_at, expires_at, retired, body, revision FROM " + table +
		" WHERE job_id = ? AND task_name = ? ORDER BY version DESC, revision DESC LIMIT 1", []any{job, task}
}

// currentPlansQuery reads the newest state per task, by (version,
// revision), of every task or of one (jobID not ""), unless retired or
// expired at now. GROUP BY with argMax rather than FINAL: FINAL would
// still leave every version of a task, and 18.16 merges per partition
// only.
func currentPlansQuery(table, jobID, taskName string, now time.Time) (string, []any) {
	where, args := "", []any{}
	if jobID != "" {
		where = " WHERE job_id = ? AND task_name = ?"
		args = append(args, jobID, taskName)
	}
	args = append(args, now.UnixMilli())
	return "SELECT job_id, task_name, argMax(body, (version, revision)) AS cur_body," +
		" argMax(retired, (version, revision)) AS cur_retired," +
		" argMax(expires_at, (version, revision)) AS cur_expires" +
		" FROM " + table + where +
		" GROUP BY job_id, task_name HAVING cur_retired = 0 AND (cur_expires = 0 OR cur_expires > ?)" +
		" ORDER BY job_id, task_name", args
}

// overridesQuery reads the newest state of every override that is not
// deleted.
func overridesQuery(table string) string {
	return "SELECT job_id, task_name, action, key, argMax(body, revision) AS cur_body," +
		" argMax(deleted, revision) AS cur_deleted FROM " + table +
		" GROUP BY job_id, task_name, action, key HAVING cur_deleted = 0" +
		" ORDER BY job_id, task_name, action, key"
}

// auditQuery reads the newest audit entries, of one job or all.
func auditQuery(table, jobID string, limit int) (string, []any) {
	limit = clampLimit(limit, DefaultAuditLimit, MaxAuditLimit)
	where, args := "", []any{}
	if jobID != "" {
		where = " WHERE job_id = ?"
		args = append(args, jobID)
	}
	args = append(args, limit)
	return "SELECT at, changed_by, method, action, job_id, task_name, key, what, remote_addr, result FROM " +
		table + where + " ORDER BY at DESC, job_id, task_name, action LIMIT ?", args
}

// findingsQuery reads the latest version of each finding matching fq,
// newest window first.
func findingsQuery(table string, fq serve.FindingsQuery) (string, []any) {
	limit := clampLimit(fq.Limit, DefaultFindingsLimit, MaxFindingsLimit)
	var (
		conds []string
		args  []any
	)
	if !fq.Since.IsZero() {
		since := fq.Since.UTC()
		// window_date prunes whole partitions; window_start is exact.
		conds = append(conds, "window_date >= toDate(?)", "window_start >= ?")
		args = append(args, since.Format(time.DateOnly), since.UnixMilli())
	}
	if fq.JobID != "" {
		conds = append(conds, "job_id = ?")
		args = append(args, fq.JobID)
	}
	if fq.Kind != "" {
		conds = append(conds, "kind = ?")
		args = append(args, fq.Kind)
	}
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	args = append(args, limit)
	return "SELECT argMax(body, version) AS cur_body FROM " + table + where +
		" GROUP BY job_id, task_name, window_start, kind, subtask_index, cause, key" +
		" ORDER BY window_start DESC, job_id, task_name, kind, subtask_index, cause, key LIMIT ?", args
}
