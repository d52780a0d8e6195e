package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/skew/keygroup"
)

type simulateCmd struct {
	Scenario           string        `arg:"" optional:"" help:"Incident to simulate: ${sim_scenarios}; none with --jobs or --subtasks."`
	Output             string        `short:"o" default:"-" placeholder:"FILE" help:"Where to write the lines; '-' is standard output."`
	Seed               uint64        `default:"1" help:"Seed for every random choice, any unsigned 64-bit number; the same flags give byte-identical output."`
	Start              int64         `default:"${sim_start}" help:"Epoch milliseconds of the first report." range:"[1,]"`
	Duration           time.Duration `default:"${sim_duration}" help:"Simulated time." range:"(0s,]"`
	Interval           time.Duration `default:"${sim_interval}" help:"Metric reporting interval." range:"[${sim_min_interval},${sim_max_interval}]"`
	Parallelism        int           `short:"p" default:"${sim_parallelism}" help:"Parallelism of the keyed task." range:"[1,${max_parallelism}]"`
	MaxParallelism     int           `short:"m" placeholder:"KEY_GROUPS" help:"Max parallelism of the keyed task (default: Flink's default for the parallelism)." range:"[0,${max_parallelism}]"`
	SourceParallelism  int           `default:"${sim_source_parallelism}" help:"Parallelism of the source." range:"[1,${max_parallelism}]"`
	SinkParallelism    int           `default:"${sim_sink_parallelism}" help:"Parallelism of the sink." range:"[1,${max_parallelism}]"`
	SamplesPerInterval int           `default:"${sim_samples}" help:"Key samples per reporting interval." range:"[1,${sim_max_samples}]"`
	KeySpace           int           `default:"${sim_key_space}" help:"Number of normal keys." range:"[1,${sim_max_key_space}]"`
	HotShare           float64       `default:"${sim_hot_share}" help:"Share of records on the hot key (hot_key, rotating_hot_key)." range:"(0,1)"`
	SlowSubtask        int           `default:"${sim_slow_subtask}" help:"The stuck sink subtask (slow_sink)." range:"[1,${max_subtask}]"`
	Rate               float64       `placeholder:"RECORDS_PER_S" help:"Demand in records/s (default: the scenario's own)." range:"[0,]"`
	MetricFormat       string        `enum:"json,influx,prometheus,mixed" default:"mixed" help:"Metric line format: ${enum} (mixed: one per TaskManager)."`
	Naming             string        `enum:"legacy,current,mixed" default:"mixed" help:"Buffer metric names: ${enum}."`
	OmitSubtask        bool          `help:"Leave subtask_index out of key samples, so readers must route keys themselves."`
	JobName            string        `default:"${sim_job_name}" help:"Flink job name." range:"[1,]"`
	fleetFlags
	Truth string `group:"Fleet" placeholder:"FILE" help:"Write the fleet's ground truth to FILE: one JSON object per job (simulate.Truth: job_id, scenario, cause, task, subtask, hot keys, time span), healthy jobs included ('-': standard error)."`
}

// fleetFlags play a fleet of jobs instead of one scenario (simulate, and
// run with --simulate fleet). With them, the flags that shape one job
// (--parallelism to --job-name) do not apply: the fleet draws each job's
// shape from --seed.
type fleetFlags struct {
	Jobs                int     `group:"Fleet" placeholder:"JOBS" help:"Play a fleet of this many jobs of varied shapes instead of one scenario: parallelism 1 to --fleet-max-parallelism (log-uniform, about 165 subtasks per job on average), 3-8 tasks, influx, prometheus or json metrics. --seed, --start, --duration, --interval and --samples-per-interval apply to every job; the flags that shape one job (--parallelism to --omit-subtask, --job-name) do not. 0: no fleet unless --subtasks." range:"[0,${fleet_max_jobs}]"`
	Subtasks            int     `group:"Fleet" placeholder:"SUBTASKS" help:"Play a fleet of jobs drawn until it has at least this many subtasks (100000: about 610 jobs); 0: no fleet unless --jobs." range:"[0,${fleet_max_subtasks}]"`
	Incidents           int     `group:"Fleet" default:"${fleet_incidents}" help:"Jobs of the fleet with an incident (hot_key, rotating_hot_key, slow_sink, under_provisioned, checkpoint_timeout, in a random order), placed at random; 0: none." range:"[0,${fleet_max_jobs}]"`
	FleetMaxParallelism int     `group:"Fleet" default:"${fleet_max_parallelism}" help:"Largest parallelism of a fleet job's task." range:"[4,${max_parallelism}]"`
	SampledTasks        float64 `group:"Fleet" default:"${fleet_sampled_tasks}" help:"Share of the fleet's tasks that write key samples (a job's keyed task; the hot-key incidents always do); the others write metrics only." range:"(0,1]"`
}

// fleet reports whether the flags ask for a fleet.
func (f *fleetFlags) fleet() bool { return f.Jobs > 0 || f.Subtasks > 0 }

// fleetConfig returns the fleet's configuration; start, duration,
// interval and samples are the job flags' (simulate) or run's own.
func (f *fleetFlags) fleetConfig(seed uint64, start int64, duration, interval time.Duration, samples int) simulate.FleetConfig {
	cfg := simulate.DefaultFleetConfig()
	cfg.Seed, cfg.Jobs, cfg.Subtasks = seed, f.Jobs, f.Subtasks
	cfg.Incidents = f.Incidents
	if f.Incidents == 0 {
		cfg.Incidents = -1 // none; FleetConfig reads 0 as its default
	}
	cfg.Start, cfg.Duration, cfg.Interval, cfg.SamplesPerInterval = start, duration, interval, samples
	cfg.MaxParallelism, cfg.SampledTasks = f.FleetMaxParallelism, f.SampledTasks
	return cfg
}

// checkFleet checks the rules between the fleet flags.
func (f *fleetFlags) checkFleet() error {
	if f.Jobs > 0 && f.Subtasks > 0 {
		return fmt.Errorf("--jobs %d, --subtasks %d: give one of them", f.Jobs, f.Subtasks)
	}
	return nil
}

// Validate is kong's check of the scenario argument, which is optional (a
// fleet has none) and so cannot be a kong enum: a name that is not a
// scenario is a usage error, as an enum's would be.
func (c *simulateCmd) Validate() error {
	if c.Scenario == "" || slices.Contains(simulate.Scenarios(), simulate.Scenario(c.Scenario)) {
		return nil
	}
	var quoted []string
	for _, sc := range simulate.Scenarios() {
		quoted = append(quoted, strconv.Quote(string(sc)))
	}
	return fmt.Errorf("<scenario> must be one of %s but got %q", strings.Join(quoted, ","), c.Scenario)
}

// config returns simulate.DefaultConfig with the values of the flags.
func (c *simulateCmd) config() simulate.Config {
	cfg := simulate.DefaultConfig()
	cfg.Scenario, cfg.Seed, cfg.Start, cfg.Duration = simulate.Scenario(c.Scenario), c.Seed, c.Start, c.Duration
	cfg.Interval, cfg.SourceParallelism, cfg.Parallelism = c.Interval, c.SourceParallelism, c.Parallelism
	cfg.MaxParallelism, cfg.SinkParallelism = c.MaxParallelism, c.SinkParallelism
	cfg.SamplesPerInterval, cfg.KeySpace, cfg.HotShare = c.SamplesPerInterval, c.KeySpace, c.HotShare
	cfg.SlowSubtask, cfg.Rate, cfg.MetricFormat, cfg.Naming = c.SlowSubtask, c.Rate, c.MetricFormat, c.Naming
	cfg.OmitSubtask, cfg.JobName = c.OmitSubtask, c.JobName
	return cfg
}

// check is called before Run (checkCommand): the rules between flags,
// then simulate's own Validate.
func (c *simulateCmd) check() error {
	if err := c.checkFleet(); err != nil {
		return err
	}
	switch {
	case c.fleet() && c.Scenario != "":
		return fmt.Errorf("scenario %s with --jobs or --subtasks: a fleet places its incidents itself (--incidents)", c.Scenario)
	case !c.fleet() && c.Scenario == "":
		return errors.New("give a scenario, or --jobs or --subtasks for a fleet")
	case c.Truth != "" && !c.fleet():
		return errors.New("--truth: only with --jobs or --subtasks (one scenario's truth is its name)")
	}
	switch {
	case c.Interval%time.Millisecond != 0:
		return fmt.Errorf("--interval %s: must be a whole number of milliseconds", c.Interval)
	case c.Duration < c.Interval:
		return fmt.Errorf("--duration %s: must be at least --interval (%s)", fmtDuration(c.Duration), fmtDuration(c.Interval))
	case c.Scenario == string(simulate.SlowSink) && c.SinkParallelism < 2:
		return fmt.Errorf("--sink-parallelism %d: slow_sink needs at least 2 (with one sink subtask a stuck one looks like an undersized sink)", c.SinkParallelism)
	case c.SlowSubtask >= c.SinkParallelism:
		return fmt.Errorf("--slow-subtask %d: must be a sink subtask, below --sink-parallelism (%d)", c.SlowSubtask, c.SinkParallelism)
	}
	if _, err := keygroup.NewRouter(c.Parallelism, c.MaxParallelism); err != nil {
		return fmt.Errorf("--parallelism, --max-parallelism: %w", err)
	}
	if c.fleet() {
		return c.fleetConfig(c.Seed, c.Start, c.Duration, c.Interval, c.SamplesPerInterval).Validate()
	}
	return c.config().Validate()
}

// writerTo is what simulate writes: one job's Generator or a Fleet.
type writerTo interface {
	WriteTo(w io.Writer) (int64, error)
}

func (c *simulateCmd) Run(e *env) error {
	var g writerTo
	if c.fleet() {
		f, err := simulate.NewFleet(c.fleetConfig(c.Seed, c.Start, c.Duration, c.Interval, c.SamplesPerInterval))
		if err != nil {
			return err
		}
		if err := c.writeTruth(e, f); err != nil {
			return err
		}
		g = f
	} else {
		one, err := simulate.New(c.config())
		if err != nil {
			return err
		}
		g = one
	}
	w := e.stdout
	if c.Output != "-" {
		f, err := os.Create(c.Output)
		if err != nil {
			return fmt.Errorf("create output: %w", err)
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := g.WriteTo(bw); err != nil {
		return fmt.Errorf("write %s: %w", c.Output, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", c.Output, err)
	}
	if f, ok := w.(*os.File); ok && f != os.Stdout {
		return f.Close()
	}
	return nil
}

// writeTruth writes the fleet's ground truth to --truth, and says on
// standard error what the fleet is (always: a fleet's incidents are not in
// its flags).
func (c *simulateCmd) writeTruth(e *env, f *simulate.Fleet) error {
	tasks, sampled := f.Tasks()
	truths := f.Truths()
	fmt.Fprintf(e.stderr, "fleet: %d jobs, %d tasks (%d with key samples), %d subtasks\n", len(truths), tasks, sampled, f.Subtasks())
	for _, t := range truths {
		if t.Cause != simulate.CauseNone {
			fmt.Fprintf(e.stderr, "fleet: %s on %s (job_id %s)\n", t.Scenario, t.JobName, t.JobID)
		}
	}
	if c.Truth == "" {
		return nil
	}
	w := e.stderr
	if c.Truth != "-" {
		f, err := os.Create(c.Truth)
		if err != nil {
			return fmt.Errorf("create --truth: %w", err)
		}
		defer f.Close()
		w = f
	}
	enc := json.NewEncoder(w)
	for _, t := range truths {
		if err := enc.Encode(t); err != nil {
			return fmt.Errorf("write --truth %s: %w", c.Truth, err)
		}
	}
	if f, ok := w.(*os.File); ok && f != os.Stderr {
		if err := f.Close(); err != nil {
			return fmt.Errorf("write --truth %s: %w", c.Truth, err)
		}
	}
	return nil
}
