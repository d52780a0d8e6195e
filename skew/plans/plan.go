package plans

import (
	"time"

	"github.com/skewlens/skewlens/skew"
)

// Plan is one task's current salting plan. Its JSON form is the contract
// of GET /v1/salting, of the values on the plans Kafka topic and of the
// body column of the plans table. Field order is fixed, so equal plans
// marshal to identical bytes (the HTTP ETag relies on it).
type Plan struct {
	JobID    string `json:"job_id"`
	JobName  string `json:"job_name,omitempty"`
	TaskName string `json:"task_name"`
	// Parallelism and MaxParallelism are what the salted keys were routed
	// for; a job running at another parallelism must not apply the plan.
	Parallelism    int `json:"parallelism"`
	MaxParallelism int `json:"max_parallelism"`
	// Version increases by one each time the plan changes materially.
	Version uint64 `json:"version"`
	// GeneratedAt is the event time (window end) of the findings that made
	// this version; UpdatedAt the last window that confirmed it; ExpiresAt
	// when it is retired unless confirmed again.
	GeneratedAt time.Time `json:"generated_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	// Separator joins a key and its salt: salted key = key + Separator + salt.
	Separator string `json:"separator"`
	// Source is "engine" for computed plans and "override" for a plan an
	// operator set; Pinned means the engine does not change it.
	Source string `json:"source"`
	Pinned bool   `json:"pinned,omitempty"`
	// Predicted per-subtask load of the task, as max/mean of the sampled
	// shares, before and after salting.
	MaxOverMeanBefore float64  `json:"max_over_mean_before"`
	MaxOverMeanAfter  float64  `json:"max_over_mean_after"`
	HotKeys           []HotKey `json:"hot_keys"`
}

// HotKey is the plan for one hot key.
type HotKey struct {
	Key string `json:"key"`
	// Share is the key's share of the task's sampled input when it was
	// last hot.
	Share float64 `json:"share"`
	// Subtask is where Flink routes the unsalted key.
	Subtask int `json:"subtask"`
	Buckets int `json:"buckets"`
	// Salted lists the salted keys and the subtask each lands on.
	Salted []skew.SaltTarget `json:"salted"`
	// PredictedLoadBefore is the key's load on its subtask as a multiple
	// of the mean subtask load (Share × parallelism); PredictedLoadAfter
	// is the load it puts on each salted subtask (Share × parallelism /
	// Buckets).
	PredictedLoadBefore float64 `json:"predicted_load_before"`
	PredictedLoadAfter  float64 `json:"predicted_load_after"`
	// LastHotAt is the event time of the last window in which the key was
	// hot; the key stays in the plan for a cooldown after it.
	LastHotAt time.Time `json:"last_hot_at"`
}

// Override actions.
const (
	// ActionPin freezes the current plan: the engine's changes are ignored
	// and the plan does not expire.
	ActionPin = "pin"
	// ActionOverride replaces the plan with the one given.
	ActionOverride = "override"
	// ActionExclude removes one key from the plan and keeps it out.
	ActionExclude = "exclude"
)

// Override is an operator's change to one task's plan. It is stored (and
// audited) in ClickHouse and applied on top of the engine's plan.
type Override struct {
	JobID    string `json:"job_id"`
	TaskName string `json:"task_name"`
	Action   string `json:"action"`
	// Key is the excluded key (ActionExclude only).
	Key string `json:"key,omitempty"`
	// Plan is the replacement (ActionOverride only).
	Plan *Plan `json:"plan,omitempty"`
	// By is who made the change (the token's name), At when, and Reason
	// why, as given by the operator.
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Reason string    `json:"reason,omitempty"`
}

// Change is one plan change for publishing: a new or changed plan, or a
// retirement (Plan is nil and Retired is set; Kafka gets a tombstone).
type Change struct {
	JobID    string
	TaskName string
	Plan     *Plan
	Retired  bool
	// Version and At are set for a retirement: the version retired and
	// the event time of the retirement, stored with it (the tombstone's
	// headers, the plans table's retired row) so that a restored
	// Manager's next plan of the task continues from it (RetiredTask).
	Version uint64
	At      time.Time
}

// RetiredTask is a task whose latest plan was retired, as stored: the
// version it had and when it was retired. A Manager remembers it for
// Config.RetainRetired, so that versions never go back.
type RetiredTask struct {
	JobID, TaskName string
	Version         uint64
	At              time.Time
}

// Stored is what a restart restores plans from (Manager.Restore): the
// latest plan of each task that has one, the tasks whose latest plan was
// retired, and the jobs of the stored plans that could not be read.
type Stored struct {
	Plans      []Plan
	Retired    []RetiredTask
	Unreadable []RefusedJob
}

// Key returns the Kafka message key of a task's plan: "job_id/task_name".
func Key(jobID, taskName string) string { return jobID + "/" + taskName }
