package simulate

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/skewlens/skewlens/skew/keygroup"
)

// Scenario names an incident the simulated job goes through.
type Scenario string

// The scenarios. Each one is a physical change to the job (its key
// distribution, a capacity, the demand); the symptoms follow from the model.
const (
	// Healthy: balanced keys, every task well below capacity.
	Healthy Scenario = "healthy"
	// HotKey: one key ("u42") carries HotShare of the records and saturates
	// the keyed subtask it routes to.
	HotKey Scenario = "hot_key"
	// RotatingHotKey: the hot key embeds a 5-minute event-time bucket
	// ("u42|<bucket start ms>"), so the saturated subtask moves when the
	// bucket changes.
	RotatingHotKey Scenario = "rotating_hot_key"
	// SlowSink: sink subtask SlowSubtask is stuck in its bulk requests and
	// runs at ~5% of its capacity; keys are balanced.
	SlowSink Scenario = "slow_sink"
	// UnderProvisioned: balanced keys, demand ~1.6x the keyed task's total
	// capacity, so every keyed subtask is saturated.
	UnderProvisioned Scenario = "under_provisioned"
	// CheckpointTimeout: demand spikes 3x for 90 s into an undersized sink;
	// the data the burst leaves queued in the network buffers makes
	// checkpoints time out until it drains.
	CheckpointTimeout Scenario = "checkpoint_timeout"
)

// Scenarios lists every scenario, in a fixed order.
func Scenarios() []Scenario {
	return []Scenario{Healthy, HotKey, RotatingHotKey, SlowSink, UnderProvisioned, CheckpointTimeout}
}

// Metric output formats (Config.MetricFormat).
const (
	FormatJSON       = "json"
	FormatInflux     = "influx"
	FormatPrometheus = "prometheus"
	FormatMixed      = "mixed"
)

// Buffer-metric naming generations (Config.Naming).
const (
	NamingLegacy  = "legacy"  // taskmanager_job_task_buffers_*
	NamingCurrent = "current" // taskmanager_job_task_Shuffle_Netty_{Input,Output}_Buffers_*
	NamingMixed   = "mixed"   // per TaskManager, deterministic
)

// Defaults, used by DefaultConfig; zero fields of a Config given to New mean these.
const (
	DefaultStart              int64 = 1593004200000 // 2020-06-24T13:10:00Z, on a 5-minute boundary
	DefaultDuration                 = 10 * time.Minute
	DefaultInterval                 = 10 * time.Second
	DefaultSourceParallelism        = 4
	DefaultParallelism              = 8
	DefaultSinkParallelism          = 4
	DefaultSlotsPerTM               = 4
	DefaultSamplesPerInterval       = 2000
	DefaultKeySpace                 = 100000
	DefaultHotShare                 = 0.35
	DefaultSlowSubtask              = 2
	DefaultJobName                  = "billing"
)

// Limits that keep a configuration within what the model (and memory) can
// sensibly handle.
const (
	MaxKeySpace           = 10_000_000
	MaxSamplesPerInterval = 10_000_000
	MinInterval           = 100 * time.Millisecond
	MaxInterval           = time.Hour
	maxTaskManagers       = 65000
	// MaxSideTasks is the most side tasks a job may have (Config.SideTasks).
	MaxSideTasks = 5
)

// Config describes one simulated run. DefaultConfig returns it with the
// defaults given in the field comments; New also reads a zero field as its
// default.
type Config struct {
	// Scenario is the incident to simulate. Default Healthy.
	Scenario Scenario
	// Seed drives every random choice (ids, noise, samples). Any value,
	// including 0, is a valid seed; the same Config gives byte-identical
	// output.
	Seed uint64
	// Start is the epoch-millisecond time of the first interval and the
	// moment the job starts (counters begin at 0). Default 1593004200000.
	Start int64
	// Duration is the simulated time. Default 10m. Only whole intervals
	// are produced (Duration/Interval of them, rounded down).
	Duration time.Duration
	// Interval is the metric reporting interval. Default 10s; at least
	// 100ms, at most 1h, a whole number of milliseconds.
	Interval time.Duration
	// SourceParallelism of "Source: kafka". Default 4.
	SourceParallelism int
	// Parallelism of the keyed task "wideReduce-toNarrow". Default 8.
	Parallelism int
	// MaxParallelism of the keyed task. Default 0: Flink's default for
	// Parallelism (keygroup.DefaultMaxParallelism), and key samples then
	// omit max_parallelism so consumers exercise the default path.
	MaxParallelism int
	// SinkParallelism of "Sink: es". Default 4.
	SinkParallelism int
	// SlotsPerTM is the number of task slots per TaskManager. Default 4.
	SlotsPerTM int
	// SamplesPerInterval is the number of key samples written per
	// interval (capped at the records the keyed task processed in it).
	// Default 2000.
	SamplesPerInterval int
	// KeySpace is the number of normal keys ("user0".."user<KeySpace-1>").
	// Default 100000.
	KeySpace int
	// HotShare is the share of records carried by the hot key in hot_key
	// and rotating_hot_key. Default 0.35; must be in (0, 1).
	HotShare float64
	// SlowSubtask is the stuck sink subtask in slow_sink. Default 2 (or
	// SinkParallelism-1 when the sink has at most 2 subtasks). Because 0
	// means the default, subtask 0 cannot be chosen.
	SlowSubtask int
	// Rate is the base demand in records/s offered by Kafka. Default 0:
	// the scenario's own default (see the package documentation).
	Rate float64
	// MetricFormat is json, influx, prometheus or mixed (each TaskManager
	// and the JobManager get a format, deterministically). Default json.
	// Key samples are always JSON.
	MetricFormat string
	// Naming selects the buffer-metric names: legacy, current or mixed
	// (per TaskManager). Default current.
	Naming string
	// OmitSubtask drops subtask_index from key samples, so consumers must
	// route keys themselves.
	OmitSubtask bool
	// JobName is the Flink job name. Default "billing".
	JobName string
	// SideTasks are the parallelisms of extra tasks on a side output of
	// the source, a chain such as "Map: audit" -> "Sink: audit-log" (at
	// most MaxSideTasks). They have ample capacity, so they are never the
	// cause of an incident, but they give a job more tasks than the three
	// of its main path, as a fleet's jobs have. Default none (nil), which
	// leaves the output exactly as without the field.
	SideTasks []int
	// NoKeySamples turns the key sampler off: the job writes metrics
	// only, as most jobs of a fleet do. Default false (it samples).
	NoKeySamples bool
}

// DefaultConfig returns a Config with every default filled in: the
// values named by the constants above, which the field comments state in
// words. Callers start from it and override what they configure.
func DefaultConfig() Config {
	return Config{
		Scenario:           Healthy,
		Start:              DefaultStart,
		Duration:           DefaultDuration,
		Interval:           DefaultInterval,
		SourceParallelism:  DefaultSourceParallelism,
		Parallelism:        DefaultParallelism,
		SinkParallelism:    DefaultSinkParallelism,
		SlotsPerTM:         DefaultSlotsPerTM,
		SamplesPerInterval: DefaultSamplesPerInterval,
		KeySpace:           DefaultKeySpace,
		HotShare:           DefaultHotShare,
		SlowSubtask:        DefaultSlowSubtask,
		MetricFormat:       FormatJSON,
		Naming:             NamingCurrent,
		JobName:            DefaultJobName,
	}
}

// withDefaults returns c with every zero field set to its value in
// DefaultConfig, except SlowSubtask, whose default is capped at the last
// sink subtask. New applies it, so a zero field means its default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.Scenario = cmp.Or(c.Scenario, d.Scenario)
	c.Start = cmp.Or(c.Start, d.Start)
	c.Duration = cmp.Or(c.Duration, d.Duration)
	c.Interval = cmp.Or(c.Interval, d.Interval)
	c.SourceParallelism = cmp.Or(c.SourceParallelism, d.SourceParallelism)
	c.Parallelism = cmp.Or(c.Parallelism, d.Parallelism)
	c.SinkParallelism = cmp.Or(c.SinkParallelism, d.SinkParallelism)
	c.SlotsPerTM = cmp.Or(c.SlotsPerTM, d.SlotsPerTM)
	c.SamplesPerInterval = cmp.Or(c.SamplesPerInterval, d.SamplesPerInterval)
	c.KeySpace = cmp.Or(c.KeySpace, d.KeySpace)
	c.HotShare = cmp.Or(c.HotShare, d.HotShare)
	c.SlowSubtask = cmp.Or(c.SlowSubtask, min(d.SlowSubtask, c.SinkParallelism-1))
	c.MetricFormat = cmp.Or(c.MetricFormat, d.MetricFormat)
	c.Naming = cmp.Or(c.Naming, d.Naming)
	c.JobName = cmp.Or(c.JobName, d.JobName)
	return c
}

// Validate rejects configurations that make no sense, reporting the first
// problem. It changes nothing; New fills the zero fields with their
// defaults before it validates.
func (c Config) Validate() error {
	if !slices.Contains(Scenarios(), c.Scenario) {
		return fmt.Errorf("simulate: unknown scenario %q (want one of %v)", c.Scenario, Scenarios())
	}
	if c.Start < 0 {
		return fmt.Errorf("simulate: Start %d: must be a positive epoch-millisecond time", c.Start)
	}
	if c.Interval < MinInterval || c.Interval > MaxInterval || c.Interval%time.Millisecond != 0 {
		return fmt.Errorf("simulate: Interval %v: must be a whole number of milliseconds in [%v, %v]", c.Interval, MinInterval, MaxInterval)
	}
	if c.Duration < c.Interval {
		return fmt.Errorf("simulate: Duration %v: must be at least one Interval (%v)", c.Duration, c.Interval)
	}
	for _, p := range []struct {
		name string
		v    int
	}{
		{"SourceParallelism", c.SourceParallelism},
		{"Parallelism", c.Parallelism},
		{"SinkParallelism", c.SinkParallelism},
		{"SlotsPerTM", c.SlotsPerTM},
	} {
		if p.v < 1 || p.v > keygroup.UpperBoundMaxParallelism {
			return fmt.Errorf("simulate: %s %d: must be in [1, %d]", p.name, p.v, keygroup.UpperBoundMaxParallelism)
		}
	}
	if len(c.SideTasks) > MaxSideTasks {
		return fmt.Errorf("simulate: %d SideTasks: at most %d", len(c.SideTasks), MaxSideTasks)
	}
	for i, p := range c.SideTasks {
		if p < 1 || p > keygroup.UpperBoundMaxParallelism {
			return fmt.Errorf("simulate: SideTasks[%d] %d: must be in [1, %d]", i, p, keygroup.UpperBoundMaxParallelism)
		}
	}
	if c.MaxParallelism < 0 {
		return fmt.Errorf("simulate: MaxParallelism %d: must not be negative (0 means Flink's default)", c.MaxParallelism)
	}
	if _, err := keygroup.NewRouter(c.Parallelism, c.MaxParallelism); err != nil {
		return fmt.Errorf("simulate: keyed task: %w", err)
	}
	slots := max(c.SourceParallelism, c.Parallelism, c.SinkParallelism)
	for _, p := range c.SideTasks {
		slots = max(slots, p)
	}
	if tms := (slots + c.SlotsPerTM - 1) / c.SlotsPerTM; tms > maxTaskManagers {
		return fmt.Errorf("simulate: %d TaskManagers needed: at most %d supported (raise SlotsPerTM)", tms, maxTaskManagers)
	}
	if c.SamplesPerInterval < 1 || c.SamplesPerInterval > MaxSamplesPerInterval {
		return fmt.Errorf("simulate: SamplesPerInterval %d: must be in [1, %d]", c.SamplesPerInterval, MaxSamplesPerInterval)
	}
	if c.KeySpace < 1 || c.KeySpace > MaxKeySpace {
		return fmt.Errorf("simulate: KeySpace %d: must be in [1, %d]", c.KeySpace, MaxKeySpace)
	}
	if !(c.HotShare > 0 && c.HotShare < 1) { // also rejects NaN
		return fmt.Errorf("simulate: HotShare %v: must be in (0, 1)", c.HotShare)
	}
	if c.SlowSubtask < 0 || c.SlowSubtask >= c.SinkParallelism {
		return fmt.Errorf("simulate: SlowSubtask %d: must be a sink subtask index in [0, %d) (SinkParallelism %d)", c.SlowSubtask, c.SinkParallelism, c.SinkParallelism)
	}
	if c.Scenario == SlowSink && c.SinkParallelism < 2 {
		return errors.New("simulate: slow_sink needs SinkParallelism >= 2: with one sink subtask a stuck subtask is indistinguishable from an undersized sink")
	}
	if math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) || c.Rate < 0 {
		return fmt.Errorf("simulate: Rate %v: must be a finite number >= 0 (0 means the scenario default)", c.Rate)
	}
	switch c.MetricFormat {
	case FormatJSON, FormatInflux, FormatPrometheus, FormatMixed:
	default:
		return fmt.Errorf("simulate: MetricFormat %q: want json, influx, prometheus or mixed", c.MetricFormat)
	}
	switch c.Naming {
	case NamingLegacy, NamingCurrent, NamingMixed:
	default:
		return fmt.Errorf("simulate: Naming %q: want legacy, current or mixed", c.Naming)
	}
	if !utf8.ValidString(c.JobName) {
		return fmt.Errorf("simulate: JobName %q: not valid UTF-8", c.JobName)
	}
	if strings.HasSuffix(c.JobName, `\`) {
		return fmt.Errorf("simulate: JobName %q: a trailing backslash would escape the next separator in the influx line protocol", c.JobName)
	}
	for _, r := range c.JobName {
		if unicode.IsControl(r) {
			return fmt.Errorf("simulate: JobName %q: control characters cannot be carried by the influx line protocol", c.JobName)
		}
	}
	return nil
}

// intervals is the number of reporting intervals of a validated Config.
func (c *Config) intervals() int { return int(c.Duration / c.Interval) }
