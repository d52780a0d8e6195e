package skew

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/skew/keygroup"
)

// Config holds every threshold of the engine. Each field's tags declare
// its flag, default, valid range and help (package internal/knob):
// DefaultConfig and Validate read them, and the command line binds the
// fields directly. New also reads a zero field whose range excludes zero
// as its default.
type Config struct {
	WindowMs int64 `name:"window" type:"ms" default:"10s" range:"[1ms,]" group:"Engine" help:"Tumbling event-time window."`
	// TopK: any key above 1/TopK of a task's sampled weight is guaranteed
	// to be found; the count error is at most weight/TopK.
	TopK int `name:"top-k" default:"1024" range:"[2,${max_top_k}]" group:"Engine" help:"Heavy-hitter counters per task and window; keys above 1/top-k of a task's weight are always found."`
	// The hot-key fields below are the thresholds of the hot-key rules,
	// stated in docs/detection.md#hot-keys; hotKeyThreshold and
	// explainSubtask apply them.
	HotKeyShare      float64 `name:"hot-key-share" default:"0.01" range:"(0,1]" group:"Engine" help:"Floor of the hot-key threshold: a key under this share of a task's sampled weight is never hot."`
	HotKeyFairShare  float64 `name:"hot-key-fair-share" default:"0.5" range:"(0,1]" group:"Engine" help:"Hot-key threshold as a multiple of the fair share 1/parallelism (the threshold is the larger of this and --hot-key-share)."`
	HotKeyConfidence float64 `name:"hot-key-confidence" default:"0.99" range:"[0.5,1)" group:"Engine" help:"One-sided confidence with which a key's share must be above a hot-key threshold (exact lower bound over its pooled sampled records)."`
	// HotKeyPoolWindows: each candidate key of a task keeps that many
	// windows of counts (MaxHotKeyPoolWindows bounds it).
	HotKeyPoolWindows int     `name:"hot-key-pool-windows" default:"3" range:"[1,${max_hot_key_pool_windows}]" group:"Engine" help:"Windows over which a key's sampled records add up for the hot-key rules; a key is dropped in the first window without it."`
	HotKeyExcessShare float64 `name:"hot-key-excess-share" default:"0.2" range:"(0,1]" group:"Engine" help:"On a saturated subtask with skewed input, name a key that alone carries at least this share of the subtask's input above its peers' median."`
	MaxHotKeys        int     `name:"max-hot-keys" default:"10" range:"[1,${max_top_k}]" group:"Engine" help:"Most hot_key findings per task and window."`
	MinSamples        int     `name:"min-samples" default:"100" range:"[1,]" group:"Engine" help:"Sampled records (the key samples' summed weight) a task needs in a key's pooled windows before the key can be hot."`
	// BusyMsPerSecond, PoolUsage, SustainMs, SkewRatio, the
	// UnderProvisioned and BalancedSkewScore fields and
	// RotationLookbackWindows are the thresholds of the saturation rules,
	// stated in docs/detection.md (from #saturated on); diagnose.go
	// applies them.
	BusyMsPerSecond float64 `name:"busy-threshold" default:"800" range:"(0,1000]" group:"Engine" help:"busyTimeMsPerSecond at or above which a subtask is saturated."`
	// BusyFromGauges makes the busy, back-pressured and idle time of every
	// subtask come from the *TimeMsPerSecond gauges, ignoring Flink's
	// cumulative accumulate*TimeMs counters (false: a subtask that reports
	// the counters is judged by their differences). The gauges are 60 s
	// moving averages in Flink 2.x and lag a change of load by up to a
	// minute; the switch exists to measure that lag on one capture.
	BusyFromGauges bool    `kong:"-"`
	PoolUsage      float64 `name:"pool-usage" default:"0.9" range:"(0,1]" group:"Engine" help:"inPoolUsage that marks saturation when busy time is not reported (Flink < 1.13)."`
	// SustainMs is met by sustainWindows windows or by the busy counter's
	// run (saturatedRun): docs/detection.md#sustained.
	SustainMs                int64   `name:"sustain" type:"ms" default:"20s" range:"[1ms,]" group:"Engine" help:"How long a subtask stays saturated before a saturation finding: saturated windows that cover it, or an unbroken run of busy-counter readings that lasts it."`
	SkewRatio                float64 `name:"skew-ratio" default:"1.5" range:"(1,]" group:"Engine" help:"Input rate over the peers' median that counts as disproportionate."`
	UnderProvisionedFraction float64 `name:"under-provisioned-fraction" default:"0.75" range:"(0,1]" group:"Engine" help:"Fraction of subtasks saturated, with balanced input, for under_provisioned."`
	UnderProvisionedBusy     float64 `name:"under-provisioned-busy" default:"700" range:"(0,1000]" group:"Engine" help:"Median busy ms/s that, with one subtask saturated and balanced input, also means under_provisioned."`
	BalancedSkewScore        float64 `name:"balanced-skew-score" default:"25" range:"(0,100]" group:"Engine" help:"Highest Flink skew score (0-100) that still counts as balanced input."`
	BackPressuredMsPerSecond float64 `name:"backpressure-threshold" default:"500" range:"(0,1000]" group:"Engine" help:"backPressuredTimeMsPerSecond at which a task is listed as back-pressured."`
	RotationLookbackWindows  int     `name:"rotation-lookback" default:"60" range:"[1,${history_windows}]" group:"Engine" help:"Windows within which a move of the hot subtask marks skew as rotating."`
	TargetUtilization        float64 `name:"target-utilization" default:"0.7" range:"(0,1]" group:"Engine" help:"Busy ratio the recommended parallelism aims for (Flink autoscaler style)."`
	// SaltSeparator joins a key and its salt: key + SaltSeparator + n.
	SaltSeparator string `name:"salt-separator" default:"#" range:"[1,${max_separator}]" group:"Engine" help:"Joins a key and its salt in salted keys."`
	// MaxSaltBuckets: never more than the parallelism either.
	MaxSaltBuckets         int     `name:"max-salt-buckets" default:"32" range:"[2,${max_parallelism}]" group:"Engine" help:"Most salt buckets for one hot key."`
	PlanMinImbalance       float64 `name:"plan-min-imbalance" default:"1.5" range:"[1,]" group:"Engine" help:"Max/mean subtask load at which a salting plan is proposed."`
	CheckpointTimeoutMs    int64   `name:"checkpoint-timeout" type:"ms" default:"10m" range:"[1ms,]" group:"Engine" help:"The jobs' checkpoint timeout (Flink's execution.checkpointing.timeout)."`
	CheckpointRiskFraction float64 `name:"checkpoint-risk-fraction" default:"0.5" range:"(0,1]" group:"Engine" help:"Share of --checkpoint-timeout at or above which a job's lastCheckpointDuration counts as slow; saturation summaries then name the subtask that holds checkpoints up."`
	// CheckpointIntervalMs counts the forecast's horizon until a job's
	// own checkpoints show their interval (see forecast.go).
	CheckpointIntervalMs int64 `name:"checkpoint-interval" type:"ms" default:"1m" range:"[1ms,]" group:"Engine" help:"The jobs' checkpoint interval (Flink's execution.checkpointing.interval), used until a job's own checkpoints show theirs."`
	// CheckpointForecastHorizon is in checkpoint intervals.
	CheckpointForecastHorizon int `name:"checkpoint-forecast-horizon" default:"3" range:"[1,${max_forecast_horizon}]" group:"Engine" help:"Checkpoint intervals ahead within which a forecast timeout raises checkpoint_risk: the trend of a job's checkpoint durations says when they reach --checkpoint-timeout."`
	// EmitStats adds a subtask_stats row per reporting subtask and window
	// to the findings.
	EmitStats bool `kong:"-"`
	// HistoryWindows is how long a task's cross-window state (sustain
	// counters, learned queue capacity, hosts) is kept after its last
	// report, in windows. It bounds memory for jobs that go away, and must
	// cover RotationLookbackWindows and SustainMs.
	HistoryWindows int `kong:"-" default:"360" range:"[1,]"`
	// JobEndAfterMs: the default is the pipeline's 15 s idle timeout plus
	// four windows. Flink gives a job a new id each time it is submitted,
	// so without an end a redeployed fleet's state grows with every run.
	JobEndAfterMs int64 `name:"job-end-after" type:"ms" default:"1m" range:"[1ms,]" group:"Engine" help:"How long a job may send nothing before its run ends: a job_end finding closes its incidents and retires its salting plans, and its state is freed. A run that another of the same job name replaces ends at once."`
	// MaxJobs bounds the jobs the engine tracks at once. Overflow policy:
	// the events of a job not yet tracked are Rejected while the bound is
	// reached (RefusedJobs counts them); tracked jobs go on.
	MaxJobs int `name:"max-jobs" default:"10000" range:"[1,]" group:"Engine" help:"Most jobs tracked at once; the events of further jobs are rejected until a run ends."`
}

// MaxTopK bounds Config.TopK. Each task keeps TopK counters per open
// window, so the bound keeps a mistyped value (1e9) from exhausting
// memory; 10000 counters resolve keys down to 0.01 % of a task's weight,
// far below any useful hot-key threshold.
const MaxTopK = 10000

// MaxSaltSeparatorBytes bounds Config.SaltSeparator and a plan's.
const MaxSaltSeparatorBytes = 16

// MaxCheckpointForecastHorizon bounds Config.CheckpointForecastHorizon:
// a line fitted to the last few checkpoints says little about a hundred
// intervals ahead.
const MaxCheckpointForecastHorizon = 100

// MaxHotKeyPoolWindows bounds Config.HotKeyPoolWindows, and the pooled
// windows a saved state may hold.
const MaxHotKeyPoolWindows = 30

var historyField, _ = reflect.TypeFor[Config]().FieldByName("HistoryWindows")

// KnobVars gives the range bounds the tags name.
func (Config) KnobVars() map[string]string {
	return map[string]string{
		"max_top_k":                strconv.Itoa(MaxTopK),
		"max_hot_key_pool_windows": strconv.Itoa(MaxHotKeyPoolWindows),
		"max_separator":            strconv.Itoa(MaxSaltSeparatorBytes),
		"max_parallelism":          strconv.Itoa(keygroup.UpperBoundMaxParallelism),
		"max_forecast_horizon":     strconv.Itoa(MaxCheckpointForecastHorizon),
		// The rotation lookback fits in the history: HistoryWindows's
		// declared default.
		"history_windows": historyField.Tag.Get("default"),
	}
}

// DefaultConfig returns the engine's defaults, as the tags declare them.
func DefaultConfig() Config { return knob.Defaults[Config]() }

// withDefaults returns c with every zero field whose range excludes zero
// set to its default. New applies it, so that a Config literal naming
// only the thresholds it changes keeps working.
func (c Config) withDefaults() Config {
	knob.FillZero(&c)
	return c
}

// Validate reports every value that makes no sense. It changes nothing:
// a zero threshold is invalid here, and New fills those in first.
func (c Config) Validate() error {
	errs := []error{knob.Check(c)}
	if c.TopK > 0 && c.HotKeyShare > 0 && c.HotKeyShare < 1/float64(c.TopK) {
		errs = append(errs, fmt.Errorf("hot-key-share %g: must be at least 1/top-k (%g): hot keys that small are not guaranteed to be found", c.HotKeyShare, 1/float64(c.TopK)))
	}
	if c.JobEndAfterMs < c.WindowMs {
		errs = append(errs, fmt.Errorf("job-end-after %s: must be at least one window (%s)", knob.Duration(time.Duration(c.JobEndAfterMs)*time.Millisecond), knob.Duration(time.Duration(c.WindowMs)*time.Millisecond)))
	}
	if c.HistoryWindows < c.RotationLookbackWindows {
		errs = append(errs, fmt.Errorf("rotation-lookback %d: must be at most the %d windows of history", c.RotationLookbackWindows, c.HistoryWindows))
	}
	if c.WindowMs >= 1 && c.SustainMs >= 1 && c.HistoryWindows < c.sustainWindows() {
		errs = append(errs, fmt.Errorf("sustain %s: must be at most the %d windows of history", knob.Duration(time.Duration(c.SustainMs)*time.Millisecond), c.HistoryWindows))
	}
	return errors.Join(errs...)
}

// sustainWindows is the number of consecutive saturated windows that
// cover SustainMs: at least one.
func (c Config) sustainWindows() int {
	return int(max((c.SustainMs+c.WindowMs-1)/c.WindowMs, 1))
}
