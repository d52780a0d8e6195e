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
	Start              int64         `default:"1593004200000" help:"Epoch milliseconds of the first report."`
	Duration           time.Duration `default:"10m" help:"Simulated time."`
	Interval           time.Duration `default:"10s" help:"Metric reporting interval."`
	Parallelism        int           `short:"p" default:"8" help:"Parallelism of the keyed task."`
	MaxParallelism     int           `short:"m" help:"Max parallelism of the keyed task (default: Flink's default for the parallelism)."`
	SourceParallelism  int           `default:"4" help:"Parallelism of the source."`
	SinkParallelism    int           `default:"4" help:"Parallelism of the sink."`
	SamplesPerInterval int           `default:"2000" help:"Key samples per reporting interval."`
	KeySpace           int           `default:"100000" help:"Number of normal keys."`
	HotShare           float64       `default:"0.35" help:"Share of records on the hot key (hot_key, rotating_hot_key)."`
	SlowSubtask        int           `default:"2" help:"The stuck sink subtask (slow_sink)."`
	Rate               float64       `help:"Demand in records/s (default: the scenario's own)."`
	MetricFormat       string        `enum:"json,influx,prometheus,mixed" default:"mixed" help:"Metric line format: ${enum} (mixed: one per TaskManager)."`
	Naming             string        `enum:"legacy,current,mixed" default:"mixed" help:"Buffer metric names: ${enum}."`
	OmitSubtask        bool          `help:"Leave subtask_index out of key samples, so readers must route keys themselves."`
	JobName            string        `default:"billing" help:"Flink job name."`
}

func (c *simulateCmd) config() simulate.Config {
	return simulate.Config{
		Scenario: simulate.Scenario(c.Scenario), Seed: c.Seed, Start: c.Start, Duration: c.Duration,
		Interval: c.Interval, SourceParallelism: c.SourceParallelism, Parallelism: c.Parallelism,
		MaxParallelism: c.MaxParallelism, SinkParallelism: c.SinkParallelism,
		SamplesPerInterval: c.SamplesPerInterval, KeySpace: c.KeySpace, HotShare: c.HotShare,
		SlowSubtask: c.SlowSubtask, Rate: c.Rate, MetricFormat: c.MetricFormat, Naming: c.Naming,
		OmitSubtask: c.OmitSubtask, JobName: c.JobName,
	}
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
