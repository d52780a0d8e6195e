package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	oklogrun "github.com/oklog/run"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/internal/localch"
	"github.com/skewlens/skewlens/internal/simfeed"
	"github.com/skewlens/skewlens/pipeline/simulate"
)

// Demo is what `skewlens demo` adds to run: without brokers an embedded
// in-process broker, without a ClickHouse address a local
// clickhouse-server (installed when missing), the topics created, and
// simulated incidents played into the brokers.
type Demo struct {
	Simulate []string       `placeholder:"SCENARIO" help:"Play these simulated incidents into the brokers, one job each (all: every scenario; fleet: a fleet of --jobs or --subtasks, seed 1)."`
	Feed     simfeed.Config `embed:""`
	// Fleet shapes the jobs of --simulate fleet; its seed, start, span and
	// samples are the demo's own.
	Fleet simulate.FleetConfig `kong:"-"`
}

// fleet reports whether the simulation is a fleet.
func (d *Demo) fleet() bool { return len(d.Simulate) == 1 && d.Simulate[0] == "fleet" }

// Check checks the simulation's settings; fleetAsked says whether
// the fleet's size was given (--jobs or --subtasks).
func (d *Demo) Check(fleetAsked bool) error {
	if err := knob.Check(d.Feed); err != nil {
		return err
	}
	for _, name := range d.Simulate {
		if !slices.Contains(simulate.Scenarios(), simulate.Scenario(name)) && !((name == "all" || name == "fleet") && len(d.Simulate) == 1) {
			return fmt.Errorf("--simulate %q: want all or some of %v, or fleet", name, simulate.Scenarios())
		}
	}
	switch {
	case d.fleet() && !fleetAsked:
		return errors.New("--simulate fleet: give --jobs or --subtasks")
	case !d.fleet() && fleetAsked:
		return errors.New("--jobs, --subtasks: only with --simulate fleet")
	case d.fleet():
		if err := d.fleetConfig(time.Now()).Validate(); err != nil {
			return fmt.Errorf("--jobs, --subtasks, --incidents, --fleet-max-parallelism, --sampled-tasks: %w", err)
		}
	}
	return nil
}

// startBroker starts the embedded broker; it stops when Run returns.
func (d *Demo) startBroker(cl *closers, log *slog.Logger) ([]string, error) {
	if d == nil {
		return nil, errors.New("no brokers")
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	cl.add(func() error { cluster.Close(); return nil })
	brokers := cluster.ListenAddrs()
	log.Info("started embedded Kafka broker", "addr", brokers[0])
	return brokers, nil
}

// startClickHouse starts a local clickhouse-server under stateDir; it
// stops when Run returns.
func (d *Demo) startClickHouse(ctx context.Context, stateDir string, cl *closers, log *slog.Logger) (string, error) {
	if d == nil {
		return "", errors.New("no ClickHouse address")
	}
	local, err := localch.Start(ctx, filepath.Join(stateDir, "clickhouse"), log)
	if err != nil {
		return "", err
	}
	cl.add(func() error {
		if err := local.Stop(); err != nil {
			return fmt.Errorf("stopping the local ClickHouse: %w", err)
		}
		return nil
	})
	return local.Addr, nil
}

// addFeed adds the simulated incidents, if any, to g: played into the
// first and last of topics (metrics and samples), and, once played, the
// pipeline keeps running.
func (d *Demo) addFeed(g *oklogrun.Group, ctx context.Context, brokers, topics []string, log *slog.Logger) error {
	if len(d.Simulate) == 0 {
		return nil
	}
	feed, err := d.feed(brokers, topics, log)
	if err != nil {
		return err
	}
	feedDone := make(chan struct{})
	g.Add(func() error {
		if err := feed.Run(ctx); err != nil {
			return err
		}
		log.Info("simulated incidents played", "records", feed.Sent)
		<-feedDone // keep the pipeline running after the feed ends
		return nil
	}, func(error) { feed.Stop(); close(feedDone) })
	return nil
}

func (d *Demo) feed(brokers, topics []string, log *slog.Logger) (*simfeed.Feed, error) {
	names := d.Simulate
	if len(names) == 1 && names[0] == "all" {
		names = nil
		for _, s := range simulate.Scenarios() {
			names = append(names, string(s))
		}
	}
	cfg := d.Feed
	cfg.Brokers = brokers
	if d.fleet() {
		jobs, err := simulate.FleetJobs(d.fleetConfig(time.Now()))
		if err != nil {
			return nil, err
		}
		logFleet(jobs, log)
		cfg.Jobs = jobs
	} else {
		cfg.Jobs = simJobs(names, time.Now())
	}
	cfg.MetricsTopic, cfg.SamplesTopic = topics[0], topics[len(topics)-1]
	return simfeed.New(cfg, log)
}

func logFleet(jobs []simulate.Config, log *slog.Logger) {
	subtasks, sampled := 0, 0
	for _, jc := range jobs {
		subtasks += jc.SourceParallelism + jc.Parallelism + jc.SinkParallelism
		for _, p := range jc.SideTasks {
			subtasks += p
		}
		if !jc.NoKeySamples {
			sampled++
		}
		if jc.Scenario != simulate.Healthy {
			log.Info("simulated fleet: incident", "scenario", jc.Scenario, "job_name", jc.JobName)
		}
	}
	log.Info("simulated fleet", "jobs", len(jobs), "subtasks", subtasks, "sampled_tasks", sampled)
}

// simJobs configures one simulated job per scenario name. Their event
// time starts one simulated duration before now, so that it ends at now
// at the latest: played at any --speed, the simulation's event time never
// passes the wall clock (at speed s it runs s times as fast, but only up
// to now), and the windows, findings and `top` show no times in the
// future.
func simJobs(names []string, now time.Time) []simulate.Config {
	var jobs []simulate.Config
	for i, n := range names {
		jc := simulate.DefaultConfig()
		start := now.Add(-jc.Duration).Truncate(jc.Interval).UnixMilli()
		jc.Scenario, jc.Seed, jc.Start, jc.JobName = simulate.Scenario(n), uint64(i+1), start, n
		jc.MetricFormat, jc.Naming = simulate.FormatMixed, simulate.NamingMixed
		jobs = append(jobs, jc)
	}
	return jobs
}

// fleetConfig is the fleet of --simulate fleet: seed 1, the simulator's
// default duration and interval, and, as simJobs, event time starting
// one duration before now.
func (d *Demo) fleetConfig(now time.Time) simulate.FleetConfig {
	sim := simulate.DefaultConfig()
	cfg := d.Fleet
	cfg.Seed = 1
	cfg.Start = now.Add(-sim.Duration).Truncate(sim.Interval).UnixMilli()
	cfg.Duration, cfg.Interval, cfg.SamplesPerInterval = sim.Duration, sim.Interval, sim.SamplesPerInterval
	return cfg
}
