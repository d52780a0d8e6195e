package clickhouse

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// Table names.
const (
	tableSubtaskStats = "subtask_stats"
	tableHotKeys      = "hot_keys"
	tableFindings     = "findings"
	tableSaltingPlans = "salting_plans"
)

// tableOrder is the order Write inserts in: the kind tables of findings
// first, then the findings table, then subtask_stats. A window shows in
// skewlens top once its findings or its statistics rows are in (see
// TopReader.View); with statistics last, a window that shows by its
// findings already has its hot keys and plans, and one that shows by its
// statistics has everything.
func tableOrder() []string {
	return []string{tableHotKeys, tableSaltingPlans, tableFindings, tableSubtaskStats}
}

// commonColumns start every finding table's column list, in this order.
func commonColumns() []string {
	return []string{"job_id", "job_name", "task_name", "subtask_index",
		"window_start", "window_end", "window_time", "window_date"}
}

// tableColumns returns the explicit column list of each table's INSERT
// (18.16 needs one for batches), without the common columns in front and
// without version and inserted_at, which every row ends with.
func tableColumns(table string) []string {
	switch table {
	case tableSubtaskStats:
		return []string{"host", "task_attempt_id", "busy_ms_per_s", "backpressured_ms_per_s",
			"idle_ms_per_s", "records_in_per_s", "records_out_per_s", "input_share",
			"in_pool_usage", "out_pool_usage", "input_queue_length", "output_queue_length",
			"queue_capacity", "checkpoint_alignment_ms", "checkpoint_start_delay_ms",
			"saturated", "busy_source", "task_skew_score", "task_max_median_ratio"}
	case tableHotKeys:
		return []string{"key", "share", "estimated_records", "summary", "share_margin", "rule",
			"subtask_share", "subtask_share_margin", "subtask_excess", "excess_explained"}
	case tableFindings:
		return []string{"kind", "cause", "key", "host", "task_attempt_id", "summary",
			"busy_ms_per_s", "backpressured_ms_per_s", "records_in_per_s",
			"peer_median_records_in_per_s", "input_ratio", "input_share",
			"checkpoint_alignment_ms", "checkpoint_start_delay_ms", "skew_score",
			"max_median_ratio", "subtasks_observed", "subtasks_saturated",
			"sustained_windows", "time_bucket_key", "previous_hot_subtask",
			"backpressured_tasks", "parallelism", "max_parallelism",
			"recommended_parallelism", "evidence", "body"}
	case tableSaltingPlans:
		return []string{"parallelism", "max_parallelism", "hot_key_count",
			"max_over_mean_before", "max_over_mean_after", "summary", "datastream",
			"sql", "plan"}
	}
	return nil
}

// insertColumns is the full column list of an INSERT into table.
func insertColumns(table string) []string {
	cols := commonColumns()
	cols = append(cols, tableColumns(table)...)
	return append(cols, "version", "inserted_at")
}

// row is one table row, values in insertColumns order, typed as
// clickhouse-go expects them (string, int32, int64, uint64, float64,
// uint8, uint32, time.Time, []string).
type row []any

// tableRows holds the rows of one Write, per table.
type tableRows map[string][]row

// maxDateTimeMs is the last millisecond a DateTime (UInt32 seconds) holds.
const maxDateTimeMs = math.MaxUint32*1000 + 999

// mapFinding appends the rows of f to out: one findings row, plus one row
// in the kind's own table; a subtask_stats finding, which is statistics
// rather than a finding, gets its subtask_stats row only (it has no
// summary, which is not stored). Unknown kinds go to findings only, so a
// newer engine does not break an older sink. It returns an error, never
// a partial mapping, when f cannot be stored.
func mapFinding(out tableRows, f *skew.Finding, version uint64, now time.Time) error {
	if f.JobID == "" {
		return errors.New("empty job_id")
	}
	if f.TaskName == "" && f.Kind != skew.KindJobEnd {
		return errors.New("empty task_name")
	}
	if f.Kind == "" {
		return errors.New("empty kind")
	}
	if f.WindowStart < 0 || f.WindowStart > maxDateTimeMs {
		return fmt.Errorf("window_start %d outside the DateTime range", f.WindowStart)
	}
	if f.WindowEnd < f.WindowStart {
		return fmt.Errorf("window_end %d before window_start %d", f.WindowEnd, f.WindowStart)
	}
	subtask := int32(-1)
	if f.SubtaskIndex != nil {
		if *f.SubtaskIndex < 0 || *f.SubtaskIndex > math.MaxInt32 {
			return fmt.Errorf("subtask_index %d out of range", *f.SubtaskIndex)
		}
		subtask = int32(*f.SubtaskIndex)
	}
	wt := time.UnixMilli(f.WindowStart).UTC().Truncate(time.Second)
	wd := time.Date(wt.Year(), wt.Month(), wt.Day(), 0, 0, 0, 0, time.UTC)
	common := func() row {
		return row{f.JobID, f.JobName, f.TaskName, subtask, f.WindowStart, f.WindowEnd, wt, wd}
	}
	tail := []any{version, now.UTC().Truncate(time.Second)}
	if f.Kind == skew.KindSubtaskStats {
		r, err := statsRow(f, common())
		if err != nil {
			return err
		}
		out[tableSubtaskStats] = append(out[tableSubtaskStats], append(r, tail...))
		return nil
	}

	body, err := marshalJSON(f)
	if err != nil {
		return fmt.Errorf("encode finding: %w", err)
	}

	var kindRow row
	kindTable := ""
	fr := findingsRow{kind: f.Kind, body: body, previousHotSubtask: -1}
	switch f.Kind {
	case skew.KindHotKey:
		if f.HotKey == nil {
			return errors.New("hot_key finding without key fields")
		}
		kindTable = tableHotKeys
		kindRow = append(common(), f.Key, f.Share, f.EstimatedRecords, f.Summary, f.ShareMargin, f.Rule,
			f.SubtaskShare, f.SubtaskShareMargin, f.SubtaskExcess, f.ExcessExplained)
		fr.key = f.Key
		fr.inputShare = f.Share
	case skew.KindSaturation:
		if f.Saturation == nil {
			return errors.New("saturation finding without cause")
		}
		if f.Cause == "" {
			return errors.New("saturation finding with empty cause")
		}
		fr.cause, fr.host, fr.taskAttemptID = f.Cause, f.Host, f.TaskAttemptID
		if e := f.Evidence; e != nil {
			ev, err := marshalJSON(e)
			if err != nil {
				return fmt.Errorf("encode evidence: %w", err)
			}
			fr.evidence = ev
			fr.fromEvidence(e)
		}
	case skew.KindSaltingPlan:
		if f.Plan == nil {
			return errors.New("salting_plan finding without plan")
		}
		p := f.Plan
		plan, err := marshalJSON(p)
		if err != nil {
			return fmt.Errorf("encode plan: %w", err)
		}
		kindTable = tableSaltingPlans
		kindRow = append(common(), int32(p.Parallelism), int32(p.MaxParallelism),
			uint32(len(p.Keys)), p.MaxOverMeanBefore, p.MaxOverMeanAfter,
			f.Summary, p.DataStream, p.SQL, plan)
		fr.parallelism, fr.maxParallelism = int32(p.Parallelism), int32(p.MaxParallelism)
	}
	fr.summary = f.Summary

	if kindTable != "" {
		out[kindTable] = append(out[kindTable], append(kindRow, tail...))
	}
	out[tableFindings] = append(out[tableFindings], append(append(common(), fr.values()...), tail...))
	return nil
}

// statsRow returns the subtask_stats row of a subtask_stats finding,
// after common, without the tail.
func statsRow(f *skew.Finding, common row) (row, error) {
	if f.Stats == nil {
		return nil, errors.New("subtask_stats finding without stats")
	}
	if f.SubtaskIndex == nil {
		return nil, errors.New("subtask_stats finding without subtask_index")
	}
	s := f.Stats
	// The findings contract (JSON) has no NaN or infinity; the engine
	// rounds them to 0. Refused here as when the finding was encoded.
	for _, v := range []struct {
		name string
		v    float64
	}{
		{"busy_ms_per_s", s.BusyMsPerSecond}, {"backpressured_ms_per_s", s.BackPressuredMsPerSecond},
		{"idle_ms_per_s", s.IdleMsPerSecond}, {"records_in_per_s", s.RecordsInPerSecond},
		{"records_out_per_s", s.RecordsOutPerSecond}, {"input_share", s.InputShare},
		{"in_pool_usage", s.InPoolUsage}, {"out_pool_usage", s.OutPoolUsage},
		{"input_queue_length", s.InputQueueLength}, {"output_queue_length", s.OutputQueueLength},
		{"queue_capacity", s.QueueCapacity}, {"checkpoint_alignment_ms", s.CheckpointAlignMs},
		{"checkpoint_start_delay_ms", s.CheckpointDelayMs}, {"task_skew_score", s.SkewScore},
		{"task_max_median_ratio", s.MaxMedianRatio},
	} {
		if math.IsNaN(v.v) || math.IsInf(v.v, 0) {
			return nil, fmt.Errorf("subtask_stats %s is %v, not a finite number", v.name, v.v)
		}
	}
	saturated := uint8(0)
	if s.Saturated {
		saturated = 1
	}
	return append(common, s.Host, s.TaskAttemptID, s.BusyMsPerSecond,
		s.BackPressuredMsPerSecond, s.IdleMsPerSecond, s.RecordsInPerSecond,
		s.RecordsOutPerSecond, s.InputShare, s.InPoolUsage, s.OutPoolUsage,
		s.InputQueueLength, s.OutputQueueLength, s.QueueCapacity,
		s.CheckpointAlignMs, s.CheckpointDelayMs, saturated, s.BusySource,
		s.SkewScore, s.MaxMedianRatio), nil
}

// findingsRow collects the kind-specific columns of a findings row.
type findingsRow struct {
	kind, cause, key, host, taskAttemptID, summary                     string
	busy, backpressured, recordsIn, peerMedian, inputRatio, inputShare float64
	alignMs, delayMs, skewScore, maxMedian                             float64
	subtasks, saturatedSubtasks, sustained                             int32
	timeBucketKey                                                      string
	previousHotSubtask                                                 int32
	backpressuredTasks                                                 []string
	parallelism, maxParallelism, recommended                           int32
	evidence, body                                                     string
}

func (r *findingsRow) fromEvidence(e *skew.Evidence) {
	r.busy, r.backpressured = e.BusyMsPerSecond, e.BackPressuredMsPerSecond
	r.recordsIn, r.peerMedian = e.RecordsInPerSecond, e.PeerMedianRecordsInPerSecond
	r.inputRatio, r.inputShare = e.InputRatio, e.InputShare
	r.alignMs, r.delayMs = e.CheckpointAlignMs, e.CheckpointDelayMs
	r.skewScore, r.maxMedian = e.SkewScore, e.MaxMedianRatio
	r.subtasks, r.saturatedSubtasks = clampInt32(e.Subtasks), clampInt32(e.SaturatedSubtasks)
	r.sustained = clampInt32(e.SustainedWindows)
	r.timeBucketKey = e.TimeBucketKey
	if e.PreviousHotSubtask != nil {
		r.previousHotSubtask = clampInt32(*e.PreviousHotSubtask)
	}
	r.backpressuredTasks = e.UpstreamBackPressed
	r.parallelism, r.maxParallelism = clampInt32(e.Parallelism), clampInt32(e.MaxParallelism)
	r.recommended = clampInt32(e.RecommendedParallelism)
}

// values returns the columns in tableColumns(tableFindings) order.
func (r *findingsRow) values() []any {
	bp := r.backpressuredTasks
	if bp == nil {
		bp = []string{}
	}
	return []any{r.kind, r.cause, r.key, r.host, r.taskAttemptID, r.summary,
		r.busy, r.backpressured, r.recordsIn, r.peerMedian, r.inputRatio, r.inputShare,
		r.alignMs, r.delayMs, r.skewScore, r.maxMedian, r.subtasks, r.saturatedSubtasks,
		r.sustained, r.timeBucketKey, r.previousHotSubtask, bp, r.parallelism,
		r.maxParallelism, r.recommended, r.evidence, r.body}
}

func clampInt32(v int) int32 {
	switch {
	case v > math.MaxInt32:
		return math.MaxInt32
	case v < math.MinInt32:
		return math.MinInt32
	}
	return int32(v)
}

// marshalJSON encodes v as the findings contract does (no HTML escaping,
// no trailing newline). Invalid UTF-8 in strings becomes U+FFFD in JSON;
// the typed columns keep the exact bytes.
func marshalJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}
