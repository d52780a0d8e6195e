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

// simulateCmd binds simulate's Config (simFlags) and FleetConfig
// (fleetFlags). Its own flags are those whose defaults differ from the
// Config's on purpose: a fixed seed, every metric format and every naming
// generation.
type simulateCmd struct {
	Scenario string `arg:"" optional:"" help:"Incident to simulate: ${sim_scenarios}; none with --jobs or --subtasks."`
	Output   string `short:"o" default:"-" placeholder:"FILE" help:"Where to write the lines; '-' is standard output."`
	Seed     uint64 `default:"1" help:"Seed for every random choice, any unsigned 64-bit number; the same flags give byte-identical output."`
	simFlags
	MetricFormat string `enum:"json,influx,prometheus,mixed" default:"mixed" help:"Metric line format: ${enum} (mixed: one per TaskManager)."`
	Naming       string `enum:"legacy,current,mixed" default:"mixed" help:"Buffer metric names: ${enum}."`
	fleetFlags
	Truth string `group:"Fleet" placeholder:"FILE" help:"Write the fleet's ground truth to FILE: one JSON object per job (simulate.Truth: job_id, scenario, cause, task, subtask, hot keys, time span), healthy jobs included ('-': standard error)."`
}

// simFlags bind the simulated job's Config: each setting with a name is a
// flag, as its tags declare it. The wrapper is unexported so that kong
// does not call the Config's Validate while parsing: check does, naming
// the flags.
type simFlags struct {
	Sim simulate.Config `embed:""`
}

// fleetFlags play a fleet of jobs instead of one scenario (simulate, and
// demo with --simulate fleet): they bind the FleetConfig's flags. With
// them, the flags that shape one job (--parallelism to --naming) do not
// apply: the fleet draws each job's shape from --seed.
type fleetFlags struct {
	Fleet simulate.FleetConfig `embed:""`
}

// fleet reports whether the flags ask for a fleet.
func (f *fleetFlags) fleet() bool { return f.Fleet.Jobs > 0 || f.Fleet.Subtasks > 0 }

// fleetConfig returns the fleet's configuration; seed, start, duration,
// interval and samples are the job flags' (simulate) or demo's own.
func (f *fleetFlags) fleetConfig(seed uint64, start int64, duration, interval time.Duration, samples int) simulate.FleetConfig {
	cfg := f.Fleet
	cfg.Seed, cfg.Start, cfg.Duration, cfg.Interval, cfg.SamplesPerInterval = seed, start, duration, interval, samples
	if cfg.Incidents == 0 {
		cfg.Incidents = -1 // --incidents 0: none; FleetConfig reads 0 as its default
	}
	return cfg
}

// checkFleet checks the rules between the fleet flags.
func (f *fleetFlags) checkFleet() error {
	switch {
	case f.Fleet.Jobs > 0 && f.Fleet.Subtasks > 0:
		return fmt.Errorf("--jobs %d, --subtasks %d: give one of them", f.Fleet.Jobs, f.Fleet.Subtasks)
	case f.Fleet.Incidents < 0:
		// The FleetConfig reads a negative count as none, as 0 is here.
		return fmt.Errorf("--incidents %d: must not be negative (0: none)", f.Fleet.Incidents)
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

// config returns the simulated job's configuration: the Config's flags,
// with the scenario and simulate's own flags.
func (c *simulateCmd) config() simulate.Config {
	cfg := c.Sim
	cfg.Scenario, cfg.Seed = simulate.Scenario(c.Scenario), c.Seed
	cfg.MetricFormat, cfg.Naming = c.MetricFormat, c.Naming
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
	sim := &c.Sim
	switch {
	case sim.Interval%time.Millisecond != 0:
		return fmt.Errorf("--interval %s: must be a whole number of milliseconds", sim.Interval)
	case sim.Duration < sim.Interval:
		return fmt.Errorf("--duration %s: must be at least --interval (%s)", fmtDuration(sim.Duration), fmtDuration(sim.Interval))
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
		return c.fleetConfig(c.Seed, sim.Start, sim.Duration, sim.Interval, sim.SamplesPerInterval).Validate()
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
		f, err := simulate.NewFleet(c.fleetConfig(c.Seed, c.Sim.Start, c.Sim.Duration, c.Sim.Interval, c.Sim.SamplesPerInterval))
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
