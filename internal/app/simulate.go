package app

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/skew/keygroup"
)

// SimulateConfig is every setting of `skewlens simulate`. The command
// line binds it (kong tags); the simulated job's settings and the
// fleet's are their own Configs, embedded. Its own flags are those whose
// defaults differ from the job Config's on purpose: a fixed seed, every
// metric format and every naming generation.
type SimulateConfig struct {
	// Scenario is checked by the command line, as an enum would be: it is
	// optional (a fleet has none), so it cannot be one.
	Scenario     string               `arg:"" optional:"" help:"Incident to simulate: ${sim_scenarios}; none with --jobs or --subtasks."`
	Output       string               `short:"o" default:"-" placeholder:"FILE" help:"Where to write the lines; '-' is standard output."`
	Seed         uint64               `default:"1" help:"Seed for every random choice, any unsigned 64-bit number; the same flags give byte-identical output."`
	Sim          simulate.Config      `embed:""`
	MetricFormat string               `enum:"json,influx,prometheus,mixed" default:"mixed" help:"Metric line format: ${enum} (mixed: one per TaskManager)."`
	Naming       string               `enum:"legacy,current,mixed" default:"mixed" help:"Buffer metric names: ${enum}."`
	Fleet        simulate.FleetConfig `embed:""`
	Truth        string               `group:"Fleet" placeholder:"FILE" help:"Write the fleet's ground truth to FILE: one JSON object per job (simulate.Truth: job_id, scenario, cause, task, subtask, hot keys, time span), healthy jobs included ('-': standard error)."`
}

// FleetAsked reports whether the fleet's flags ask for a fleet (--jobs or
// --subtasks). With them, the flags that shape one job (--parallelism to
// --naming) do not apply: the fleet draws each job's shape from --seed.
func FleetAsked(cfg simulate.FleetConfig) bool { return cfg.Jobs > 0 || cfg.Subtasks > 0 }

// FleetOf returns the fleet's configuration from its flags; seed, start,
// duration, interval and samples are the job flags' (simulate) or
// demo's own.
func FleetOf(cfg simulate.FleetConfig, seed uint64, start int64, duration, interval time.Duration, samples int) simulate.FleetConfig {
	cfg.Seed, cfg.Start, cfg.Duration, cfg.Interval, cfg.SamplesPerInterval = seed, start, duration, interval, samples
	if cfg.Incidents == 0 {
		cfg.Incidents = -1 // --incidents 0: none; FleetConfig reads 0 as its default
	}
	return cfg
}

// CheckFleet checks the rules between the fleet's flags.
func CheckFleet(cfg simulate.FleetConfig) error {
	switch {
	case cfg.Jobs > 0 && cfg.Subtasks > 0:
		return fmt.Errorf("--jobs %d, --subtasks %d: give one of them", cfg.Jobs, cfg.Subtasks)
	case cfg.Incidents < 0:
		// The FleetConfig reads a negative count as none, as 0 is here.
		return fmt.Errorf("--incidents %d: must not be negative (0: none)", cfg.Incidents)
	}
	return nil
}

// JobConfig returns the simulated job's configuration: the Config's
// flags, with the scenario and simulate's own flags.
func (c *SimulateConfig) JobConfig() simulate.Config {
	cfg := c.Sim
	cfg.Scenario, cfg.Seed = simulate.Scenario(c.Scenario), c.Seed
	cfg.MetricFormat, cfg.Naming = c.MetricFormat, c.Naming
	return cfg
}

// fleet reports whether the flags ask for a fleet.
func (c *SimulateConfig) fleet() bool { return FleetAsked(c.Fleet) }

// fleetConfig returns the fleet's configuration, with the job flags'
// seed, start, span, interval and samples.
func (c *SimulateConfig) fleetConfig() simulate.FleetConfig {
	return FleetOf(c.Fleet, c.Seed, c.Sim.Start, c.Sim.Duration, c.Sim.Interval, c.Sim.SamplesPerInterval)
}

// Check checks what Simulate would reject later: the rules between
// flags, then the simulator's own Validate.
func (c *SimulateConfig) Check() error {
	if err := CheckFleet(c.Fleet); err != nil {
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
	sim := &c.Sim
	switch {
	case sim.Interval%time.Millisecond != 0:
		return fmt.Errorf("--interval %s: must be a whole number of milliseconds", sim.Interval)
	case sim.Duration < sim.Interval:
		return fmt.Errorf("--duration %s: must be at least --interval (%s)", knob.Duration(sim.Duration), knob.Duration(sim.Interval))
	case c.Scenario == string(simulate.SlowSink) && sim.SinkParallelism < 2:
		return fmt.Errorf("--sink-parallelism %d: slow_sink needs at least 2 (with one sink subtask a stuck one looks like an undersized sink)", sim.SinkParallelism)
	case sim.SlowSubtask == 0:
		// The Config reads 0 as its default, which is not subtask 0.
		return errors.New("--slow-subtask 0: must be at least 1 (subtask 0 cannot be chosen)")
	case sim.SlowSubtask >= sim.SinkParallelism:
		return fmt.Errorf("--slow-subtask %d: must be a sink subtask, below --sink-parallelism (%d)", sim.SlowSubtask, sim.SinkParallelism)
	}
	if _, err := keygroup.NewRouter(sim.Parallelism, sim.MaxParallelism); err != nil {
		return fmt.Errorf("--parallelism, --max-parallelism: %w", err)
	}
	if c.fleet() {
		return c.fleetConfig().Validate()
	}
	return c.JobConfig().Validate()
}

// writerTo is what simulate writes: one job's Generator or a Fleet.
type writerTo interface {
	WriteTo(w io.Writer) (int64, error)
}

// Simulate writes the lines of the simulated job, or of the fleet, to
// the Output file or s.Out. A fleet says on s.Err what it is, and writes
// its ground truth to the Truth file when asked.
func Simulate(c SimulateConfig, s Streams) error {
	var g writerTo
	if c.fleet() {
		f, err := simulate.NewFleet(c.fleetConfig())
		if err != nil {
			return err
		}
		if err := c.writeTruth(s.Err, f); err != nil {
			return err
		}
		g = f
	} else {
		one, err := simulate.New(c.JobConfig())
		if err != nil {
			return err
		}
		g = one
	}
	w := s.Out
	var file *os.File
	if c.Output != "-" {
		f, err := os.Create(c.Output)
		if err != nil {
			return fmt.Errorf("create output: %w", err)
		}
		defer f.Close()
		w, file = f, f
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := g.WriteTo(bw); err != nil {
		return fmt.Errorf("write %s: %w", c.Output, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", c.Output, err)
	}
	if file != nil {
		return file.Close()
	}
	return nil
}

// writeTruth writes the fleet's ground truth to the Truth file ('-':
// stderr), and says on stderr what the fleet is (always: a fleet's
// incidents are not in its flags).
func (c *SimulateConfig) writeTruth(stderr io.Writer, f *simulate.Fleet) error {
	tasks, sampled := f.Tasks()
	truths := f.Truths()
	fmt.Fprintf(stderr, "fleet: %d jobs, %d tasks (%d with key samples), %d subtasks\n", len(truths), tasks, sampled, f.Subtasks())
	for _, t := range truths {
		if t.Cause != simulate.CauseNone {
			fmt.Fprintf(stderr, "fleet: %s on %s (job_id %s)\n", t.Scenario, t.JobName, t.JobID)
		}
	}
	if c.Truth == "" {
		return nil
	}
	w := stderr
	var file *os.File
	if c.Truth != "-" {
		f, err := os.Create(c.Truth)
		if err != nil {
			return fmt.Errorf("create --truth: %w", err)
		}
		defer f.Close()
		w, file = f, f
	}
	enc := json.NewEncoder(w)
	for _, t := range truths {
		if err := enc.Encode(t); err != nil {
			return fmt.Errorf("write --truth %s: %w", c.Truth, err)
		}
	}
	if file != nil {
		if err := file.Close(); err != nil {
			return fmt.Errorf("write --truth %s: %w", c.Truth, err)
		}
	}
	return nil
}
