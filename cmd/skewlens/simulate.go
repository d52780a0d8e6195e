package main

import (
	"bufio"
	"fmt"
	"os"
	"time"

	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/skew/keygroup"
)

type simulateCmd struct {
	Scenario           string        `arg:"" enum:"healthy,hot_key,rotating_hot_key,slow_sink,under_provisioned,checkpoint_timeout" help:"Incident to simulate: ${enum}."`
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
	return c.config().Validate()
}

func (c *simulateCmd) Run(e *env) error {
	g, err := simulate.New(c.config())
	if err != nil {
		return err
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
