package skew

import "github.com/skewlens/skewlens/skew/rescale"

// Finding kinds.
const (
	KindHotKey      = "hot_key"
	KindSaturation  = "saturation"
	KindSaltingPlan = "salting_plan"
	// KindSubtaskStats rows carry one subtask's statistics for one window.
	// They are emitted only when Config.EmitStats is set.
	KindSubtaskStats = "subtask_stats"
)

// Causes of a saturation finding.
const (
	CauseDataSkew         = "data_skew"
	CauseRotatingHotKey   = "rotating_hot_key"
	CauseSlowSubtask      = "slow_subtask"
	CauseUnderProvisioned = "under_provisioned"
	// CauseCheckpointRisk marks a job whose checkpoints are forecast to
	// reach the checkpoint timeout within Config.CheckpointForecastHorizon
	// checkpoint intervals, or whose last checkpoint took at least
	// Config.CheckpointRiskFraction of it: it warns before checkpoints
	// fail. The finding names the task and subtask that hold the barrier
	// up, which is saturated or back-pressured; without one there is none.
	CauseCheckpointRisk = "checkpoint_risk"
)

// Finding is one result of the engine for one window. Its JSON form is the
// findings contract: the common fields first, then the fields of exactly
// one of the embedded kind-specific parts. Field order is fixed, so the
// JSON of equal findings is byte-identical.
type Finding struct {
	Kind     string `json:"kind"`
	JobID    string `json:"job_id"`
	JobName  string `json:"job_name,omitempty"`
	TaskName string `json:"task_name"`
	// SubtaskIndex is null for task-wide findings (under_provisioned,
	// salting_plan).
	SubtaskIndex *int  `json:"subtask_index"`
	WindowStart  int64 `json:"window_start"`
	WindowEnd    int64 `json:"window_end"`
	*HotKey
	*Saturation
	// Summary is one plain sentence a person on call can act on.
	Summary string `json:"summary,omitempty"`
	*Plan   `json:"plan,omitempty"`
	Stats   *SubtaskStats `json:"stats,omitempty"`
	// JobEnd is the body of a job_end finding.
	JobEnd *JobEnd `json:"job_end,omitempty"`
}

// SubtaskStats is one subtask's view of one window, with the task-wide
// figures repeated so each row stands alone in a table.
type SubtaskStats struct {
	Host                     string  `json:"host,omitempty"`
	TaskAttemptID            string  `json:"task_attempt_id,omitempty"`
	BusyMsPerSecond          float64 `json:"busy_ms_per_s"`
	BackPressuredMsPerSecond float64 `json:"backpressured_ms_per_s"`
	IdleMsPerSecond          float64 `json:"idle_ms_per_s"`
	RecordsInPerSecond       float64 `json:"records_in_per_s"`
	RecordsOutPerSecond      float64 `json:"records_out_per_s"`
	// InputShare is the subtask's share of the task's input (from rates,
	// or from sampled weight when the metrics carry no rates).
	InputShare        float64 `json:"input_share"`
	InPoolUsage       float64 `json:"in_pool_usage"`
	OutPoolUsage      float64 `json:"out_pool_usage"`
	InputQueueLength  float64 `json:"input_queue_length"`
	OutputQueueLength float64 `json:"output_queue_length"`
	QueueCapacity     float64 `json:"queue_capacity,omitempty"`
	CheckpointAlignMs float64 `json:"checkpoint_alignment_ms"`
	CheckpointDelayMs float64 `json:"checkpoint_start_delay_ms"`
	Saturated         bool    `json:"saturated"`
	// BusySource says where the busy, back-pressured and idle times came
	// from: "counter" (the differences of Flink's accumulate*TimeMs
	// counters), "gauge" (the *TimeMsPerSecond gauges) or "" (neither:
	// saturation was judged by pool usage).
	BusySource     string  `json:"busy_source,omitempty"`
	SkewScore      float64 `json:"task_skew_score"`
	MaxMedianRatio float64 `json:"task_max_median_ratio"`
}

// HotKey is the body of a hot_key finding.
type HotKey struct {
	Key string `json:"key"`
	// Share is the key's fraction of the task's sampled weight in the window.
	Share float64 `json:"share"`
	// EstimatedRecords is the key's weight scaled by the task's inverse
	// sample rate in the window.
	EstimatedRecords float64 `json:"estimated_records"`
	// ShareMargin is half the width of the 95 % (Wilson) interval of
	// Share, from the window's sampled records: the key's share is Share ±
	// ShareMargin.
	ShareMargin float64 `json:"share_margin,omitempty"`
	// Rule is the rule that named the key: "task" (its share of the task's
	// sampled records is above Threshold) or "subtask" (its share of its
	// saturated, skewed subtask's sampled records is above Threshold, a
	// part of the subtask's excess over its peers).
	Rule string `json:"rule,omitempty"`
	// ShareLowerBound is the exact one-sided lower bound, at the
	// configured confidence, of the share the rule judged (of the task's
	// records for rule "task", of the subtask's for "subtask"), from the
	// sketch's guaranteed counts over EvidenceRecords sampled records in
	// EvidenceWindows consecutive windows; the key is hot because it is
	// above Threshold.
	ShareLowerBound float64 `json:"share_lower_bound,omitempty"`
	// Threshold is the share the key was judged against: for rule "task"
	// the larger of the floor and the multiple of the fair share
	// 1/parallelism; for rule "subtask" the part of the subtask's excess
	// (hot-key-excess-share × SubtaskExcess).
	Threshold       float64 `json:"threshold,omitempty"`
	EvidenceWindows int     `json:"evidence_windows,omitempty"`
	EvidenceRecords float64 `json:"evidence_records,omitempty"`
	// On a saturated subtask with skewed input (either rule):
	// SubtaskShare ± SubtaskShareMargin is the key's share of the
	// subtask's sampled records in the window; SubtaskExcess the
	// subtask's input above its peers' median, as a share of its input
	// (1 - 1/input ratio); ExcessExplained the part of that excess the key
	// accounts for (SubtaskShare / SubtaskExcess, at most 1).
	SubtaskShare       float64 `json:"subtask_share,omitempty"`
	SubtaskShareMargin float64 `json:"subtask_share_margin,omitempty"`
	SubtaskExcess      float64 `json:"subtask_excess,omitempty"`
	ExcessExplained    float64 `json:"excess_explained,omitempty"`
	// Saturated says whether a subtask of the task was saturated (as of
	// its latest report) in the window. A hot key of a task that is not
	// saturated is kept for the history tables but raises no alert unless
	// it alone pushes its subtask above the skew ratio (SkewsSubtask); see
	// Actionable. Nil in findings made before the label existed.
	Saturated *bool `json:"saturated,omitempty"`
	// SkewsSubtask says whether the key alone pushes its subtask above the
	// skew ratio in the window's key samples: its subtask gets at least
	// skew-ratio times its peers' median share, and the key's share alone
	// is at least (skew-ratio - 1) times that median.
	SkewsSubtask bool `json:"skews_subtask,omitempty"`
	// Subtasks lists the subtasks the key's samples arrived at in the
	// window, when more than one: Flink routes a key to one subtask, so
	// the key is salted (a plan is applied). The finding then names no
	// subtask, SkewsSubtask is false, and Saturated says whether one of
	// these subtasks is saturated: a salted key on subtasks that keep up
	// raises no alert.
	Subtasks []int `json:"subtasks,omitempty"`
}

// Actionable reports whether the hot key may raise an alert: its task is
// saturated, or the key alone pushes its subtask above the skew ratio.
// A finding without the Saturated label (made before it existed) is
// actionable, as every hot key was then. Salting plans are stricter still:
// the engine proposes one only with a data_skew or rotating_hot_key
// finding of the task.
func (h *HotKey) Actionable() bool {
	return h.Saturated == nil || *h.Saturated || h.SkewsSubtask
}

// Saturation is the body of a saturation finding. Host, TaskAttemptID
// and TaskManagerID (Flink's tm_id, the id of the TaskManager in its REST
// API) say where the subtask of a per-subtask finding runs, as its
// metrics report them.
type Saturation struct {
	Cause         string    `json:"cause"`
	Host          string    `json:"host,omitempty"`
	TaskAttemptID string    `json:"task_attempt_id,omitempty"`
	TaskManagerID string    `json:"tm_id,omitempty"`
	Evidence      *Evidence `json:"evidence"`
}

// Evidence holds the numbers behind a saturation finding. Rates are per
// second; times are in ms per second unless the name says otherwise.
type Evidence struct {
	BusyMsPerSecond          float64 `json:"busy_ms_per_s"`
	BackPressuredMsPerSecond float64 `json:"backpressured_ms_per_s"`
	IdleMsPerSecond          float64 `json:"idle_ms_per_s"`
	// RecordsInPerSecond is the subtask's input rate (the task's total for
	// task-wide findings).
	RecordsInPerSecond float64 `json:"records_in_per_s"`
	// PeerMedianRecordsInPerSecond is the median input rate of the other
	// subtasks of the task.
	PeerMedianRecordsInPerSecond float64 `json:"peer_median_records_in_per_s,omitempty"`
	// InputRatio is RecordsInPerSecond / PeerMedianRecordsInPerSecond.
	InputRatio float64 `json:"input_ratio,omitempty"`
	// InputShare is the subtask's share of the task's input.
	InputShare       float64 `json:"input_share,omitempty"`
	InPoolUsage      float64 `json:"in_pool_usage"`
	OutPoolUsage     float64 `json:"out_pool_usage"`
	InputQueueLength float64 `json:"input_queue_length"`
	// QueueCapacity is learned from the flat-line maximum of
	// inputQueueLength; 0 while unknown.
	QueueCapacity     float64 `json:"queue_capacity,omitempty"`
	CheckpointAlignMs float64 `json:"checkpoint_alignment_ms,omitempty"`
	CheckpointDelayMs float64 `json:"checkpoint_start_delay_ms,omitempty"`
	LastCheckpointMs  float64 `json:"last_checkpoint_duration_ms,omitempty"`
	FailedCheckpoints float64 `json:"failed_checkpoints_in_window,omitempty"`
	// NoCheckpointYet: the job reported that none of its checkpoints has
	// completed (Flink's -1, before the first one and with checkpointing
	// off), so there is no checkpoint duration and no forecast.
	NoCheckpointYet     bool    `json:"no_checkpoint_yet,omitempty"`
	LastCheckpointBytes float64 `json:"last_checkpoint_size_bytes,omitempty"`
	CheckpointTimeoutMs int64   `json:"checkpoint_timeout_ms,omitempty"`
	// The forecast of checkpoint_risk (see skew's doc), when the trend of
	// the job's checkpoints rises: ForecastTimeoutInMs is the time from
	// the window's end to the forecast timeout (0: checkpoints time out
	// already), ForecastIntervals the same in CheckpointIntervalMs
	// (CheckpointIntervalMeasured: the job's own, measured from its
	// checkpoints; else the configured one); the trends, per checkpoint
	// interval, of the checkpoint duration (from the last one's, by
	// CheckpointTrend: "linear" or "exponential", whichever fits the
	// checkpoints better), of the barrier wait (start delay plus
	// alignment) of the subtask that holds the barrier, and of the
	// checkpoint size; ForecastPoints the checkpoints the trend fits.
	ForecastTimeoutInMs                 *int64   `json:"forecast_timeout_in_ms,omitempty"`
	ForecastIntervals                   *float64 `json:"forecast_intervals,omitempty"`
	CheckpointIntervalMs                int64    `json:"checkpoint_interval_ms,omitempty"`
	CheckpointIntervalMeasured          bool     `json:"checkpoint_interval_measured,omitempty"`
	CheckpointTrend                     string   `json:"checkpoint_trend,omitempty"`
	CheckpointTrendMsPerInterval        float64  `json:"checkpoint_trend_ms_per_interval,omitempty"`
	BarrierTrendMsPerInterval           float64  `json:"barrier_trend_ms_per_interval,omitempty"`
	CheckpointSizeTrendBytesPerInterval float64  `json:"checkpoint_size_trend_bytes_per_interval,omitempty"`
	ForecastPoints                      int      `json:"forecast_points,omitempty"`
	SkewScore                           float64  `json:"skew_score"`
	MaxMedianRatio                      float64  `json:"max_median_ratio"`
	Subtasks                            int      `json:"subtasks_observed"`
	SaturatedSubtasks                   int      `json:"subtasks_saturated"`
	SustainedWindows                    int      `json:"sustained_windows"`
	// SaturatedForMs is how long the busy counter has shown the subtask
	// saturated without a break, up to its last reading in the window.
	SaturatedForMs int64      `json:"saturated_for_ms,omitempty"`
	HotKeys        []KeyShare `json:"hot_keys,omitempty"`
	// SubtaskExcess is the subtask's input above its peers' median as a
	// share of its input, and ExcessExplained the part of it the named hot
	// keys on the subtask account for (at most 1), for data skew.
	SubtaskExcess       float64  `json:"subtask_excess,omitempty"`
	ExcessExplained     float64  `json:"excess_explained,omitempty"`
	TimeBucketKey       string   `json:"time_bucket_key,omitempty"`
	PreviousHotSubtask  *int     `json:"previous_hot_subtask,omitempty"`
	UpstreamBackPressed []string `json:"backpressured_tasks,omitempty"`
	// VertexID is Flink's JobVertexID of the task (its metric scope's
	// task_id, as the REST API's vertices[].id shows it), when the metrics
	// carry it: what Flink's per-vertex settings and REST paths name.
	VertexID string `json:"vertex_id,omitempty"`
	// Inspect is set for slow_subtask: how to look inside the subtask.
	Inspect *Inspect `json:"inspect,omitempty"`
	// The fields below are set for under_provisioned only. Rescale is the
	// recommended parallelism in the forms Flink users apply it (package
	// skew/rescale), when VertexID is known.
	Rescale                *rescale.Forms `json:"rescale,omitempty"`
	Parallelism            int            `json:"parallelism,omitempty"`
	MaxParallelism         int            `json:"max_parallelism,omitempty"`
	TrueRatePerSubtask     float64        `json:"true_rate_per_subtask,omitempty"`
	RecommendedParallelism int            `json:"recommended_parallelism,omitempty"`
	ChainableWith          []string       `json:"chainable_with,omitempty"`
}

// Inspect says how to look inside a slow subtask: requests to Flink's
// REST API (paths relative to the JobManager's REST address; empty when
// the ids they need are unknown) and the command of last resort.
type Inspect struct {
	// Subtask is the subtask's current attempt, whose taskmanager-id and
	// endpoint name the TaskManager it runs in now.
	Subtask string `json:"subtask,omitempty"`
	// ThreadDump dumps the threads of the whole TaskManager (tm_id).
	ThreadDump string `json:"thread_dump,omitempty"`
	// FlameGraph samples the subtask's own threads; Flink serves it only
	// with rest.flamegraph.enabled: true.
	FlameGraph string `json:"flame_graph,omitempty"`
	// Jstack is the fallback without the REST API: on the host.
	Jstack string `json:"jstack"`
}

// KeyShare names a key, its share of the task's sampled records and of
// its subtask's, each with the half-width of its 95 % interval (see
// HotKey).
type KeyShare struct {
	Key                string  `json:"key"`
	Share              float64 `json:"share"`
	ShareMargin        float64 `json:"share_margin,omitempty"`
	SubtaskShare       float64 `json:"subtask_share,omitempty"`
	SubtaskShareMargin float64 `json:"subtask_share_margin,omitempty"`
}

// Plan is the body of a salting_plan finding: how to spread a task's hot
// keys over distinct, least-loaded subtasks under Flink's own routing.
type Plan struct {
	Parallelism    int `json:"parallelism"`
	MaxParallelism int `json:"max_parallelism"`
	// Load is the predicted per-subtask load, as max/mean of the sampled
	// shares, before and after salting.
	MaxOverMeanBefore float64 `json:"max_over_mean_before"`
	MaxOverMeanAfter  float64 `json:"max_over_mean_after"`
	// Keys is "hot_keys" in JSON, as in the plans of the API and the plan
	// topic (plans.Plan), so that a plan names its keys alike everywhere.
	Keys []SaltedKey `json:"hot_keys"`
	// DataStream and SQL tell the user how to apply the plan.
	DataStream string `json:"datastream"`
	SQL        string `json:"sql"`
}

// SaltedKey is the plan for one hot key.
type SaltedKey struct {
	Key     string  `json:"key"`
	Share   float64 `json:"share"`
	Subtask int     `json:"subtask"`
	Buckets int     `json:"buckets"`
	// Salted lists the concrete salted keys and where Flink routes them.
	Salted []SaltTarget `json:"salted"`
}

// SaltTarget is one salted key and the subtask it lands on.
type SaltTarget struct {
	Key      string `json:"key"`
	KeyGroup int    `json:"key_group"`
	Subtask  int    `json:"subtask"`
}

// ShortJobID is how many leading characters of a job id name a run of a
// job in text: Flink gives a job a new 32-character id on every
// submission, and eight tell the runs of one job apart.
const ShortJobID = 8

// JobLabel names a run of a job in text: its name and the start of its
// id, "orders (3f2a1c9e)", so that two runs of one job read apart; the
// id alone when the name is unknown. Incident lines, analyze's text and
// the web view's job list (its JavaScript twin) write jobs with it.
func JobLabel(name, id string) string {
	short := ShortID(id)
	switch {
	case name == "":
		return short
	case short == "":
		return name
	}
	return name + " (" + short + ")"
}

// ShortID returns the first ShortJobID characters of a job id.
func ShortID(id string) string {
	if r := []rune(id); len(r) > ShortJobID {
		return string(r[:ShortJobID])
	}
	return id
}
