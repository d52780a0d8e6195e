package skew

import (
	"cmp"
	"errors"
	"fmt"
	"math"
)

// Config holds every threshold of the engine. DefaultConfig returns it
// with the defaults stated in the comments; New also reads a zero field as
// its default.
type Config struct {
	// WindowMs is the length of the tumbling event-time window (default 10000).
	WindowMs int64
	// TopK is the number of heavy-hitter counters per task and window
	// (default 1024). Any key above 1/TopK of a task's sampled weight is
	// guaranteed to be found; the count error is at most weight/TopK.
	// At most MaxTopK.
	TopK int
	// HotKeyShare is the floor of the hot-key threshold: a key under this
	// share of a task's sampled weight in a window is never hot, whatever
	// the parallelism (default 0.01). See hotKeyThreshold for the rule.
	HotKeyShare float64
	// HotKeyFairShare is the hot-key threshold as a multiple of a subtask's
	// fair share 1/parallelism (default 0.5). A key with k/P of a task's
	// records alone raises its subtask to about 1+k times its peers' load
	// when the rest is spread evenly, so 0.5 matches the default SkewRatio.
	HotKeyFairShare float64
	// HotKeyConfidence is the one-sided confidence with which a key's share
	// must be above the threshold to be reported (default 0.99): the exact
	// (Clopper-Pearson) lower bound of the share at this confidence, from
	// the sketch's guaranteed counts over the key's pooled sampled
	// records, must exceed the threshold (see hotkey.go).
	HotKeyConfidence float64
	// HotKeyPoolWindows is how many consecutive windows of a key's
	// evidence the hot-key rules pool (default 3): a key that stays near
	// a threshold adds its sampled records up over that many windows, and
	// one that stops is dropped in the first window without it.
	HotKeyPoolWindows int
	// HotKeyExcessShare is the subtask rule's threshold (default 0.2): on
	// a subtask saturated with skewed input, a key is named when it alone
	// carries at least this share of the subtask's input above its peers'
	// median, judged on the subtask's own sampled records.
	HotKeyExcessShare float64
	// MaxHotKeys caps the hot_key findings per task and window (default 10).
	MaxHotKeys int
	// MinSamples is the minimum number of sampled records (the sum of the
	// key samples' weights) a task needs in a key's pooled windows before
	// the task rule reports it hot (default 100), so that a handful of
	// samples cannot look like a hot key.
	MinSamples int
	// BusyMsPerSecond is the busy time at or above which a subtask counts
	// as saturated (default 800, of 1000 ms per second).
	BusyMsPerSecond float64
	// BusyFromGauges makes the busy, back-pressured and idle time of every
	// subtask come from the *TimeMsPerSecond gauges, ignoring Flink's
	// cumulative accumulate*TimeMs counters (default false: a subtask that
	// reports the counters is judged by their differences). The gauges are
	// 60 s moving averages in Flink 2.x and lag a change of load by up to
	// a minute; the switch exists to measure that lag on one capture.
	BusyFromGauges bool
	// PoolUsage is used when a subtask reports no busy time (Flink before
	// 1.13): it is saturated when inPoolUsage is at least this and
	// outPoolUsage is below it (default 0.9).
	PoolUsage float64
	// SustainMs is how long a subtask must stay saturated before a
	// saturation finding is emitted (default 20000). Consecutive
	// saturated windows that cover it meet it; so does, for a subtask
	// whose busy time comes from the accumulateBusyTimeMs counter, an
	// unbroken run of its readings at BusyMsPerSecond or more that lasts
	// it, counted from the reading the run began at, mid-window or in an
	// earlier window. Once met it holds while the subtask's windows stay
	// saturated. Windows without a report for the subtask neither count
	// nor reset. A task's under_provisioned needs the windows.
	SustainMs int64
	// SkewRatio is the input rate relative to the peers' median at or above
	// which a saturated subtask is said to receive disproportionate input
	// (default 1.5).
	SkewRatio float64
	// UnderProvisionedFraction is the fraction of a task's observed
	// subtasks that must be saturated for under_provisioned (default 0.75).
	UnderProvisionedFraction float64
	// UnderProvisionedBusy is the median busy time (ms/s) of a task's
	// observed subtasks at or above which the task counts as
	// under_provisioned even when fewer than UnderProvisionedFraction are
	// saturated, provided at least one is and the input is balanced
	// (default 700). This catches operators whose subtasks own unequal
	// numbers of key groups (max parallelism not a multiple of the
	// parallelism): the larger ones saturate first at the same key mix.
	UnderProvisionedBusy float64
	// BalancedSkewScore is the highest Flink skew score (0..100) at which
	// a task's input still counts as balanced for under_provisioned
	// (default 25).
	BalancedSkewScore float64
	// BackPressuredMsPerSecond is the back-pressured time at or above which
	// a task is listed as back-pressured by the bottleneck (default 500).
	BackPressuredMsPerSecond float64
	// RotationLookbackWindows is how far back a move of the hot subtask
	// still marks data skew as rotating (default 60 windows).
	RotationLookbackWindows int
	// TargetUtilization is the busy ratio the recommended parallelism aims
	// for, as in the Flink autoscaler (default 0.7).
	TargetUtilization float64
	// SaltSeparator joins a key and its salt: key + SaltSeparator + n
	// (default "#").
	SaltSeparator string
	// MaxSaltBuckets caps the salt buckets of one hot key (default 32; never
	// more than the parallelism).
	MaxSaltBuckets int
	// PlanMinImbalance is the predicted max/mean subtask load at or above
	// which a salting plan is proposed for a task with hot keys (default 1.5).
	PlanMinImbalance float64
	// CheckpointTimeoutMs is the job's configured checkpoint timeout in
	// milliseconds (default 600000, Flink's execution.checkpointing.timeout
	// of 10 min).
	CheckpointTimeoutMs int64
	// CheckpointRiskFraction is the share of CheckpointTimeoutMs at or above
	// which a job's lastCheckpointDuration counts as slow (default 0.5).
	CheckpointRiskFraction float64
	// EmitStats adds a subtask_stats row per reporting subtask and window
	// to the findings (default false).
	EmitStats bool
	// HistoryWindows is how long a task's cross-window state (sustain
	// counters, learned queue capacity, hosts) is kept after its last
	// report, in windows (default 360). It bounds memory for jobs that go away.
	HistoryWindows int
	// JobEndAfterMs is how long a job may send nothing before it counts
	// as stopped: a job_end finding closes its run, and the engine frees
	// its state (default 60000: the pipeline's 15 s idle timeout plus four
	// windows; at least one window). Flink gives a job a new id each time
	// it is submitted, so without an end a redeployed fleet's state grows
	// with every run.
	JobEndAfterMs int64
	// MaxJobs bounds the jobs the engine tracks at once. Overflow policy:
	// the events of a job not yet tracked are Rejected while the bound is
	// reached (RefusedJobs counts them); tracked jobs go on (default
	// 10000).
	MaxJobs int
}

// MaxTopK bounds Config.TopK. Each task keeps TopK counters per open
// window, so the bound keeps a mistyped value (1e9) from exhausting
// memory; 10000 counters resolve keys down to 0.01 % of a task's weight,
// far below any useful hot-key threshold.
const MaxTopK = 10000

// MaxHotKeyPoolWindows bounds Config.HotKeyPoolWindows: each candidate
// key of a task keeps that many windows of counts.
const MaxHotKeyPoolWindows = 30

// DefaultConfig returns the engine's defaults, the values the field
// comments above state in words. It is the one place they live: the
// command-line flags take theirs from it.
func DefaultConfig() Config {
	return Config{
		WindowMs:                 10000,
		TopK:                     1024,
		HotKeyShare:              0.01,
		HotKeyFairShare:          0.5,
		HotKeyConfidence:         0.99,
		HotKeyPoolWindows:        3,
		HotKeyExcessShare:        0.2,
		MaxHotKeys:               10,
		MinSamples:               100,
		BusyMsPerSecond:          800,
		PoolUsage:                0.9,
		SustainMs:                20000,
		SkewRatio:                1.5,
		UnderProvisionedFraction: 0.75,
		UnderProvisionedBusy:     700,
		BalancedSkewScore:        25,
		BackPressuredMsPerSecond: 500,
		RotationLookbackWindows:  60,
		TargetUtilization:        0.7,
		SaltSeparator:            "#",
		MaxSaltBuckets:           32,
		PlanMinImbalance:         1.5,
		HistoryWindows:           360,
		JobEndAfterMs:            60000,
		MaxJobs:                  10000,
		CheckpointTimeoutMs:      600000,
		CheckpointRiskFraction:   0.5,
	}
}

// withDefaults returns c with every zero field set to its value in
// DefaultConfig. New applies it, so that a Config literal naming only the
// thresholds it changes keeps working (the tests and replay tools build
// many such literals).
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.WindowMs = cmp.Or(c.WindowMs, d.WindowMs)
	c.TopK = cmp.Or(c.TopK, d.TopK)
	c.HotKeyShare = cmp.Or(c.HotKeyShare, d.HotKeyShare)
	c.HotKeyFairShare = cmp.Or(c.HotKeyFairShare, d.HotKeyFairShare)
	c.HotKeyConfidence = cmp.Or(c.HotKeyConfidence, d.HotKeyConfidence)
	c.HotKeyPoolWindows = cmp.Or(c.HotKeyPoolWindows, d.HotKeyPoolWindows)
	c.HotKeyExcessShare = cmp.Or(c.HotKeyExcessShare, d.HotKeyExcessShare)
	c.MaxHotKeys = cmp.Or(c.MaxHotKeys, d.MaxHotKeys)
	c.MinSamples = cmp.Or(c.MinSamples, d.MinSamples)
	c.BusyMsPerSecond = cmp.Or(c.BusyMsPerSecond, d.BusyMsPerSecond)
	c.PoolUsage = cmp.Or(c.PoolUsage, d.PoolUsage)
	c.SustainMs = cmp.Or(c.SustainMs, d.SustainMs)
	c.SkewRatio = cmp.Or(c.SkewRatio, d.SkewRatio)
	c.UnderProvisionedFraction = cmp.Or(c.UnderProvisionedFraction, d.UnderProvisionedFraction)
	c.UnderProvisionedBusy = cmp.Or(c.UnderProvisionedBusy, d.UnderProvisionedBusy)
	c.BalancedSkewScore = cmp.Or(c.BalancedSkewScore, d.BalancedSkewScore)
	c.BackPressuredMsPerSecond = cmp.Or(c.BackPressuredMsPerSecond, d.BackPressuredMsPerSecond)
	c.RotationLookbackWindows = cmp.Or(c.RotationLookbackWindows, d.RotationLookbackWindows)
	c.TargetUtilization = cmp.Or(c.TargetUtilization, d.TargetUtilization)
	c.SaltSeparator = cmp.Or(c.SaltSeparator, d.SaltSeparator)
	c.MaxSaltBuckets = cmp.Or(c.MaxSaltBuckets, d.MaxSaltBuckets)
	c.PlanMinImbalance = cmp.Or(c.PlanMinImbalance, d.PlanMinImbalance)
	c.HistoryWindows = cmp.Or(c.HistoryWindows, d.HistoryWindows)
	c.JobEndAfterMs = cmp.Or(c.JobEndAfterMs, d.JobEndAfterMs)
	c.MaxJobs = cmp.Or(c.MaxJobs, d.MaxJobs)
	c.CheckpointTimeoutMs = cmp.Or(c.CheckpointTimeoutMs, d.CheckpointTimeoutMs)
	c.CheckpointRiskFraction = cmp.Or(c.CheckpointRiskFraction, d.CheckpointRiskFraction)
	return c
}

// Validate reports every value that makes no sense. It changes nothing:
// a zero threshold is invalid here, and New fills those in first.
func (c Config) Validate() error {
	var errs []error
	bad := func(name string, v any, rule string) {
		errs = append(errs, fmt.Errorf("%s %v: %s", name, v, rule))
	}
	// within checks lo < v <= hi, rejecting NaN and infinities too.
	within := func(name string, v, lo, hi float64, unit string) {
		if math.IsNaN(v) || v <= lo || v > hi {
			bad(name, v, fmt.Sprintf("must be in (%g, %g]%s", lo, hi, unit))
		}
	}
	atLeast := func(name string, v, lo int, unit string) {
		if v < lo {
			bad(name, v, fmt.Sprintf("must be at least %d%s", lo, unit))
		}
	}
	if c.WindowMs < 1 {
		bad("window", c.WindowMs, "must be positive")
	}
	if c.TopK < 2 || c.TopK > MaxTopK {
		bad("top-k", c.TopK, fmt.Sprintf("must be in [2, %d]", MaxTopK))
	}
	within("hot-key-share", c.HotKeyShare, 0, 1, "")
	if c.HotKeyShare > 0 && c.HotKeyShare < 1/float64(c.TopK) {
		bad("hot-key-share", c.HotKeyShare, fmt.Sprintf("is below 1/top-k (%g): hot keys that small are not guaranteed to be found", 1/float64(c.TopK)))
	}
	within("hot-key-fair-share", c.HotKeyFairShare, 0, 1, " of 1/parallelism")
	if math.IsNaN(c.HotKeyConfidence) || c.HotKeyConfidence < 0.5 || c.HotKeyConfidence >= 1 {
		bad("hot-key-confidence", c.HotKeyConfidence, "must be in [0.5, 1)")
	}
	if c.HotKeyPoolWindows < 1 || c.HotKeyPoolWindows > MaxHotKeyPoolWindows {
		bad("hot-key-pool-windows", c.HotKeyPoolWindows, fmt.Sprintf("must be in [1, %d]", MaxHotKeyPoolWindows))
	}
	within("hot-key-excess-share", c.HotKeyExcessShare, 0, 1, " of the excess")
	atLeast("max-hot-keys", c.MaxHotKeys, 1, "")
	atLeast("min-samples", c.MinSamples, 1, "")
	within("busy-threshold", c.BusyMsPerSecond, 0, 1000, " ms/s")
	within("pool-usage", c.PoolUsage, 0, 1, "")
	if c.SustainMs < 1 {
		bad("sustain", c.SustainMs, "must be positive")
	}
	if math.IsNaN(c.SkewRatio) || math.IsInf(c.SkewRatio, 0) || c.SkewRatio <= 1 {
		bad("skew-ratio", c.SkewRatio, "must be above 1")
	}
	within("under-provisioned-fraction", c.UnderProvisionedFraction, 0, 1, "")
	within("under-provisioned-busy", c.UnderProvisionedBusy, 0, 1000, " ms/s")
	within("balanced-skew-score", c.BalancedSkewScore, 0, 100, "")
	within("backpressure-threshold", c.BackPressuredMsPerSecond, 0, 1000, " ms/s")
	atLeast("rotation-lookback", c.RotationLookbackWindows, 1, " window")
	within("target-utilization", c.TargetUtilization, 0, 1, "")
	atLeast("max-salt-buckets", c.MaxSaltBuckets, 2, "")
	if math.IsNaN(c.PlanMinImbalance) || math.IsInf(c.PlanMinImbalance, 0) || c.PlanMinImbalance < 1 {
		bad("plan-min-imbalance", c.PlanMinImbalance, "must be at least 1")
	}
	if c.CheckpointTimeoutMs < 1 {
		bad("checkpoint-timeout", c.CheckpointTimeoutMs, "must be positive")
	}
	within("checkpoint-risk-fraction", c.CheckpointRiskFraction, 0, 1, " of checkpoint-timeout")
	if c.JobEndAfterMs < c.WindowMs {
		bad("job-end-after", c.JobEndAfterMs, "must be at least one window")
	}
	atLeast("max-jobs", c.MaxJobs, 1, "")
	if c.HistoryWindows < c.RotationLookbackWindows || c.WindowMs >= 1 && c.SustainMs >= 1 && c.HistoryWindows < c.sustainWindows() {
		bad("history", c.HistoryWindows, "must cover rotation-lookback and sustain")
	}
	return errors.Join(errs...)
}

// sustainWindows is the number of consecutive saturated windows that
// cover SustainMs: at least one.
func (c Config) sustainWindows() int {
	return int(max((c.SustainMs+c.WindowMs-1)/c.WindowMs, 1))
}
