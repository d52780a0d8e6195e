package simulate

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/skew/keygroup"
)

// A fleet is many simulated jobs of varied shapes played side by side, as
// one skewlens instance would watch a platform team's Flink jobs: most of
// them healthy and reporting metrics only, a few with an incident and the
// key samples their keyed task needs.

// Bounds of a fleet (FleetConfig).
const (
	// FleetMinTasks and FleetMaxTasks bound a fleet job's tasks: the three
	// of the main path and up to MaxSideTasks side tasks.
	FleetMinTasks = 3
	FleetMaxTasks = 3 + MaxSideTasks
	// incidentMinParallelism is the smallest keyed parallelism of a job
	// with an incident: with fewer subtasks a skewed, a slow and an
	// undersized task look alike, so the ground truth would be ambiguous.
	incidentMinParallelism = 4
)

// FleetConfig describes a fleet. Its tags declare each setting once
// (internal/knob); skewlens simulate and demo bind the fields with a name
// as their fleet flags. NewFleet reads a zero field as its default,
// except Jobs and Subtasks, of which exactly one must be set.
type FleetConfig struct {
	// Seed drives every choice: the jobs' shapes, where the incidents go
	// and each job's own seed. The same FleetConfig gives byte-identical
	// output.
	Seed uint64 `kong:"-"`
	// Jobs is the number of jobs. Either Jobs or Subtasks is set. The
	// bound, as Subtasks's, keeps a fleet within what one process can
	// hold (about 1 KB of state per subtask).
	Jobs int `name:"jobs" group:"Fleet" placeholder:"JOBS" range:"[0,${fleet_max_jobs}]" help:"Play a fleet of this many jobs of varied shapes instead of one scenario: parallelism 1 to --fleet-max-parallelism (log-uniform, about 165 subtasks per job on average), 3-8 tasks, influx, prometheus or json metrics. --seed, --start, --duration, --interval and --samples-per-interval apply to every job; the flags that shape one job (--parallelism to --naming) do not. 0: no fleet unless --subtasks."`
	// Subtasks, when Jobs is 0, adds jobs until the fleet has at least
	// this many subtasks (it overshoots by less than one job).
	Subtasks int `name:"subtasks" group:"Fleet" placeholder:"SUBTASKS" range:"[0,10000000]" help:"Play a fleet of jobs drawn until it has at least this many subtasks (100000: about 610 jobs); 0: no fleet unless --jobs."`
	// Incidents is the number of jobs with an incident (hot_key,
	// rotating_hot_key, slow_sink, under_provisioned, checkpoint_timeout,
	// in a random order, repeated when there are more than five), placed
	// on jobs drawn at random; at most the number of jobs. 0 means the
	// default, a negative value none (the command line reads its 0 as
	// none, and passes -1).
	Incidents int `name:"incidents" group:"Fleet" default:"5" zero:"default" range:"[,${fleet_max_jobs}]" help:"Jobs of the fleet with an incident (hot_key, rotating_hot_key, slow_sink, under_provisioned, checkpoint_timeout, in a random order), placed at random; 0: none."`
	// Start, Duration and Interval are every job's (Config), with its
	// defaults.
	Start    int64         `kong:"-"`
	Duration time.Duration `kong:"-"`
	Interval time.Duration `kong:"-"`
	// MaxParallelism is the largest parallelism of a task; a job's
	// parallelism is drawn log-uniformly in [1, MaxParallelism] (median
	// about its square root), its tasks take it or less.
	MaxParallelism int `name:"fleet-max-parallelism" group:"Fleet" default:"200" range:"[${fleet_min_parallelism},${max_parallelism}]" help:"Largest parallelism of a fleet job's task."`
	// SampledTasks is the share of the fleet's tasks that write key
	// samples (a job's keyed task, drawn per job so that this share of all
	// tasks results); the hot-key incidents always sample.
	SampledTasks float64 `name:"sampled-tasks" group:"Fleet" default:"0.05" range:"(0,1]" help:"Share of the fleet's tasks that write key samples (a job's keyed task; the hot-key incidents always do); the others write metrics only."`
	// SamplesPerInterval is a sampled job's key samples per interval, with
	// Config's default.
	SamplesPerInterval int `kong:"-"`
}

// KnobVars gives the range bounds the tags name.
func (FleetConfig) KnobVars() map[string]string {
	return map[string]string{
		"fleet_max_jobs":        "1000000",
		"fleet_min_parallelism": strconv.Itoa(incidentMinParallelism),
		"max_parallelism":       strconv.Itoa(keygroup.UpperBoundMaxParallelism),
	}
}

// DefaultFleetConfig returns a FleetConfig with every default filled in
// but Jobs and Subtasks, one of which the caller sets: the defaults its
// tags declare, and a job's (DefaultConfig) for the jobs' fields.
func DefaultFleetConfig() FleetConfig {
	return FleetConfig{}.withDefaults()
}

// withDefaults returns c with every zero field set to its default; the
// jobs' fields take a job's (Config.withDefaults).
func (c FleetConfig) withDefaults() FleetConfig {
	knob.FillZero(&c)
	job := Config{Start: c.Start, Duration: c.Duration, Interval: c.Interval, SamplesPerInterval: c.SamplesPerInterval}.withDefaults()
	c.Start, c.Duration, c.Interval, c.SamplesPerInterval = job.Start, job.Duration, job.Interval, job.SamplesPerInterval
	return c
}

// Validate reports every invalid field; it changes nothing (NewFleet and
// FleetJobs fill the zero fields with their defaults first).
func (c FleetConfig) Validate() error {
	errs := []error{knob.Check(c)}
	if (c.Jobs == 0) == (c.Subtasks == 0) {
		errs = append(errs, fmt.Errorf("Jobs %d, Subtasks %d: set exactly one", c.Jobs, c.Subtasks))
	}
	// The jobs' own fields are checked as one job's Config would be.
	job := Config{Start: c.Start, Duration: c.Duration, Interval: c.Interval, SamplesPerInterval: c.SamplesPerInterval}.withDefaults()
	if err := job.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("simulate fleet: %w", err)
	}
	return nil
}

// incidentScenarios are the scenarios a fleet places, in a fixed order
// that the fleet's seed permutes.
var incidentScenarios = [...]Scenario{HotKey, RotatingHotKey, SlowSink, UnderProvisioned, CheckpointTimeout}

// splitmix64 derives independent seeds (a job's, a stream's) from one.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// FleetJobs returns the Config of every job of the fleet, in a fixed
// order, without building any generator: shapes are drawn job by job from
// the fleet's seed, so the first jobs of a larger fleet with the same seed
// have the same shapes; then the incidents are placed.
func FleetJobs(cfg FleetConfig) ([]Config, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x3c6ef372fe94f82b))
	var jobs []Config
	subtasks := 0
	for j := 0; cfg.Jobs > 0 && j < cfg.Jobs || cfg.Jobs == 0 && subtasks < cfg.Subtasks; j++ {
		jc := fleetJob(r, &cfg, j)
		jobs = append(jobs, jc)
		subtasks += jobSubtasks(&jc)
	}
	// Incidents go to jobs drawn at random, each scenario in turn from a
	// permuted order; their jobs get the shape the incident needs.
	ri := rand.New(rand.NewPCG(cfg.Seed, 0xa54ff53a5f1d36f1))
	n := min(max(cfg.Incidents, 0), len(jobs))
	order := incidentScenarios
	ri.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	for k, j := range ri.Perm(len(jobs))[:n] {
		jc := &jobs[j]
		jc.Scenario = order[k%len(order)]
		jc.Parallelism = max(jc.Parallelism, incidentMinParallelism)
		jc.SinkParallelism = max(jc.SinkParallelism, 2)
		jc.KeySpace = fleetKeySpace(jc.Parallelism)
		if jc.Scenario == SlowSink {
			jc.SlowSubtask = 1 + ri.IntN(jc.SinkParallelism-1)
		}
		if jc.Scenario == HotKey || jc.Scenario == RotatingHotKey {
			jc.NoKeySamples = false
		}
	}
	return jobs, nil
}

// fleetKeySpace scales the key population with the keyed parallelism (a
// thousand keys per subtask, at most Config's default KeySpace): enough
// for shares within a few percent of each other, without a generator of
// 100000 keys for a job of parallelism 1.
func fleetKeySpace(p int) int { return min(defaultKeySpace(), 1000*p) }

// defaultKeySpace is Config's default KeySpace, read once.
var defaultKeySpace = sync.OnceValue(func() int { return DefaultConfig().KeySpace })

// fleetJob draws the shape of job j.
func fleetJob(r *rand.Rand, cfg *FleetConfig, j int) Config {
	// Log-uniform in [1, MaxParallelism]: many small jobs, a few large.
	p := min(cfg.MaxParallelism, int(math.Exp(r.Float64()*math.Log(float64(cfg.MaxParallelism)+1))))
	p = max(p, 1)
	// Operators take the job's default parallelism, or one set lower (a
	// source with fewer Kafka partitions, a sink limited by its target).
	orLess := func(keep float64) int {
		if r.Float64() < keep {
			return p
		}
		return 1 + r.IntN(p)
	}
	jc := Config{
		Scenario: Healthy, Seed: splitmix64(cfg.Seed ^ splitmix64(uint64(j))),
		Start: cfg.Start, Duration: cfg.Duration, Interval: cfg.Interval,
		Parallelism: p, SourceParallelism: orLess(0.5), SinkParallelism: orLess(0.5),
		SamplesPerInterval: cfg.SamplesPerInterval, KeySpace: fleetKeySpace(p),
		MetricFormat: [...]string{FormatInflux, FormatPrometheus, FormatJSON}[r.IntN(3)],
		Naming:       [...]string{NamingLegacy, NamingCurrent, NamingMixed}[r.IntN(3)],
		JobName:      "fleet-" + strconv.Itoa(j),
	}
	for range r.IntN(MaxSideTasks + 1) {
		jc.SideTasks = append(jc.SideTasks, orLess(0.7))
	}
	// A job samples its keyed task with a probability that makes
	// SampledTasks of all tasks sampled.
	jc.NoKeySamples = r.Float64() >= cfg.SampledTasks*float64(FleetMinTasks+len(jc.SideTasks))
	return jc
}

func jobSubtasks(c *Config) int {
	n := c.SourceParallelism + c.Parallelism + c.SinkParallelism
	for _, p := range c.SideTasks {
		n += p
	}
	return n
}

// Fleet plays the jobs of a FleetConfig side by side, interval by
// interval. It holds one Generator per job (about 1 KB per subtask), never
// the output: WriteTo streams it. A Fleet is not safe for concurrent use.
type Fleet struct {
	jobs []Config
	gens []*Generator
}

// NewFleet draws the fleet's jobs (FleetJobs) and builds their
// generators.
func NewFleet(cfg FleetConfig) (*Fleet, error) {
	jobs, err := FleetJobs(cfg)
	if err != nil {
		return nil, err
	}
	f := &Fleet{jobs: jobs, gens: make([]*Generator, len(jobs))}
	for i, jc := range jobs {
		if f.gens[i], err = New(jc); err != nil {
			return nil, fmt.Errorf("simulate fleet: job %d (%s): %w", i, jc.JobName, err)
		}
	}
	return f, nil
}

// Jobs returns every job's configuration, defaults filled in, in fleet
// order.
func (f *Fleet) Jobs() []Config {
	out := make([]Config, len(f.gens))
	for i, g := range f.gens {
		out[i] = g.Config()
	}
	return out
}

// Truths returns every job's ground truth, in fleet order (healthy jobs
// included, with CauseNone).
func (f *Fleet) Truths() []Truth {
	out := make([]Truth, len(f.gens))
	for i, g := range f.gens {
		out[i] = g.Truth()
	}
	return out
}

// Subtasks is the number of subtasks in the fleet.
func (f *Fleet) Subtasks() int {
	n := 0
	for i := range f.jobs {
		n += jobSubtasks(&f.jobs[i])
	}
	return n
}

// Tasks is the number of tasks in the fleet and how many of them write
// key samples.
func (f *Fleet) Tasks() (tasks, sampled int) {
	for i := range f.jobs {
		tasks += FleetMinTasks + len(f.jobs[i].SideTasks)
		if !f.jobs[i].NoKeySamples {
			sampled++
		}
	}
	return tasks, sampled
}

// WriteTo writes every remaining interval of every job to w: interval n of
// each job in fleet order, then interval n+1. Every line of interval n
// lies in [Start+n*Interval, Start+(n+1)*Interval), so with windows of at
// least the interval, aligned to it, no line falls into a window an
// earlier line closed. Memory is one job's interval at a time.
func (f *Fleet) WriteTo(w io.Writer) (int64, error) {
	var total int64
	var buf []byte
	for {
		more := false
		for _, g := range f.gens {
			var ok bool
			buf, ok = g.Next(buf[:0])
			if !ok {
				continue
			}
			more = true
			n, err := w.Write(buf)
			total += int64(n)
			if err != nil {
				return total, err
			}
		}
		if !more {
			return total, nil
		}
	}
}
