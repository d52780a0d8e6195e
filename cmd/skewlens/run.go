package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	oklogrun "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/skewlens/skewlens/alert/alertmanager"
	"github.com/skewlens/skewlens/alert/deliver"
	"github.com/skewlens/skewlens/alert/incident"
	"github.com/skewlens/skewlens/alert/kafkanotify"
	"github.com/skewlens/skewlens/alert/webhook"
	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/localch"
	"github.com/skewlens/skewlens/internal/ops"
	"github.com/skewlens/skewlens/internal/promreg"
	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/internal/simfeed"
	"github.com/skewlens/skewlens/pipeline/kafkasrc"
	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/pipeline/stream"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/plans"
	"github.com/skewlens/skewlens/sinks/incidentsink"
	"github.com/skewlens/skewlens/sinks/planpub"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/store/clickhouse"
)

type runCmd struct {
	configFlags
	Brokers                []string      `placeholder:"HOST:PORT" help:"Kafka bootstrap brokers. Required by run; demo starts an embedded in-process broker on loopback without them."`
	BrokerWait             time.Duration `default:"${broker_wait}" help:"How long to wait at start for one of --brokers to answer (brokers that start after skewlens)." range:"(0s,]"`
	Group                  string        `default:"${group}" help:"Kafka consumer group; instances in one group split the partitions." range:"[1,]"`
	Topics                 []string      `default:"${topics}" help:"Topics to consume (metrics and key samples, any format)." range:"[1,]"`
	DeadLetterTopic        string        `default:"${dead_letter_topic}" help:"Where bad records go, with the reason in a header." range:"[1,]"`
	CreateTopics           bool          `help:"Create the topics of --topics and --dead-letter-topic when missing, with --topic-partitions and --topic-replication-factor (default: stop, naming the command that creates them). demo always creates them."`
	TopicPartitions        int           `default:"${topic_partitions}" help:"Partitions of a topic --create-topics creates: at least the instances of the consumer group (README, Running at scale)." range:"[1,]"`
	TopicReplicationFactor int           `default:"${topic_replication_factor}" help:"Replication factor of a topic --create-topics creates: 3 on a production cluster." range:"[1,]"`
	clickhouseFlags        `set:"clickhouse_addr_note=Required by run; demo starts a local clickhouse-server under --state-dir without it."`
	StateDir               string `default:".state" help:"Where demo's embedded servers keep their data." range:"[1,]"`
	Listen                 string `default:"${ops_listen}" help:"Address of /metrics, /healthz, /readyz and /debug/pprof." range:"[1,]"`
	MemoryLimit            int    `name:"memory-limit-mib" placeholder:"MIB" help:"Soft memory limit of the Go runtime, in MiB: near it the garbage collector runs more often instead of letting the heap grow (about 85% of what the instance may use; 100k subtasks fit in 512 MB with 400). 0: none, or the GOMEMLIMIT variable." range:"[0,1048576]"`
	logFlags
	Duration  time.Duration `help:"Stop after this long (default: run until interrupted)." range:"[0s,]"`
	Quiet     bool          `help:"Do not print findings to the terminal."`
	PerWindow bool          `help:"Print every finding and every incident update, a line per window, not only incidents as they open and close."`
	textFlags
	Stats           bool          `default:"true" negatable:"" help:"Write a subtask_stats row per subtask and window (rates, busy/back-pressured time, pools, queues, checkpoint times)."`
	PlansTopic      string        `default:"${plans_topic}" group:"Plans" help:"Compacted Kafka topic the salting plans are published to (docs/salting-plans.md); empty: not published."`
	PlanCooldown    time.Duration `default:"${plan_cooldown}" group:"Plans" help:"How long a hot key stays salted after the last window it was hot in." range:"[1ms,]"`
	PlanTTL         time.Duration `default:"${plan_ttl}" group:"Plans" help:"Retire a plan that no finding confirmed for this long." range:"[1ms,]"`
	OverridePoll    time.Duration `default:"${override_poll}" group:"Plans" help:"How often operators' plan overrides (made through skewlens serve) are read from ClickHouse." range:"(0s,]"`
	AlertmanagerURL string        `group:"Alerts" placeholder:"URL" help:"Send alerts to this Prometheus Alertmanager (v2 API), e.g. http://127.0.0.1:9093."`
	AlertWebhookURL string        `group:"Alerts" placeholder:"URL" help:"POST alerts as JSON to this URL (docs/alerts.md)."`
	AlertsTopic     string        `group:"Alerts" placeholder:"TOPIC" help:"Publish alerts to this Kafka topic (created if missing), e.g. skewlens-alerts."`
	AlertFor        time.Duration `default:"${alert_for}" group:"Alerts" help:"How long (event time) an incident must last before its alert fires." range:"(0s,]"`
	AlertResolve    time.Duration `name:"alert-resolve-after" default:"${alert_resolve}" group:"Alerts" help:"Close an incident, and resolve its alert, after no finding of it for this long (hysteresis)." range:"(0s,]"`
	AlertRenotify   time.Duration `group:"Alerts" help:"Repeat a firing alert's notification this often (default: never; Alertmanager has repeat_interval)." range:"[0s,]"`
	SaltingURL      string        `group:"Alerts" placeholder:"URL" help:"Base URL of skewlens serve, for the runbook link of skew alerts (default: the --api-listen address)."`
	// The pipeline serves the API only when asked (make run does); the
	// service proper is skewlens serve.
	apiFlags `set:"api_listen="`
	windowFlags
	engineFlags
}

// Run wires the pipeline. Components run as oklog/run actors; when one
// returns, every other is interrupted, one after another in the order
// they are added: the simulator feed stops producing; the runner writes
// its pending findings, saves the engine state and commits the offsets
// they free (the drain: on a context of its own, which the cancelled run
// context does not cut short, bounded by stream.Config.DrainTimeout); the
// override poller stops; the API drains its requests; the progress line
// and the ops server stop; the run context is cancelled. Then the deferred closes run in reverse order of
// creation: the alerter drains its notifier queues, the plan store and
// publisher, the dead-letter writer, the Kafka source and the ClickHouse
// store close, and the local ClickHouse and the embedded broker stop.
func (c *runCmd) Run(e *env) error { return c.start(e, nil) }

// start runs the pipeline; with demo it starts an embedded broker and a
// local ClickHouse when their addresses are not given, creates the
// topics, and plays demo's simulated incidents into the brokers.
func (c *runCmd) start(e *env, demo *demoCmd) error {
	if _, err := c.lineWidth(e); err != nil {
		return err
	}
	log := c.logger(e.stderr, nil)
	if c.MemoryLimit > 0 {
		// Process-wide, as the runtime's limit is; only run sets it.
		debug.SetMemoryLimit(int64(c.MemoryLimit) << 20)
	}
	reg := prometheus.NewRegistry()
	if _, err := promreg.Register(reg, "process", collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	brokers := c.Brokers
	// An embedded broker starts empty, with no committed offsets: the
	// engine state and open incidents a previous run saved belong to
	// records that no longer exist, so this run starts afresh rather than
	// skip its events as already counted (a second `make run` would show
	// nothing until its event time passed the first's).
	resume := len(brokers) > 0
	if len(brokers) > 0 {
		wctx, wcancel := context.WithTimeout(ctx, c.BrokerWait)
		err := kafkaclient.WaitBrokers(wctx, kafkaclient.AdminConfig{Brokers: brokers, Log: log})
		wcancel()
		if err != nil {
			return fmt.Errorf("%w (--brokers; --broker-wait %s)", err, c.BrokerWait)
		}
	} else {
		cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			return fmt.Errorf("embedded broker: %w", err)
		}
		defer cluster.Close()
		brokers = cluster.ListenAddrs()
		log.Info("started embedded Kafka broker", "addr", brokers[0])
	}
	if err := c.topics(ctx, brokers, demo != nil, log); err != nil {
		return err
	}

	chAddr := c.ClickhouseAddr
	if chAddr == "" {
		local, err := localch.Start(ctx, filepath.Join(c.StateDir, "clickhouse"), log)
		if err != nil {
			return err
		}
		defer func() {
			if err := local.Stop(); err != nil {
				log.Warn("stopping the local ClickHouse", "err", err)
			}
		}()
		chAddr = local.Addr
	}
	chCfg := c.storeConfig()
	chCfg.Addr = chAddr
	store, err := clickhouse.New(ctx, chCfg, log, reg)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	log.Info("ClickHouse ready", "addr", chAddr, "version", store.ServerVersion(), "dialect", store.Dialect())
	if !c.Quiet {
		host, port, _ := net.SplitHostPort(chAddr)
		fmt.Fprintf(e.stdout, "Findings land in ClickHouse while this runs. Query them with\n  clickhouse-client --host %s --port %s --database %s\n"+
			"  SELECT kind, cause, job_name, task_name, subtask_index, count() FROM findings GROUP BY kind, cause, job_name, task_name, subtask_index ORDER BY count() DESC\n"+
			"  SELECT job_name, task_name, key, max(share) AS share FROM hot_keys GROUP BY job_name, task_name, key ORDER BY share DESC LIMIT 10\n"+
			"  SELECT job_name, task_name, subtask_index, host, any(summary) FROM findings WHERE cause = 'slow_subtask' GROUP BY job_name, task_name, subtask_index, host\n"+
			"Per-subtask statistics (--stats) are kept apart from the findings, in the table subtask_stats.\n"+
			"More in docs/queries.md; metrics at http://%s/metrics.\n\n", host, port, c.Database, c.Listen)
	}

	srcCfg := kafkasrc.DefaultConfig()
	srcCfg.Brokers, srcCfg.GroupID, srcCfg.Topics, srcCfg.DeadLetterTopic = brokers, c.Group, c.Topics, c.DeadLetterTopic
	src, err := kafkasrc.New(ctx, srcCfg, log, reg)
	if err != nil {
		return err
	}
	defer src.Close()
	dead, err := kafkasrc.NewDeadLetters(srcCfg, log, reg)
	if err != nil {
		return err
	}
	defer dead.Close()

	cfg := c.config()
	cfg.EmitStats = c.Stats
	eng, err := skew.New(cfg)
	if err != nil {
		return fmt.Errorf("engine configuration: %w", err)
	}
	// The runner loads the engine state, open incidents and alerts the
	// consumer group saved in ClickHouse each time partitions are
	// assigned, the first time included (stream.GroupSource), so that a
	// restart, or a job whose partition moves here from another instance,
	// resumes where it was left.
	if resume {
		log.Info("Kafka brokers given: resuming the engine state, open incidents and alerts the consumer group saved in ClickHouse, at each assignment of partitions",
			"group", c.Group, "database", c.Database)
	} else {
		log.Info("embedded broker: starting afresh; not resuming the engine state, open incidents and alerts an earlier run saved in ClickHouse",
			"group", c.Group, "database", c.Database)
	}
	parts, backlog, err := kafkasrc.Backlog(ctx, brokers, c.Group, c.Topics, false)
	if err != nil {
		return err
	}
	// The runner marks event times by partition; the watermark is the
	// minimum over the active ones.
	wms, err := window.NewWatermarks(window.WatermarkConfig{}, time.Now)
	if err != nil {
		return err
	}
	stage, err := window.NewPartitioned(c.windowConfig(), eng, wms)
	if err != nil {
		return err
	}
	// Salting plans: the Manager turns salting_plan findings into stable,
	// versioned plans; each change goes to the plans table (read by
	// skewlens serve) and, unless disabled, the compacted plans topic.
	mgr, err := plans.NewManager(c.plansConfig())
	if err != nil {
		return fmt.Errorf("plans: %w", err)
	}
	planOut := planpub.ChangePublisher(planpub.PublisherFunc(store.Writer().WritePlans))
	var pub *planpub.Publisher // nil: no plans topic
	if c.PlansTopic != "" {
		pubCfg := planpub.DefaultConfig()
		pubCfg.Brokers, pubCfg.Topic = brokers, c.PlansTopic
		pub, err = planpub.New(pubCfg, log, reg)
		if err != nil {
			return err
		}
		defer pub.Close()
		if err := pub.EnsureTopic(ctx); err != nil {
			return err
		}
		planOut = planpub.Tee(planOut, pub)
	}
	if err := planpub.Restore(ctx, mgr, pub, store.Plans(), store.RetryPolicy(), log); err != nil {
		return err
	}
	// The plan sink resumes the plans as Restore did at each assignment
	// of partitions (the runner's Resume of its stages), so that it
	// neither retires nor publishes the plans of jobs another instance
	// reads.
	planSink, err := planpub.NewSink(mgr, planOut, planpub.StoredPlans(pub, store.Plans()), log, reg)
	if err != nil {
		return err
	}
	defer planSink.Close()
	var overrides []plans.Override
	err = retry.Do(ctx, store.RetryPolicy(), nil, func(ctx context.Context) (err error) {
		overrides, err = store.Plans().Overrides(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if err := planSink.SetOverrides(ctx, overrides); err != nil {
		log.Warn("plan overrides", "err", err)
	}
	// Overrides made through the API (any process) are read back and
	// handed to the plan sink when they change.
	poller, err := planpub.NewOverridePoller(c.OverridePoll, store.Plans(), planSink, overrides, log)
	if err != nil {
		return err
	}

	alerter, err := c.alerter(ctx, brokers, mgr, log, reg)
	if err != nil {
		return err
	}
	defer alerter.Stop() // after the runner: drains the notifier queues

	// Incidents: consecutive windows of one condition, with the alerts'
	// hysteresis, stored before the engine state (crash-safe) and printed
	// as they open and close instead of a line per window.
	incSink, err := c.incidentSink(mgr, store, log, reg)
	if err != nil {
		return err
	}
	defer incSink.Close()
	if !c.Quiet {
		incSink.OnChanges(func(chs []incident.Change) {
			width, _ := c.lineWidth(e) // checked at the start
			for i := range chs {
				if ch := &chs[i]; ch.Kind != incident.Updated || c.PerWindow {
					_ = writeIncidentText(e.stdout, string(ch.Kind), &ch.Incident, width)
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
	incSink.OnChanges(alerter.Apply)
	alertSink, err := deliver.NewSink(alerter, store.Writer(), c.Group, incSink.Open, log)
	if err != nil {
		return err
	}
	// The stages of a window close, in order: the findings stored, then
	// the plans made (incidents ask for them), the incidents folded and
	// their alerts sent, the alert state stored.
	stages := stream.NewStages(store.Writer(), planSink, incSink, alertSink)
	runner, err := stream.New(stream.Config{Partitions: kafkasrc.StreamPartitions(parts), Backlog: kafkasrc.StreamPartitions(backlog), Group: c.Group, Afresh: !resume},
		kafkasrc.ForStream(src), stage, stages, store.Writer(), kafkasrc.DeadLettersForStream(dead), log, reg)
	if err != nil {
		return err
	}
	var found atomic.Int64
	runner.OnFinding(func(f *skew.Finding) {
		found.Add(1)
		if !c.Quiet && c.PerWindow && f.Kind != skew.KindSubtaskStats {
			width, _ := c.lineWidth(e) // checked at the start
			_ = writeText(e.stdout, f, width)
		}
	})

	opsSrv, err := ops.New(c.opsConfig(), reg, log)
	if err != nil {
		return err
	}
	api, err := c.server(serveStore(store), log, reg)
	if err != nil {
		return err
	}
	if api != nil {
		log.Info("serving the salting API and the web view", "addr", api.Addr())
		if !c.Quiet {
			fmt.Fprintf(e.stdout, "Web view: http://%s/\nSalting plans: curl http://%s/v1/salting (docs/api.md)\n\n", api.Addr(), api.Addr())
		}
	}
	opsSrv.AddCheck("kafka", src.Ready)
	opsSrv.AddCheck("clickhouse", store.Ping)
	log.Info("serving /metrics, /healthz, /readyz", "addr", opsSrv.Addr())

	var g oklogrun.Group
	if demo != nil && len(demo.Simulate) > 0 {
		feed, err := demo.feed(brokers, log)
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
	}
	g.Add(func() error { return runner.Run(ctx) }, func(error) { runner.Stop() })
	overridesDone := make(chan struct{})
	g.Add(func() error { return poller.Run(ctx, overridesDone) }, func(error) { close(overridesDone) })
	if api != nil {
		g.Add(func() error { return api.Run(ctx) }, func(error) { api.Stop() })
	}
	progressDone := make(chan struct{})
	g.Add(func() error { return runner.ReportProgress(ctx, 10*time.Second, log, progressDone) }, func(error) { close(progressDone) })
	g.Add(opsSrv.Serve, func(error) { opsSrv.Stop() })
	g.Add(func() error { <-ctx.Done(); return nil }, func(error) { cancel() })
	if c.Duration > 0 {
		timer := time.NewTimer(c.Duration)
		stopTimer := make(chan struct{})
		g.Add(func() error {
			select {
			case <-timer.C:
				log.Info("duration reached; stopping", "duration", c.Duration)
			case <-stopTimer:
			}
			return nil
		}, func(error) { timer.Stop(); close(stopTimer) })
	}
	err = g.Run()
	wc := stage.Counts()
	log.Info("stopped", "findings_written", found.Load(), "samples", wc.Samples, "metrics", wc.Metrics, "late", wc.Late, "rejected", wc.Rejected)
	return err
}

// alerter builds the alert state machine and its notifiers from the
// flags. With no notifier configured, alerts are still tracked (metrics
// skewlens_alert_*) and logged when they fire or resolve.
func (c *runCmd) alerter(ctx context.Context, brokers []string, mgr *plans.Manager, log *slog.Logger, reg prometheus.Registerer) (*deliver.Alerter, error) {
	var targets []deliver.Target
	if c.AlertmanagerURL != "" {
		n, err := alertmanager.New(c.alertmanagerConfig(), log, reg)
		if err != nil {
			return nil, err
		}
		targets = append(targets, deliver.Target{Name: "alertmanager", Notifier: n})
	}
	if c.AlertWebhookURL != "" {
		n, err := webhook.New(c.webhookConfig(), log, reg)
		if err != nil {
			return nil, err
		}
		targets = append(targets, deliver.Target{Name: "webhook", Notifier: n})
	}
	if c.AlertsTopic != "" {
		cfg := kafkanotify.DefaultConfig()
		cfg.Brokers, cfg.Topic = brokers, c.AlertsTopic
		n, err := kafkanotify.New(cfg, log, reg)
		if err != nil {
			return nil, err
		}
		if err := n.EnsureTopic(ctx); err != nil {
			return nil, err
		}
		targets = append(targets, deliver.Target{Name: "kafka", Notifier: n})
	}
	cfg := c.alertConfig()
	c.noteSaltingURL(cfg.Tracker.SaltingURL, len(targets) > 0, log)
	plan := planOf(mgr)
	cfg.Tracker.PlanVersion = func(job, task string) (uint64, bool) {
		v, _, ok := plan(job, task)
		return v, ok
	}
	return deliver.New(cfg, targets, log, reg)
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

// runFleetConfig is the fleet of --simulate fleet: seed 1, the
// simulator's default duration and interval, and, as simJobs, event time
// starting one duration before now.
func (c *demoCmd) runFleetConfig(now time.Time) simulate.FleetConfig {
	d := simulate.DefaultConfig()
	start := now.Add(-d.Duration).Truncate(d.Interval).UnixMilli()
	return c.fleetConfig(1, start, d.Duration, d.Interval, d.SamplesPerInterval)
}

// noteSaltingURL says once, at start-up, when the runbook link of skew
// alerts (salting, derived from --api-listen unless --salting-url is set)
// works on this host only: a loopback or unspecified address. It warns
// when alerts leave the process (external: Alertmanager, a webhook, a
// topic), where such a link is useless to whoever reads them, and says so
// at Info otherwise (alerts only in this log, as in make run, which reads
// them on this host).
func (c *runCmd) noteSaltingURL(salting string, external bool, log *slog.Logger) {
	if c.SaltingURL != "" || salting == "" || !hostLocal(salting) {
		return
	}
	const msg = "alerts link to the salting API on an address that works on this host only; set --salting-url to one their readers can reach"
	if external {
		log.Warn(msg, "salting_url", salting)
		return
	}
	log.Info(msg, "salting_url", salting)
}

// hostLocal reports whether rawURL's host is reachable from this host
// only, or from none: a loopback address, localhost, or an unspecified
// address (":8080", "0.0.0.0", "::"), which is a listen address, not one
// to connect to. An unparsable URL counts as local: it is no use either.
func hostLocal(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil {
		return true
	}
	h := u.Hostname()
	if h == "" || strings.EqualFold(h, "localhost") || strings.HasSuffix(strings.ToLower(h), ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

func (c *demoCmd) feed(brokers []string, log *slog.Logger) (*simfeed.Feed, error) {
	names := c.Simulate
	if len(names) == 1 && names[0] == "all" {
		names = nil
		for _, s := range simulate.Scenarios() {
			names = append(names, string(s))
		}
	}
	cfg := simfeed.DefaultConfig()
	cfg.Brokers, cfg.Speed = brokers, c.Speed
	if len(names) == 1 && names[0] == "fleet" {
		jobs, err := simulate.FleetJobs(c.runFleetConfig(time.Now()))
		if err != nil {
			return nil, err
		}
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
		cfg.Jobs = jobs
	} else {
		cfg.Jobs = simJobs(names, time.Now())
	}
	cfg.MetricsTopic, cfg.SamplesTopic = c.Topics[0], c.Topics[len(c.Topics)-1]
	return simfeed.New(cfg, log)
}

// incidentSink builds the incident tracker with the alerts' hysteresis
// and its sink. The runner resumes the open incidents from ClickHouse at
// each assignment of partitions (incidentsink.Sink.Resume).
func (c *runCmd) incidentSink(mgr *plans.Manager, store *clickhouse.Store, log *slog.Logger, reg prometheus.Registerer) (*incidentsink.Sink, error) {
	cfg := c.incidentConfig()
	cfg.Plan = planOf(mgr)
	tr, err := incident.New(cfg)
	if err != nil {
		return nil, err
	}
	return incidentsink.New(tr, store.Writer(), log, reg)
}

// The component configurations run builds from its flags, shared by Run
// and check.

func (c *runCmd) plansConfig() plans.Config {
	cfg := plans.DefaultConfig()
	cfg.Cooldown, cfg.TTL, cfg.Separator = c.PlanCooldown, c.PlanTTL, c.SaltSeparator
	return cfg
}

func (c *runCmd) opsConfig() ops.Config {
	cfg := ops.DefaultConfig()
	cfg.Listen = c.Listen
	return cfg
}

func (c *runCmd) alertmanagerConfig() alertmanager.Config {
	cfg := alertmanager.DefaultConfig()
	cfg.URL = c.AlertmanagerURL
	return cfg
}

func (c *runCmd) webhookConfig() webhook.Config {
	cfg := webhook.DefaultConfig()
	cfg.URL = c.AlertWebhookURL
	return cfg
}

// alertConfig is the alerter's configuration but for the plan versions,
// which come from the running plan manager.
func (c *runCmd) alertConfig() deliver.Config {
	salting := c.SaltingURL
	if salting == "" && c.APIListen != "" {
		salting = "http://" + c.APIListen
	}
	cfg := deliver.DefaultConfig()
	cfg.Tracker.RenotifyInterval = c.AlertRenotify
	cfg.Tracker.SaltingURL = salting
	return cfg
}

func (c *runCmd) incidentConfig() incident.Config {
	cfg := incident.DefaultConfig()
	cfg.Hysteresis = incident.Hysteresis{For: c.AlertFor, ResolveAfter: c.AlertResolve}
	// With statistics every job reports every window: the incidents (and
	// alerts) of a job gone silent wait for its run's end (job_end).
	cfg.RequireReports = c.Stats
	return cfg
}

// check is called before Run (checkCommand): everything run would
// reject later, once brokers, ClickHouse and migrations had started, is
// rejected here first. Each error names the flags of the part it checks.
func (c *runCmd) check() error {
	if err := c.checkSettings(); err != nil {
		return err
	}
	// run is for production: it starts no server and installs nothing.
	var missing []string
	if len(c.Brokers) == 0 {
		missing = append(missing, "--brokers=HOST:PORT")
	}
	if c.ClickhouseAddr == "" {
		missing = append(missing, "--clickhouse-addr=HOST:PORT")
	}
	if len(missing) > 0 {
		return usageError{fmt.Errorf("missing flags: %s (to try skewlens on an embedded broker and a local ClickHouse: skewlens demo)", strings.Join(missing, ", "))}
	}
	return nil
}

// checkSettings checks what run and demo share.
func (c *runCmd) checkSettings() error {
	if err := c.checkEngine(); err != nil {
		return err
	}
	part := func(flags string, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", flags, err)
		}
		return nil
	}
	errs := []error{
		part("--plan-cooldown, --plan-ttl, --salt-separator", c.plansConfig().Validate()),
		part("--listen", c.opsConfig().Validate()),
		part("--alert-renotify, --salting-url", c.alertConfig().Validate()),
		part("--alert-for, --alert-resolve-after", c.incidentConfig().Validate()),
		c.checkStore(),
		c.checkAPI(),
	}
	if c.AlertmanagerURL != "" {
		errs = append(errs, part("--alertmanager-url", c.alertmanagerConfig().Validate()))
	}
	if c.AlertWebhookURL != "" {
		errs = append(errs, part("--alert-webhook-url", c.webhookConfig().Validate()))
	}
	return errors.Join(errs...)
}
