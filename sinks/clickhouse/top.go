package clickhouse

import (
	"context"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/skewlens/skewlens/sinks/topstore"
	"github.com/skewlens/skewlens/skew"
)

// View reads (topstore.Reader), for the newest windows of each job since q.Since, the
// current hot keys, the saturated subtasks and the latest skew score per
// task. Windows are those of the findings and subtask_stats tables, which
// Write inserts after hot_keys and salting_plans (see tableOrder), so a
// window shows with its hot keys; its statistics may follow one insert
// later. Replayed rows are deduplicated with argMax(..., version).
//
// View makes one attempt (no retries: a view refreshing every few
// seconds is its own retry loop) and blocks until the server answered or
// ctx ends. Errors that a retry cannot fix (e.g. the tables do not exist
// yet) are permanent (retry.IsPermanent); the caller may still try again
// later, for example after a migration. It is safe for concurrent use, also with Write.
func (t *TopReader) View(ctx context.Context, q topstore.Query) (topstore.Snapshot, error) {
	s := t.s
	q, err := q.WithDefaults(time.Now())
	if err != nil {
		return topstore.Snapshot{}, permanentErr("top view", err)
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return topstore.Snapshot{}, permanentErr("top view", ErrClosed)
	}
	jobs := map[string]*topstore.Job{}
	if err := s.topRun(ctx, s.topWindowsRead(q), jobs); err != nil {
		return topstore.Snapshot{}, err
	}
	if len(jobs) > 0 {
		for _, r := range s.topDetailReads(newTopFilter(s, q, jobs)) {
			if err := s.topRun(ctx, r, jobs); err != nil {
				return topstore.Snapshot{}, err
			}
		}
	}
	return topSnapshot(q, jobs), nil
}

// topSnapshot returns the jobs sorted by name, then id.
func topSnapshot(q topstore.Query, jobs map[string]*topstore.Job) topstore.Snapshot {
	snap := topstore.Snapshot{Query: q}
	for _, j := range jobs {
		snap.Jobs = append(snap.Jobs, *j)
	}
	sort.Slice(snap.Jobs, func(a, b int) bool {
		ja, jb := snap.Jobs[a], snap.Jobs[b]
		if ja.JobName != jb.JobName {
			return ja.JobName < jb.JobName
		}
		return ja.JobID < jb.JobID
	})
	return snap
}

// topRead is one query of TopView: its SQL with ? placeholders, the
// arguments bound to them (client-side, as 18.16 has no query
// parameters), and what to do with each row.
type topRead struct {
	op   string
	sql  string
	args []any
	// row scans one row with scan and stores it in jobs.
	row func(jobs map[string]*topstore.Job, scan func(dest ...any) error) error
}

// topRun runs r and stores its rows in jobs.
func (s *Store) topRun(ctx context.Context, r topRead, jobs map[string]*topstore.Job) error {
	sql := r.sql
	if s.cfg.Cluster != "" {
		// The view filters with IN (subquery) over Distributed tables,
		// which ClickHouse refuses by default (distributed_product_mode
		// 'deny'). 'global' runs each subquery once, on the server
		// skewlens is connected to, and sends its result to the shards:
		// right whatever the subquery reads. It is a SETTINGS clause
		// because 18.16's native protocol takes only numeric settings
		// from clickhouse-go.
		sql += " SETTINGS distributed_product_mode = 'global'"
	}
	err := func() error {
		rows, err := s.conn.Query(ctx, sql, r.args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := r.row(jobs, rows.Scan); err != nil {
				return err
			}
		}
		return rows.Err()
	}()
	// Permanent errors (e.g. the tables do not exist) are marked so;
	// others keep their context so the caller can show and retry them.
	return s.classify(ctx, "top view: "+r.op, err)
}

// topJobFilter returns " AND job_id IN (?, ...)" for n jobs, or "" for
// none. The ids themselves are bound, never spliced.
func topJobFilter(n int) string {
	if n == 0 {
		return ""
	}
	return " AND job_id IN (" + strings.TrimSuffix(strings.Repeat("?, ", n), ", ") + ")"
}

// topWindowsSQL selects each job's q.Windows newest windows that have any
// finding or statistics row with a start in [lower, upper] (a job without
// findings shows with its tasks' skew scores). columns may use job_id,
// job_name, window_start and window_end. Its arguments are those of
// topWindowArgs. LIMIT BY (no window functions on 18.16) keeps the first
// rows per job in ORDER BY order.
func (s *Store) topWindowsSQL(columns string, jobs int) string {
	where := " WHERE window_date >= toDate(?) AND window_start >= ? AND window_start <= ?" + topJobFilter(jobs)
	return "SELECT " + columns + " FROM (" +
		"SELECT job_id, job_name, window_start, window_end FROM " + s.table(tableFindings) + where +
		" UNION ALL SELECT job_id, job_name, window_start, window_end FROM " + s.table(tableSubtaskStats) + where +
		") GROUP BY job_id, window_start ORDER BY job_id, window_start DESC LIMIT ? BY job_id"
}

// topWindowArgs are the arguments of topWindowsSQL: the bounds and jobs
// once per table, then the number of windows.
func topWindowArgs(q topstore.Query, lower, upper int64) []any {
	bounds := []any{time.UnixMilli(lower).UTC().Format(time.DateOnly), lower, upper}
	for _, j := range q.Jobs {
		bounds = append(bounds, j)
	}
	return append(append(bounds, bounds...), int64(q.Windows))
}

// topWindowsRead reads the newest windows per job; its rows create the
// jobs.
func (s *Store) topWindowsRead(q topstore.Query) topRead {
	return topRead{
		op:   "read newest windows",
		sql:  s.topWindowsSQL("job_id, any(job_name) AS name, window_start, max(window_end) AS last_end", len(q.Jobs)),
		args: topWindowArgs(q, q.Since.UnixMilli(), math.MaxInt64),
		row: func(jobs map[string]*topstore.Job, scan func(...any) error) error {
			var id, name string
			var w topstore.Window
			if err := scan(&id, &name, &w.Start, &w.End); err != nil {
				return err
			}
			j := jobs[id]
			if j == nil {
				// Rows come newest first: the name is the newest window's.
				j = &topstore.Job{JobID: id, JobName: name}
				jobs[id] = j
			}
			j.Windows = append(j.Windows, w)
			return nil
		},
	}
}

// topFilter is the WHERE clause every detail query shares: the rows of the
// windows topWindowsRead found. The window set is recomputed by the server
// as a subquery (a list of every job's windows could exceed max_query_size
// with many jobs), bounded by the oldest and newest window found, so it is
// the same set even when newer windows arrived in between.
type topFilter struct {
	sql  string
	args []any
	// limit and maxBytes are the query's Limit and MaxStringBytes.
	limit, maxBytes int64
}

func newTopFilter(s *Store, q topstore.Query, jobs map[string]*topstore.Job) topFilter {
	lower, upper := int64(math.MaxInt64), int64(math.MinInt64)
	for _, j := range jobs {
		for _, w := range j.Windows {
			lower, upper = min(lower, w.Start), max(upper, w.Start)
		}
	}
	sql := "window_date >= toDate(?) AND window_start >= ? AND window_start <= ?" +
		" AND (job_id, window_start) IN (" + s.topWindowsSQL("job_id, window_start", len(q.Jobs)) + ")"
	args := []any{time.UnixMilli(lower).UTC().Format(time.DateOnly), lower, upper}
	args = append(args, topWindowArgs(q, lower, upper)...)
	return topFilter{sql: sql, args: args, limit: int64(q.Limit), maxBytes: int64(q.MaxStringBytes)}
}

// with returns the arguments of a detail query: pre, the filter's, post.
func (f topFilter) with(pre []any, post ...any) []any {
	return append(append(append([]any{}, pre...), f.args...), post...)
}

// topDetailReads are the queries that fill in the jobs topWindowsRead
// found.
func (s *Store) topDetailReads(f topFilter) []topRead {
	return []topRead{s.topTasksRead(f), s.topHotKeysRead(f), s.topSaturatedRead(f),
		s.topHotKeyTotalsRead(f), s.topSaturatedTotalsRead(f), s.topTaskTotalsRead(f)}
}

// topScoresSQL selects job_id, task_name, window_start, window_end and the
// task's skew score and max/median ratio (as score and ratio) from the
// rows that carry them: subtask_stats and the saturation findings. Its
// arguments are f.with([]any{skew.KindSaturation}) and then f.args.
func (s *Store) topScoresSQL(f topFilter) string {
	return "SELECT job_id, task_name, window_start, window_end, skew_score AS score, max_median_ratio AS ratio" +
		" FROM " + s.table(tableFindings) + " WHERE kind = ? AND " + f.sql +
		" UNION ALL SELECT job_id, task_name, window_start, window_end, task_skew_score, task_max_median_ratio" +
		" FROM " + s.table(tableSubtaskStats) + " WHERE " + f.sql
}

// topTasksRead reads the latest skew score per task.
func (s *Store) topTasksRead(f topFilter) topRead {
	return topRead{
		op: "read task skew scores",
		sql: "SELECT job_id, task_name," +
			" argMax(score, window_start) AS skew, argMax(ratio, window_start) AS ratio_latest," +
			" max(window_start) AS last_start, max(window_end) AS last_end" +
			" FROM (" + s.topScoresSQL(f) + ")" +
			" GROUP BY job_id, task_name ORDER BY job_id, skew DESC, task_name LIMIT ? BY job_id",
		args: append(f.with([]any{skew.KindSaturation}), f.with(nil, f.limit)...),
		row: func(jobs map[string]*topstore.Job, scan func(...any) error) error {
			var id string
			var t topstore.Task
			if err := scan(&id, &t.TaskName, &t.SkewScore, &t.MaxMedianRatio, &t.Window.Start, &t.Window.End); err != nil {
				return err
			}
			if j := jobs[id]; j != nil {
				j.Tasks = append(j.Tasks, t)
			}
			return nil
		},
	}
}

// topHotKeysRead reads the hot keys: the inner query deduplicates
// replayed rows per window, the outer one folds the windows per key and
// subtask. Only a prefix of each key is sent.
func (s *Store) topHotKeysRead(f topFilter) topRead {
	return topRead{
		op: "read hot keys",
		sql: "SELECT job_id, task_name, subtask_index," +
			" substring(key, 1, ?) AS key_head, length(key) AS key_bytes," +
			" argMax(sh, window_start) AS share_latest, argMax(est, window_start) AS est_latest," +
			" max(window_start) AS last_start, max(we) AS last_end, count() AS windows_seen," +
			" argMax(shm, window_start) AS margin_latest, argMax(ssh, window_start) AS sub_share_latest," +
			" argMax(sshm, window_start) AS sub_margin_latest" +
			" FROM (SELECT job_id, task_name, subtask_index, key, window_start," +
			" argMax(window_end, version) AS we, argMax(share, version) AS sh," +
			" argMax(estimated_records, version) AS est, argMax(share_margin, version) AS shm," +
			" argMax(subtask_share, version) AS ssh, argMax(subtask_share_margin, version) AS sshm" +
			" FROM " + s.table(tableHotKeys) + " WHERE " + f.sql +
			" GROUP BY job_id, task_name, window_start, subtask_index, key)" +
			" GROUP BY job_id, task_name, subtask_index, key" +
			" ORDER BY job_id, share_latest DESC, last_start DESC, task_name, subtask_index, key" +
			" LIMIT ? BY job_id",
		args: f.with([]any{f.maxBytes}, f.limit),
		row: func(jobs map[string]*topstore.Job, scan func(...any) error) error {
			var id string
			var sub int32
			var keyBytes, windows uint64
			var h topstore.HotKey
			if err := scan(&id, &h.TaskName, &sub, &h.Key, &keyBytes, &h.Share, &h.EstimatedRecords,
				&h.Window.Start, &h.Window.End, &windows, &h.ShareMargin, &h.SubtaskShare, &h.SubtaskShareMargin); err != nil {
				return err
			}
			h.SubtaskIndex, h.KeyBytes, h.Windows = int(sub), int(keyBytes), int(windows)
			if j := jobs[id]; j != nil {
				j.HotKeys = append(j.HotKeys, h)
			}
			return nil
		},
	}
}

// topSaturatedRead reads the saturation findings, folded per task,
// subtask and cause like topHotKeysRead.
func (s *Store) topSaturatedRead(f topFilter) topRead {
	return topRead{
		op: "read saturated subtasks",
		sql: "SELECT job_id, task_name, subtask_index, cause," +
			" argMax(busy, window_start) AS busy_latest, argMax(bp, window_start) AS bp_latest," +
			" argMax(h, window_start) AS host_latest," +
			" substring(argMax(sm, window_start), 1, ?) AS summary_head," +
			" length(argMax(sm, window_start)) AS summary_bytes," +
			" max(window_start) AS last_start, max(we) AS last_end, count() AS windows_seen" +
			" FROM (SELECT job_id, task_name, subtask_index, cause, window_start," +
			" argMax(window_end, version) AS we, argMax(busy_ms_per_s, version) AS busy," +
			" argMax(backpressured_ms_per_s, version) AS bp, argMax(host, version) AS h," +
			" argMax(summary, version) AS sm" +
			" FROM " + s.table(tableFindings) + " WHERE kind = ? AND " + f.sql +
			" GROUP BY job_id, task_name, window_start, subtask_index, cause)" +
			" GROUP BY job_id, task_name, subtask_index, cause" +
			" ORDER BY job_id, last_start DESC, busy_latest DESC, task_name, subtask_index, cause" +
			" LIMIT ? BY job_id",
		args: f.with([]any{f.maxBytes, skew.KindSaturation}, f.limit),
		row: func(jobs map[string]*topstore.Job, scan func(...any) error) error {
			var id string
			var sub int32
			var summaryBytes, windows uint64
			var st topstore.Saturated
			if err := scan(&id, &st.TaskName, &sub, &st.Cause, &st.BusyMsPerSecond, &st.BackPressuredMsPerSecond,
				&st.Host, &st.Summary, &summaryBytes, &st.Window.Start, &st.Window.End, &windows); err != nil {
				return err
			}
			st.SubtaskIndex, st.SummaryBytes, st.Windows = int(sub), int(summaryBytes), int(windows)
			if j := jobs[id]; j != nil {
				j.Saturated = append(j.Saturated, st)
			}
			return nil
		},
	}
}

// topHotKeyTotalsRead counts the distinct hot keys per job, limit aside.
func (s *Store) topHotKeyTotalsRead(f topFilter) topRead {
	return topRead{
		op: "count hot keys",
		sql: "SELECT job_id, uniqExact(task_name, subtask_index, key) AS n" +
			" FROM " + s.table(tableHotKeys) + " WHERE " + f.sql + " GROUP BY job_id",
		args: f.with(nil),
		row:  topCountRow(func(j *topstore.Job, n int) { j.HotKeysTotal = n }),
	}
}

// topSaturatedTotalsRead counts the distinct saturated subtasks per job,
// limit aside.
func (s *Store) topSaturatedTotalsRead(f topFilter) topRead {
	return topRead{
		op: "count saturated subtasks",
		sql: "SELECT job_id, uniqExact(task_name, subtask_index, cause) AS saturated" +
			" FROM " + s.table(tableFindings) + " WHERE kind = ? AND " + f.sql + " GROUP BY job_id",
		args: f.with([]any{skew.KindSaturation}),
		row:  topCountRow(func(j *topstore.Job, n int) { j.SaturatedTotal = n }),
	}
}

// topTaskTotalsRead counts the tasks with a skew score per job, limit
// aside.
func (s *Store) topTaskTotalsRead(f topFilter) topRead {
	return topRead{
		op:   "count tasks",
		sql:  "SELECT job_id, uniqExact(task_name) AS tasks FROM (" + s.topScoresSQL(f) + ") GROUP BY job_id",
		args: append(f.with([]any{skew.KindSaturation}), f.args...),
		row:  topCountRow(func(j *topstore.Job, n int) { j.TasksTotal = n }),
	}
}

// topCountRow reads a (job_id, count) row of the totals' reads into the
// job's field that set names.
func topCountRow(set func(j *topstore.Job, n int)) func(map[string]*topstore.Job, func(...any) error) error {
	return func(jobs map[string]*topstore.Job, scan func(...any) error) error {
		var id string
		var n uint64
		if err := scan(&id, &n); err != nil {
			return err
		}
		if j := jobs[id]; j != nil {
			set(j, int(n))
		}
		return nil
	}
}
