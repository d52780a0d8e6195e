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
// newest window first, never a subtask_stats row.
func findingsQuery(table string, fq servestore.FindingsQuery) (string, []any) {
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
	// Sinks before migration 0004 also wrote the statistics here.
	conds = append(conds, "kind != ?")
	args = append(args, skew.KindSubtaskStats)
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	args = append(args, limit)
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
	var (
		conds []string
		args  []any
	)
	if !sq.Since.IsZero() {
		since := sq.Since.UTC()
		conds = append(conds, "window_date >= toDate(?)", "window_start >= ?")
		args = append(args, since.Format(time.DateOnly), since.UnixMilli())
	}
	if sq.JobID != "" {
		conds = append(conds, "job_id = ?")
		args = append(args, sq.JobID)
	}
	if sq.TaskName != "" {
		conds = append(conds, "task_name = ?")
		args = append(args, sq.TaskName)
	}
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	args = append(args, limit)
	return "SELECT " + strings.Join(statsColumns(), ", ") + " FROM " + table + where +
		" ORDER BY window_start DESC, job_id, task_name, subtask_index, version DESC" +
		" LIMIT 1 BY job_id, task_name, window_start, subtask_index LIMIT ?", args
}
