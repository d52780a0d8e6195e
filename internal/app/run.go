package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime/debug"
	"sync/atomic"
	"time"

	oklogrun "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/skewlens/skewlens/internal/findingtext"
	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/ops"
	"github.com/skewlens/skewlens/internal/promreg"
	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/pipeline/kafkasrc"
	"github.com/skewlens/skewlens/pipeline/stream"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/serve"
	"github.com/skewlens/skewlens/sinks/alertdeliver"
	"github.com/skewlens/skewlens/sinks/clickhouse"
	"github.com/skewlens/skewlens/sinks/incidentsink"
	"github.com/skewlens/skewlens/sinks/planpub"
	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
	"github.com/skewlens/skewlens/skew/plans"
)

// Output is what run prints for people on standard output: where the
// findings land, and incidents as they open and close.
type Output struct {
	W io.Writer
	// Quiet prints nothing; PerWindow prints every finding and every
	// incident update, a line per window.
	Quiet, PerWindow bool
	// Width returns the columns a line may take (0: no limit); nil is 0.
	Width func() int
}

func (o Output) width() int {
	if o.Width == nil {
		return 0
	}
	return o.Width()
}

// Run runs the pipeline until ctx is cancelled, cfg.Duration has passed
// or a component fails. With demo it starts an embedded broker and a
// local ClickHouse where no address is given, creates the topics, and
// plays demo's simulated incidents into the brokers.
//
// Components run as oklog/run actors; when one returns, every other is
// interrupted, one after another in the order they are added: the
// simulator feed stops producing; the runner writes its pending
// findings, saves the engine state and commits the offsets they free
// (the drain: on a context of its own, which the cancelled run context
// does not cut short, bounded by stream.Config.DrainTimeout); the
// override poller stops; the API drains its requests; the progress line
// and the ops server stop; the run context is cancelled. Then the
// deferred closes run in reverse order of creation: the alerter drains
// its notifier queues, the plan store and publisher, the dead-letter
// writer, the Kafka source and the ClickHouse store close, and the local
// ClickHouse and the embedded broker stop.
func Run(ctx context.Context, cfg RunConfig, demo *Demo, out Output, log *slog.Logger) error {
	if cfg.MemoryLimit > 0 {
		// Process-wide, as the runtime's limit is; only run sets it.
		debug.SetMemoryLimit(int64(cfg.MemoryLimit) << 20)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reg := prometheus.NewRegistry()
	if _, err := promreg.Register(reg, "process", collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return err
	}
	var cl closers
	defer cl.close(log)

	brokers, resume, err := cfg.brokers(ctx, demo, &cl, log)
	if err != nil {
		return err
	}
	store, err := cfg.store(ctx, demo, &cl, out, log, reg)
	if err != nil {
		return err
	}
	p, err := cfg.pipeline(ctx, brokers, resume, store, &cl, out, log, reg)
	if err != nil {
		return err
	}
	opsSrv, err := ops.New(cfg.Ops, log, reg)
	if err != nil {
		return err
	}
	api, err := cfg.server(serveStore(store), log, reg)
	if err != nil {
		return err
	}
	if api != nil {
		log.Info("serving the salting API and the web view", "addr", api.Addr())
		if !out.Quiet {
			fmt.Fprintf(out.W, "Web view: http://%s/\nSalting plans: curl http://%s/v1/salting (docs/api.md)\n\n", api.Addr(), api.Addr())
		}
	}
	opsSrv.AddCheck("kafka", p.src.Ready)
	opsSrv.AddCheck("clickhouse", store.Ping)
	log.Info("serving /metrics, /healthz, /readyz", "addr", opsSrv.Addr())

	var g oklogrun.Group
	if demo != nil {
		if err := demo.addFeed(&g, ctx, brokers, cfg.Kafka.Topics, log); err != nil {
			return err
		}
	}
	g.Add(func() error { return p.runner.Run(ctx) }, func(error) { p.runner.Stop() })
	overridesDone := make(chan struct{})
	g.Add(func() error { return p.poller.Run(ctx, overridesDone) }, func(error) { close(overridesDone) })
	if api != nil {
		g.Add(func() error { return api.Run(ctx) }, func(error) { api.Stop() })
	}
	progressDone := make(chan struct{})
	g.Add(func() error { return p.runner.ReportProgress(ctx, 10*time.Second, log, progressDone) }, func(error) { close(progressDone) })
	g.Add(opsSrv.Serve, func(error) { opsSrv.Stop() })
	g.Add(func() error { <-ctx.Done(); return nil }, func(error) { cancel() })
	if cfg.Duration > 0 {
		addTimer(&g, cfg.Duration, log)
	}
	err = g.Run()
	wc := p.feeder.Counts()
	log.Info("stopped", "findings_written", p.found.Load(), "samples", wc.Samples, "metrics", wc.Metrics, "late", wc.Late, "rejected", wc.Rejected)
	return err
}

// addTimer stops the group after d.
func addTimer(g *oklogrun.Group, d time.Duration, log *slog.Logger) {
	timer := time.NewTimer(d)
	stop := make(chan struct{})
	g.Add(func() error {
		select {
		case <-timer.C:
			log.Info("duration reached; stopping", "duration", d)
		case <-stop:
		}
		return nil
	}, func(error) { timer.Stop(); close(stop) })
}

// closers are what Run closes when it returns, last opened first.
type closers []func() error

func (c *closers) add(f func() error) { *c = append(*c, f) }

// close runs them, last added first. Its receiver is a pointer so that
// `defer cl.close(log)` sees what is added after the defer.
func (c *closers) close(log *slog.Logger) {
	for i := len(*c) - 1; i >= 0; i-- {
		if err := (*c)[i](); err != nil {
			log.Warn("stopping", "err", err)
		}
	}
}

// brokers waits for the configured brokers, or with demo and none
// configured starts an embedded one, and makes sure the topics exist.
// resume says whether the state the consumer group saved is resumed: an
// embedded broker starts empty, with no committed offsets, so the engine
// state and open incidents a previous run saved belong to records that
// no longer exist, and this run starts afresh rather than skip its events
// as already counted (a second `make run` would show nothing until its
// event time passed the first's).
func (c *RunConfig) brokers(ctx context.Context, demo *Demo, cl *closers, log *slog.Logger) (brokers []string, resume bool, err error) {
	brokers = c.Kafka.Brokers
	if len(brokers) > 0 {
		wctx, cancel := context.WithTimeout(ctx, c.Kafka.BrokerWait)
		err := kafkaclient.WaitBrokers(wctx, kafkaclient.AdminConfig{Brokers: brokers, Log: log})
		cancel()
		if err != nil {
			return nil, false, fmt.Errorf("%w (--brokers; --broker-wait %s)", err, c.Kafka.BrokerWait)
		}
	} else {
		if brokers, err = demo.startBroker(cl, log); err != nil {
			return nil, false, err
		}
	}
	return brokers, len(c.Kafka.Brokers) > 0, c.topics(ctx, brokers, demo != nil, log)
}

// store connects to ClickHouse, or with demo and no address starts a
// local server, and migrates the schema.
func (c *RunConfig) store(ctx context.Context, demo *Demo, cl *closers, out Output, log *slog.Logger, reg prometheus.Registerer) (*clickhouse.Store, error) {
	chCfg := c.StoreConfig()
	if c.ClickhouseAddr == "" {
		addr, err := demo.startClickHouse(ctx, c.StateDir, cl, log)
		if err != nil {
			return nil, err
		}
		chCfg.Addr = addr
	}
	store, err := clickhouse.New(ctx, chCfg, log, reg)
	if err != nil {
		return nil, err
	}
	cl.add(func() error { store.Close(); return nil })
	if err := store.Migrate(ctx); err != nil {
		return nil, err
	}
	log.Info("ClickHouse ready", "addr", chCfg.Addr, "version", store.ServerVersion(), "dialect", store.Dialect())
	if !out.Quiet {
		host, port, _ := net.SplitHostPort(chCfg.Addr)
		fmt.Fprintf(out.W, "Findings land in ClickHouse while this runs. Query them with\n  clickhouse-client --host %s --port %s --database %s\n"+
			"  SELECT kind, cause, job_name, task_name, subtask_index, count() FROM findings GROUP BY kind, cause, job_name, task_name, subtask_index ORDER BY count() DESC\n"+
			"  SELECT job_name, task_name, key, max(share) AS share FROM hot_keys GROUP BY job_name, task_name, key ORDER BY share DESC LIMIT 10\n"+
			"  SELECT job_name, task_name, subtask_index, host, any(summary) FROM findings WHERE cause = 'slow_subtask' GROUP BY job_name, task_name, subtask_index, host\n"+
			"Per-subtask statistics (--stats) are kept apart from the findings, in the table subtask_stats.\n"+
			"More in docs/queries.md; metrics at http://%s/metrics.\n\n", host, port, chCfg.Database, c.Ops.Listen)
	}
	return store, nil
}

// pipeline is what reads, diagnoses and writes.
type pipeline struct {
	src    *kafkasrc.Source
	feeder *window.Feeder
	runner *stream.Runner
	poller *planpub.OverridePoller
	found  atomic.Int64
}

// pipeline builds the Kafka source, the engine and its window feeder, the
// plan, incident and alert stages, and the runner that drives them.
func (c *RunConfig) pipeline(ctx context.Context, brokers []string, resume bool, store *clickhouse.Store, cl *closers, out Output, log *slog.Logger, reg prometheus.Registerer) (*pipeline, error) {
	p := &pipeline{}
	srcCfg := c.Kafka
	srcCfg.Brokers = brokers
	src, err := kafkasrc.New(ctx, srcCfg, log, reg)
	if err != nil {
		return nil, err
	}
	cl.add(func() error { src.Close(); return nil })
	p.src = src
	dead, err := kafkasrc.NewDeadLetters(srcCfg, log, reg)
	if err != nil {
		return nil, err
	}
	cl.add(func() error { dead.Close(); return nil })

	engCfg := c.Engine
	engCfg.EmitStats = c.Stats
	eng, err := skew.New(engCfg)
	if err != nil {
		return nil, fmt.Errorf("engine configuration: %w", err)
	}
	// The runner loads the engine state, open incidents and alerts the
	// consumer group saved in ClickHouse each time partitions are
	// assigned, the first time included (stream.GroupSource), so that a
	// restart, or a job whose partition moves here from another instance,
	// resumes where it was left.
	if resume {
		log.Info("Kafka brokers given: resuming the engine state, open incidents and alerts the consumer group saved in ClickHouse, at each assignment of partitions",
			"group", c.Kafka.GroupID, "database", c.Store.Database)
	} else {
		log.Info("embedded broker: starting afresh; not resuming the engine state, open incidents and alerts an earlier run saved in ClickHouse",
			"group", c.Kafka.GroupID, "database", c.Store.Database)
	}
	parts, backlog, err := kafkasrc.Backlog(ctx, brokers, c.Kafka.GroupID, c.Kafka.Topics, false)
	if err != nil {
		return nil, err
	}
	// The runner marks event times by partition; the watermark is the
	// minimum over the active ones.
	wms, err := window.NewWatermarks(window.WatermarkConfig{}, time.Now)
	if err != nil {
		return nil, err
	}
	if p.feeder, err = window.NewPartitioned(c.Window, eng, wms); err != nil {
		return nil, err
	}
	mgr, planObserver, err := c.plans(ctx, brokers, store, cl, log, reg)
	if err != nil {
		return nil, err
	}
	var overrides []plans.Override
	err = retry.Do(ctx, store.RetryPolicy(), nil, func(ctx context.Context) (err error) {
		overrides, err = store.Plans().Overrides(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := planObserver.SetOverrides(ctx, overrides); err != nil {
		log.Warn("plan overrides", "err", err)
	}
	// Overrides made through the API (any process) are read back and
	// handed to the plan observer when they change.
	if p.poller, err = planpub.NewOverridePoller(c.PlanPublisher.OverridePoll, store.Plans(), planObserver, overrides, log); err != nil {
		return nil, err
	}
	alerter, err := c.alerter(ctx, brokers, mgr, log, reg)
	if err != nil {
		return nil, err
	}
	cl.add(func() error { alerter.Stop(); return nil }) // after the runner: drains the notifier queues
	incidentObserver, err := c.incidents(mgr, store, log, reg)
	if err != nil {
		return nil, err
	}
	cl.add(func() error { incidentObserver.Close(); return nil })
	if !out.Quiet {
		incidentObserver.OnChanges(func(chs []incident.Change) {
			for i := range chs {
				if ch := &chs[i]; ch.Kind != incident.Updated || out.PerWindow {
					_ = findingtext.WriteIncident(out.W, string(ch.Kind), &ch.Incident, out.width())
				}
			}
		})
	}
	// Alerts are the notifications of incidents: they fire, renotify and
	// resolve as the stored incident changes say (a resolved alert says
	// why its incident closed: the fix's receipt). Their state is stored
	// beside the engine state at every window close and, against real
	// brokers, resumed (by the runner, at each assignment, after the
	// incidents), so an ongoing condition does not fire again after a
	// restart or a rebalance.
	incidentObserver.OnChanges(alerter.Apply)
	alertStateObserver, err := alertdeliver.NewStateObserver(alerter, store.Writer(), c.Kafka.GroupID, incidentObserver.Open, log)
	if err != nil {
		return nil, err
	}
	// The stages of a window close, in order: the findings stored, then
	// the plans made (incidents ask for them), the incidents folded and
	// their alerts sent, the alert state stored.
	chain := stream.NewSinkChain(store.Writer(), planObserver, incidentObserver, alertStateObserver)
	p.runner, err = stream.New(stream.Config{Partitions: kafkasrc.StreamPartitions(parts), Backlog: kafkasrc.StreamPartitions(backlog), Group: c.Kafka.GroupID, Afresh: !resume},
		kafkasrc.ForStream(src), p.feeder, chain, store.Writer(), kafkasrc.DeadLettersForStream(dead), log, reg)
	if err != nil {
		return nil, err
	}
	p.runner.OnFinding(func(f *skew.Finding) {
		p.found.Add(1)
		if !out.Quiet && out.PerWindow && f.Kind != skew.KindSubtaskStats {
			_ = findingtext.WriteFinding(out.W, f, out.width())
		}
	})
	return p, nil
}

// plans builds the salting plans' manager and observer. The Manager turns
// salting_plan findings into stable, versioned plans; each change goes to
// the plans table (read by skewlens serve) and, unless disabled, the
// compacted plans topic. The plan observer resumes the plans as Restore did
// at each assignment of partitions (the runner's Resume of its stages),
// so that it neither retires nor publishes the plans of jobs another
// instance reads.
func (c *RunConfig) plans(ctx context.Context, brokers []string, store *clickhouse.Store, cl *closers, log *slog.Logger, reg prometheus.Registerer) (*plans.Manager, *planpub.PlanObserver, error) {
	mgr, err := plans.NewManager(c.plansConfig())
	if err != nil {
		return nil, nil, fmt.Errorf("plans: %w", err)
	}
	planOut := planpub.ChangePublisher(planpub.PublisherFunc(store.Writer().WritePlans))
	var pub *planpub.Publisher // nil: no plans topic
	if c.PlanPublisher.Topic != "" {
		pubCfg := c.PlanPublisher
		pubCfg.Brokers = brokers
		if pub, err = planpub.New(pubCfg, log, reg); err != nil {
			return nil, nil, err
		}
		cl.add(func() error { pub.Close(); return nil })
		if err := pub.EnsureTopic(ctx); err != nil {
			return nil, nil, err
		}
		planOut = planpub.Tee(planOut, pub)
	}
	if err := planpub.Restore(ctx, mgr, pub, store.Plans(), store.RetryPolicy(), log); err != nil {
		return nil, nil, err
	}
	planObserver, err := planpub.NewPlanObserver(mgr, planOut, planpub.StoredPlans(pub, store.Plans()), log, reg)
	if err != nil {
		return nil, nil, err
	}
	cl.add(func() error { planObserver.Close(); return nil })
	return mgr, planObserver, nil
}

// incidents builds the incident tracker with the alerts' hysteresis
// and its observer: incidents are consecutive windows of one condition,
// stored before the engine state (crash-safe). The runner resumes the
// open incidents from ClickHouse at each assignment of partitions
// (incidentsink.IncidentObserver.Resume).
func (c *RunConfig) incidents(mgr *plans.Manager, store *clickhouse.Store, log *slog.Logger, reg prometheus.Registerer) (*incidentsink.IncidentObserver, error) {
	cfg := c.incidentConfig()
	cfg.Plan = PlanOf(mgr)
	tr, err := incident.New(cfg)
	if err != nil {
		return nil, err
	}
	return incidentsink.New(tr, store.Writer(), log, reg)
}

// server returns the API server on store, or nil when no API is served.
func (a *API) server(store servestore.Store, log *slog.Logger, reg serve.Registry) (*serve.Server, error) {
	if a.APIListen == "" {
		return nil, nil
	}
	return NewServer(*a, store, log, reg)
}

// NewServer returns the API server of the configuration on store.
func NewServer(a API, store servestore.Store, log *slog.Logger, reg serve.Registry) (*serve.Server, error) {
	cfg, err := a.ServeConfig()
	if err != nil {
		return nil, err
	}
	srv, err := serve.New(cfg, store, log, reg)
	if err != nil {
		return nil, fmt.Errorf("API: %w", err)
	}
	if a.TokenFile != "" && len(cfg.Tokens) == 0 {
		// Given a token file, the operator meant to allow writes: an empty
		// one is more likely a mistake than a choice.
		log.Warn(fmt.Sprintf("read-only API: no write tokens in %s", a.TokenFile), "token_file", a.TokenFile)
	}
	return srv, nil
}

// PlanOf returns the served plan of a task from mgr, as incidents and
// alerts ask for it: its version and when that version was made.
func PlanOf(mgr *plans.Manager) func(job, task string) (uint64, int64, bool) {
	return func(job, task string) (uint64, int64, bool) {
		if p := mgr.Plan(job, task); p != nil {
			return p.Version, p.GeneratedAt.UnixMilli(), true
		}
		return 0, 0, false
	}
}

// serveStore is the API's store: the parts of the ClickHouse store it
// reads and writes.
func serveStore(st *clickhouse.Store) servestore.Store {
	return servestore.Store{Ready: st, Plans: st.Plans(), Overrides: st.Writer(), Audit: st.Audit(),
		Findings: st.Findings(), Stats: st.Stats(), Incidents: st.Incidents()}
}
