package simulate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/skewlens/skewlens/internal/knob"
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

// Limits that keep a configuration within what the model (and memory) can
// sensibly handle; the others are the range bounds of Config's tags.
const (
	maxTaskManagers = 65000
	// MaxSideTasks is the most side tasks a job may have (Config.SideTasks).
	MaxSideTasks = 5
)

// Config describes one simulated run. Its tags declare each setting once
// (internal/knob): DefaultConfig and Validate read them, and skewlens
// simulate binds the fields with a name as its flags. New also reads a
// zero field as its default.
type Config struct {
	// Scenario is the incident to simulate.
	Scenario Scenario `kong:"-" default:"healthy" zero:"default"`
	// Seed drives every random choice (ids, noise, samples). Any value,
	// including 0, is a valid seed; the same Config gives byte-identical
	// output.
	Seed uint64 `kong:"-"`
	// Start is the epoch-millisecond time of the first interval and the
	// moment the job starts (counters begin at 0). The default is
	// 2020-06-24T13:10:00Z, on a 5-minute boundary.
	Start int64 `name:"start" default:"1593004200000" range:"[1,]" help:"Epoch milliseconds of the first report."`
	// Duration is the simulated time. Only whole intervals are produced
	// (Duration/Interval of them, rounded down).
	Duration time.Duration `name:"duration" default:"10m" range:"(0s,]" help:"Simulated time."`
	// Interval is the metric reporting interval, a whole number of
	// milliseconds.
	Interval time.Duration `name:"interval" default:"10s" range:"[100ms,1h]" help:"Metric reporting interval."`
	// Parallelism of the keyed task "wideReduce-toNarrow".
	Parallelism int `name:"parallelism" short:"p" default:"8" range:"[1,${max_parallelism}]" help:"Parallelism of the keyed task."`
	// MaxParallelism of the keyed task. 0: Flink's default for
	// Parallelism (keygroup.DefaultMaxParallelism), and key samples then
	// omit max_parallelism so consumers exercise the default path.
	MaxParallelism int `name:"max-parallelism" short:"m" placeholder:"KEY_GROUPS" range:"[0,${max_parallelism}]" help:"Max parallelism of the keyed task (default: Flink's default for the parallelism)."`
	// SourceParallelism of "Source: kafka".
	SourceParallelism int `name:"source-parallelism" default:"4" range:"[1,${max_parallelism}]" help:"Parallelism of the source."`
	// SinkParallelism of "Sink: es".
	SinkParallelism int `name:"sink-parallelism" default:"4" range:"[1,${max_parallelism}]" help:"Parallelism of the sink."`
	// SlotsPerTM is the number of task slots per TaskManager.
	SlotsPerTM int `kong:"-" default:"4" range:"[1,${max_parallelism}]"`
	// SamplesPerInterval is the number of key samples written per
	// interval (capped at the records the keyed task processed in it).
	SamplesPerInterval int `name:"samples-per-interval" default:"2000" range:"[1,10000000]" help:"Key samples per reporting interval."`
	// KeySpace is the number of normal keys ("user0".."user<KeySpace-1>").
	KeySpace int `name:"key-space" default:"100000" range:"[1,10000000]" help:"Number of normal keys."`
	// HotShare is the share of records carried by the hot key in hot_key
	// and rotating_hot_key.
	HotShare float64 `name:"hot-share" default:"0.35" range:"(0,1)" help:"Share of records on the hot key (hot_key, rotating_hot_key)."`
	// SlowSubtask is the stuck sink subtask in slow_sink, a sink subtask
	// index. Because 0 means the default, subtask 0 cannot be chosen; the
	// default is capped at SinkParallelism-1, so with one sink subtask it
	// is 0.
	SlowSubtask int `name:"slow-subtask" default:"2" zero:"default" range:"[0,${max_subtask}]" help:"The stuck sink subtask (slow_sink)."`
	// Rate is the base demand in records/s offered by Kafka. 0: the
	// scenario's own default (see the package documentation).
	Rate float64 `name:"rate" placeholder:"RECORDS_PER_S" range:"[0,]" help:"Demand in records/s (default: the scenario's own)."`
	// MetricFormat is json, influx, prometheus or mixed (each TaskManager
	// and the JobManager get a format, deterministically). Key samples
	// are always JSON. skewlens simulate has a flag of its own, whose
	// default is mixed.
	MetricFormat string `kong:"-" default:"json" zero:"default"`
	// Naming selects the buffer-metric names: legacy, current or mixed
	// (per TaskManager). skewlens simulate has a flag of its own, whose
	// default is mixed.
	Naming string `kong:"-" default:"current" zero:"default"`
	// OmitSubtask drops subtask_index from key samples, so consumers must
	// route keys themselves.
	OmitSubtask bool `name:"omit-subtask" help:"Leave subtask_index out of key samples, so readers must route keys themselves."`
	// JobName is the Flink job name.
	JobName string `name:"job-name" default:"billing" range:"[1,]" help:"Flink job name."`
	// SideTasks are the parallelisms of extra tasks on a side output of
	// the source, a chain such as "Map: audit" -> "Sink: audit-log".
	// They have ample capacity, so they are never the cause of an
	// incident, but they give a job more tasks than the three of its
	// main path, as a fleet's jobs have. None (nil) leaves the output
	// exactly as without the field.
	SideTasks []int `kong:"-" range:"[0,${max_side_tasks}]"`
	// NoKeySamples turns the key sampler off: the job writes metrics
	// only, as most jobs of a fleet do.
	NoKeySamples bool `kong:"-"`
	// Slowdown, with the checkpoint_timeout scenario only, replaces its
	// demand burst by a sink that slows step by step (and may recover):
	// checkpoints then creep towards the timeout rather than jump to it.
	// Nil leaves the output exactly as without the field.
	Slowdown *Slowdown `kong:"-"`
	// CheckpointInterval and CheckpointTimeout are the job's
	// execution.checkpointing.interval and execution.checkpointing.timeout.
	CheckpointInterval time.Duration `kong:"-" default:"30s" range:"[1s,1h]"`
	CheckpointTimeout  time.Duration `kong:"-" default:"60s" range:"[1s,1h]"`
	// CheckpointDetail makes the JobManager also report
	// numberOfCompletedCheckpoints and lastCheckpointSize, as Flink's
	// reporters do. Off (the default) leaves the output exactly as without
	// the field.
	CheckpointDetail bool `kong:"-"`
}

// Slowdown is a sink that slows step by step: from At after Start, every
// Every, each sink subtask keeps Factor of its capacity, Steps times; from
// RecoverAt after Start (when it is set) it has its whole capacity back.
// Jitter is the relative noise of the slowed capacity, drawn once per
// interval for the whole sink (its backend speeds up and slows down for
// every writer at once). The demand stays at the scenario's base rate, so
// once the sink's capacity falls below it the sink saturates, the backlog
// in its buffers grows, and every checkpoint barrier waits longer behind
// it, until checkpoints time out or the sink recovers.
type Slowdown struct {
	At        time.Duration
	Every     time.Duration
	Factor    float64
	Steps     int
	RecoverAt time.Duration
	Jitter    float64
}

// validate checks a Slowdown against the run's configuration.
func (s *Slowdown) validate(c *Config) error {
	switch {
	case c.Scenario != CheckpointTimeout:
		return fmt.Errorf("simulate: Slowdown: only with the %s scenario, not %s", CheckpointTimeout, c.Scenario)
	case s.At < 0 || s.Every <= 0 || s.RecoverAt < 0:
		return fmt.Errorf("simulate: Slowdown: At %v and RecoverAt %v must not be negative, Every %v must be positive", s.At, s.RecoverAt, s.Every)
	case !(s.Factor > 0 && s.Factor < 1):
		return fmt.Errorf("simulate: Slowdown: Factor %g: must be in (0,1)", s.Factor)
	case s.Steps < 1 || s.Steps > 1000:
		return fmt.Errorf("simulate: Slowdown: Steps %d: must be in [1,1000]", s.Steps)
	case !(s.Jitter >= 0 && s.Jitter < 0.5):
		return fmt.Errorf("simulate: Slowdown: Jitter %g: must be in [0,0.5)", s.Jitter)
	case s.RecoverAt > 0 && s.RecoverAt <= s.At:
		return fmt.Errorf("simulate: Slowdown: RecoverAt %v: must come after At %v", s.RecoverAt, s.At)
	}
	return nil
}

// capacity is the share of its capacity the sink keeps at time t (epoch
// ms) of a run that started at start, before jitter.
func (s *Slowdown) capacity(start, t int64) float64 {
	el := time.Duration(t-start) * time.Millisecond
	if el < s.At || s.RecoverAt > 0 && el >= s.RecoverAt {
		return 1
	}
	steps := min(s.Steps, int((el-s.At)/s.Every)+1)
	return math.Pow(s.Factor, float64(steps))
}

// KnobVars gives the range bounds the tags name.
func (Config) KnobVars() map[string]string {
	return map[string]string{
		"max_parallelism": strconv.Itoa(keygroup.UpperBoundMaxParallelism),
		"max_subtask":     strconv.Itoa(keygroup.UpperBoundMaxParallelism - 1),
		"max_side_tasks":  strconv.Itoa(MaxSideTasks),
	}
}

// DefaultConfig returns the defaults the tags declare. Callers start from
// it and override what they configure.
func DefaultConfig() Config { return knob.Defaults[Config]() }

// withDefaults returns c with every zero field set to its default, the
// default SlowSubtask capped at the last sink subtask. New applies it, so
// a zero field means its default.
func (c Config) withDefaults() Config {
	slowDefault := c.SlowSubtask == 0
	knob.FillZero(&c)
	if slowDefault {
		c.SlowSubtask = min(c.SlowSubtask, c.SinkParallelism-1)
	}
	return c
}

// Validate rejects configurations that make no sense: every value out of
// its range, or else the first rule between fields that fails. It
// changes nothing; New fills the zero fields with their defaults before
// it validates.
func (c Config) Validate() error {
	if err := knob.Check(c); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	if !slices.Contains(Scenarios(), c.Scenario) {
		return fmt.Errorf("simulate: unknown scenario %q (want one of %v)", c.Scenario, Scenarios())
	}
	if c.Interval%time.Millisecond != 0 {
		return fmt.Errorf("simulate: Interval %v: must be a whole number of milliseconds", c.Interval)
	}
	if c.Duration < c.Interval {
		return fmt.Errorf("simulate: Duration %v: must be at least one Interval (%v)", c.Duration, c.Interval)
	}
	for i, p := range c.SideTasks {
		if p < 1 || p > keygroup.UpperBoundMaxParallelism {
			return fmt.Errorf("simulate: SideTasks[%d] %d: must be in [1, %d]", i, p, keygroup.UpperBoundMaxParallelism)
		}
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
	if c.SlowSubtask >= c.SinkParallelism {
		return fmt.Errorf("simulate: SlowSubtask %d: must be a sink subtask index in [0, %d) (SinkParallelism %d)", c.SlowSubtask, c.SinkParallelism, c.SinkParallelism)
	}
	if c.Scenario == SlowSink && c.SinkParallelism < 2 {
		return errors.New("simulate: slow_sink needs SinkParallelism >= 2: with one sink subtask a stuck subtask is indistinguishable from an undersized sink")
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
	if c.CheckpointInterval%time.Millisecond != 0 || c.CheckpointTimeout%time.Millisecond != 0 {
		return fmt.Errorf("simulate: CheckpointInterval %v and CheckpointTimeout %v: must be whole numbers of milliseconds", c.CheckpointInterval, c.CheckpointTimeout)
	}
	if c.Slowdown != nil {
		if err := c.Slowdown.validate(&c); err != nil {
			return err
		}
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
