package main

import (
	"bufio"
	"fmt"
	"os"
	"time"

	"github.com/skewlens/skewlens/pipeline/simulate"
)

type simulateCmd struct {
	Scenario           string        `arg:"" enum:"healthy,hot_key,rotating_hot_key,slow_sink,under_provisioned,checkpoint_timeout" help:"Incident to simulate: ${enum}."`
	Output             string        `short:"o" default:"-" placeholder:"FILE" help:"Where to write the lines; '-' is standard output."`
	Seed               uint64        `default:"1" help:"Seed for every random choice; the same flags give byte-identical output."`
	Start              int64         `default:"${sim_start}" help:"Epoch milliseconds of the first report."`
	Duration           time.Duration `default:"${sim_duration}" help:"Simulated time."`
	Interval           time.Duration `default:"${sim_interval}" help:"Metric reporting interval."`
	Parallelism        int           `short:"p" default:"${sim_parallelism}" help:"Parallelism of the keyed task."`
	MaxParallelism     int           `short:"m" help:"Max parallelism of the keyed task (default: Flink's default for the parallelism)."`
	SourceParallelism  int           `default:"${sim_source_parallelism}" help:"Parallelism of the source."`
	SinkParallelism    int           `default:"${sim_sink_parallelism}" help:"Parallelism of the sink."`
	SamplesPerInterval int           `default:"${sim_samples}" help:"Key samples per reporting interval."`
	KeySpace           int           `default:"${sim_key_space}" help:"Number of normal keys."`
	HotShare           float64       `default:"${sim_hot_share}" help:"Share of records on the hot key (hot_key, rotating_hot_key)."`
	SlowSubtask        int           `default:"${sim_slow_subtask}" help:"The stuck sink subtask (slow_sink)."`
	Rate               float64       `help:"Demand in records/s (default: the scenario's own)."`
	MetricFormat       string        `enum:"json,influx,prometheus,mixed" default:"mixed" help:"Metric line format: ${enum} (mixed: one per TaskManager)."`
	Naming             string        `enum:"legacy,current,mixed" default:"mixed" help:"Buffer metric names: ${enum}."`
	OmitSubtask        bool          `help:"Leave subtask_index out of key samples, so readers must route keys themselves."`
	JobName            string        `default:"${sim_job_name}" help:"Flink job name."`
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
