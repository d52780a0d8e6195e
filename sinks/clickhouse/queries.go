package clickhouse

import (
	"strings"
	"time"

	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew"
)

// Tables of migration 0003 (plans, operator overrides, audit log).
const (
	tablePlans         = "plans"
	tablePlanOverrides = "plan_overrides"
	tablePlanAudit     = "plan_audit"
)

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

// restorablePlansQuery reads every task's newest plan row, retired or
// not, with its version and times (columns: job_id, task_name, body,
// retired, version, updated_at, expires_at).
func restorablePlansQuery(table string) string {
	return "SELECT job_id, task_name, argMax(body, (version, revision)) AS cur_body," +
		" argMax(retired, (version, revision)) AS cur_retired, max(version) AS cur_version," +
		" argMax(updated_at, (version, revision)) AS cur_updated," +
		" argMax(expires_at, (version, revision)) AS cur_expires" +
		" FROM " + table + " GROUP BY job_id, task_name ORDER BY job_id, task_name"
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
	var w whereClause
	w.equal("job_id", jobID)
	args := append(w.args, limit)
	return "SELECT at, changed_by, method, action, job_id, task_name, key, what, remote_addr, result FROM " +
		table + w.sql() + " ORDER BY at DESC, job_id, task_name, action LIMIT ?", args
}

// findingsQuery reads the latest version of each finding matching fq,
// newest window first, never a subtask_stats row.
func findingsQuery(table string, fq servestore.FindingsQuery) (string, []any) {
	limit := clampLimit(fq.Limit, DefaultFindingsLimit, MaxFindingsLimit)
	var w whereClause
	w.since(fq.Since)
	w.equal("job_id", fq.JobID)
	w.equal("kind", fq.Kind)
	// Sinks before migration 0004 also wrote the statistics here.
	w.add("kind != ?", skew.KindSubtaskStats)
	where, args := w.sql(), append(w.args, limit)
	return "SELECT argMax(body, version) AS cur_body FROM " + table + where +
		" GROUP BY job_id, task_name, window_start, kind, subtask_index, cause, key" +
		" ORDER BY window_start DESC, job_id, task_name, kind, subtask_index, cause, key LIMIT ?", args
}

// statsColumns are the columns statsQuery selects, in the order
// StatsReader.Stats scans them.
func statsColumns() []string {
	return append([]string{"job_id", "job_name", "task_name", "subtask_index", "window_start", "window_end"},
		tableColumns(tableSubtaskStats)...)
}

// statsQuery reads the latest version of each statistics row matching
// sq, newest window first. LIMIT 1 BY (no window functions on 18.16)
// keeps, of the rows with one key, the first in ORDER BY order: the
// highest version.
func statsQuery(table string, sq servestore.StatsQuery) (string, []any) {
	limit := clampLimit(sq.Limit, DefaultStatsLimit, MaxStatsLimit)
	var w whereClause
	w.since(sq.Since)
	w.equal("job_id", sq.JobID)
	w.equal("task_name", sq.TaskName)
	where, args := w.sql(), append(w.args, limit)
	return "SELECT " + strings.Join(statsColumns(), ", ") + " FROM " + table + where +
		" ORDER BY window_start DESC, job_id, task_name, subtask_index, version DESC" +
		" LIMIT 1 BY job_id, task_name, window_start, subtask_index LIMIT ?", args
}

// whereClause gathers the conditions of a reader's WHERE, each with its
// bound arguments, in the order they are added.
type whereClause struct {
	conds []string
	args  []any
}

// add appends one condition and its arguments.
func (w *whereClause) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

// equal adds column = value, unless value is empty (no filter).
func (w *whereClause) equal(column, value string) {
	if value != "" {
		w.add(column+" = ?", value)
	}
}

// since adds the windows that start at or after t, unless t is zero.
// window_date prunes whole partitions; window_start is exact.
func (w *whereClause) since(t time.Time) {
	if !t.IsZero() {
		t = t.UTC()
		w.add("window_date >= toDate(?) AND window_start >= ?", t.Format(time.DateOnly), t.UnixMilli())
	}
}

// sql is " WHERE c1 AND c2 …", or "" without conditions.
func (w *whereClause) sql() string { return w.join(" WHERE ") }

// join is the conditions joined by AND after keyword, or "" without
// conditions.
func (w *whereClause) join(keyword string) string {
	if len(w.conds) == 0 {
		return ""
	}
	return keyword + strings.Join(w.conds, " AND ")
}
