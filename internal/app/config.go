package app

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/skewlens/skewlens/internal/ops"
	"github.com/skewlens/skewlens/pipeline/kafkasrc"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/serve"
	"github.com/skewlens/skewlens/sinks/alertdeliver"
	"github.com/skewlens/skewlens/sinks/alertmanager"
	"github.com/skewlens/skewlens/sinks/clickhouse"
	"github.com/skewlens/skewlens/sinks/kafkanotify"
	"github.com/skewlens/skewlens/sinks/planpub"
	"github.com/skewlens/skewlens/sinks/webhook"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/alert"
	"github.com/skewlens/skewlens/skew/incident"
	"github.com/skewlens/skewlens/skew/plans"
)

// RunConfig is every setting of `skewlens run`. The command line binds
// it (kong tags); the components' settings are their own Configs,
// embedded.
type RunConfig struct {
	Kafka                  kafkasrc.Config `embed:"" set:"brokers_note=Required by run; demo starts an embedded in-process broker on loopback without them."`
	CreateTopics           bool            `help:"Create the topics of --topics and --dead-letter-topic when missing, with --topic-partitions and --topic-replication-factor (default: stop, naming the command that creates them). demo always creates them."`
	TopicPartitions        int             `default:"4" help:"Partitions of a topic --create-topics creates: at least the instances of the consumer group (docs/performance.md, Running at scale)." range:"[1,]"`
	TopicReplicationFactor int             `default:"1" help:"Replication factor of a topic --create-topics creates: 3 on a production cluster." range:"[1,]"`
	ClickHouse             `set:"clickhouse_addr_note=Required by run; demo starts a local clickhouse-server under --state-dir without it."`
	StateDir               string              `default:".state" help:"Where demo's embedded servers keep their data." range:"[1,]"`
	Ops                    ops.Config          `embed:""`
	MemoryLimit            int                 `name:"memory-limit-mib" placeholder:"MIB" help:"Soft memory limit of the Go runtime, in MiB: near it the garbage collector runs more often instead of letting the heap grow (about 85% of what the instance may use; 100k subtasks fit in 512 MB with 400). 0: none, or the GOMEMLIMIT variable." range:"[0,1048576]"`
	Duration               time.Duration       `help:"Stop after this long (default: run until interrupted)." range:"[0s,]"`
	Stats                  bool                `default:"true" negatable:"" help:"Write a subtask_stats row per subtask and window (rates, busy/back-pressured time, pools, queues, checkpoint times)."`
	PlanPublisher          planpub.Config      `embed:""`
	PlanLifecycle          plans.Config        `embed:""`
	Alertmanager           alertmanager.Config `embed:""`
	Webhook                webhook.Config      `embed:""`
	AlertsKafka            kafkanotify.Config  `embed:""`
	Hysteresis             incident.Hysteresis `embed:""`
	Alerts                 alert.Config        `embed:""`
	// The pipeline serves the API only when asked (make run does); the
	// service proper is skewlens serve.
	API    `set:"api_listen="`
	Window window.Config `embed:""`
	Engine skew.Config   `embed:""`
}

// Narrowed gives the settings, by flag name, whose range the commands
// narrow from the one their component declares: the alert state machine fires
// an alert at an incident's first finding when Hysteresis.For is not
// positive (its tests do), but run's alerts wait for an incident to last.
func Narrowed() map[string]string { return map[string]string{"alert-for": "(0s,]"} }

// ClickHouse is the connection of every command that uses ClickHouse.
// The address has no default: run requires it, demo starts a local
// server without it, and serve, top and migrate require it.
type ClickHouse struct {
	ClickhouseAddr string            `placeholder:"HOST:PORT" help:"ClickHouse native-protocol address. ${clickhouse_addr_note}"`
	Store          clickhouse.Config `embed:""`
}

// StoreConfig is the store's configuration with the given address.
func (c *ClickHouse) StoreConfig() clickhouse.Config {
	cfg := c.Store
	if c.ClickhouseAddr != "" {
		cfg.Addr = c.ClickhouseAddr
	}
	return cfg
}

// Check checks the store's configuration; without an address (demo's
// local server) it checks the rest.
func (c *ClickHouse) Check() error {
	cfg := c.StoreConfig()
	if c.ClickhouseAddr == "" && cfg.Cluster != "" {
		// demo's local server is one server, not a cluster.
		return errors.New("--clickhouse-cluster: needs --clickhouse-addr, a server of the cluster")
	}
	// The cluster is checked on its own, so that each error names its
	// flag.
	cluster := cfg.Cluster
	cfg.Cluster = ""
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("--clickhouse-addr, --database: %w", err)
	}
	if cluster != "" {
		cfg.Cluster = cluster
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("--clickhouse-cluster: %w", err)
		}
	}
	return nil
}

// RequireAddr fails, as kong does for a missing required flag, when no
// address was given.
func (c *ClickHouse) RequireAddr() error {
	if c.ClickhouseAddr == "" {
		return errors.New("missing flags: --clickhouse-addr=HOST:PORT")
	}
	return nil
}

// API configures the salting-suggestion HTTP API, served by `skewlens
// serve` and, when asked, by run.
type API struct {
	APIListen string `default:"${api_listen}" group:"API" help:"Address of the salting-suggestion API (/v1/salting, /v1/findings, /v1/stats; docs/api.md). Empty: no API."`
	TokenFile string `group:"API" placeholder:"FILE" type:"existingfile" help:"YAML map of name: bearer token allowed to pin, override or exclude (the name is audited). Without it the API is read-only."`
	TLSCert   string `group:"API" placeholder:"FILE" type:"existingfile" help:"PEM certificate (chain) to serve HTTPS with; needs --tls-key."`
	TLSKey    string `group:"API" placeholder:"FILE" type:"existingfile" help:"PEM private key of --tls-cert."`
}

// ServeConfig returns serve's configuration: its defaults with the
// address, the TLS files and the tokens of the token file.
func (a *API) ServeConfig() (serve.Config, error) {
	cfg := serve.DefaultConfig()
	cfg.Addr, cfg.TLSCertFile, cfg.TLSKeyFile = a.APIListen, a.TLSCert, a.TLSKey
	if a.TokenFile != "" {
		b, err := os.ReadFile(a.TokenFile)
		if err != nil {
			return cfg, fmt.Errorf("--token-file: %w", err)
		}
		if cfg.Tokens, err = serve.ParseTokens(b); err != nil {
			return cfg, fmt.Errorf("--token-file %s: %w", a.TokenFile, err)
		}
	}
	return cfg, nil
}

// Check checks the API's configuration, tokens included, when it is
// served.
func (a *API) Check() error {
	if a.APIListen == "" {
		return nil
	}
	cfg, err := a.ServeConfig()
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("--api-listen, --token-file, --tls-cert, --tls-key: %w", err)
	}
	return nil
}

// Check checks everything run would reject later, once brokers,
// ClickHouse and migrations had started. Each error names the flags of
// the part it checks.
func (c *RunConfig) Check() error {
	if err := c.Engine.Validate(); err != nil {
		return err
	}
	part := func(flags string, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", flags, err)
		}
		return nil
	}
	errs := []error{
		part("--brokers, --group, --topics, --dead-letter-topic, --broker-wait", c.Kafka.Validate()),
		part("--out-of-orderness, --allowed-lateness", c.Window.Validate()),
		part("--plans-topic, --override-poll", c.PlanPublisher.Validate()),
		part("--plan-cooldown, --plan-ttl, --salt-separator", c.plansConfig().Validate()),
		part("--listen", c.Ops.Validate()),
		part("--alert-renotify, --salting-url", c.alertConfig().Validate()),
		part("--alert-for, --alert-resolve-after", c.incidentConfig().Validate()),
		c.ClickHouse.Check(),
		c.API.Check(),
	}
	if c.Alertmanager.URL != "" {
		errs = append(errs, part("--alertmanager-url", c.Alertmanager.Validate()))
	}
	if c.Webhook.URL != "" {
		errs = append(errs, part("--alert-webhook-url", c.Webhook.Validate()))
	}

	return errors.Join(errs...)
}

// RequireServers is run's rule: it is for production, and starts no
// server and installs nothing, so it needs the brokers and ClickHouse.
func (c *RunConfig) RequireServers() error {
	var missing []string
	if len(c.Kafka.Brokers) == 0 {
		missing = append(missing, "--brokers=HOST:PORT")
	}
	if c.ClickhouseAddr == "" {
		missing = append(missing, "--clickhouse-addr=HOST:PORT")
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing flags: %s (to try skewlens on an embedded broker and a local ClickHouse: skewlens demo)", strings.Join(missing, ", "))
	}
	return nil
}

// The component configurations made from the settings that are not yet
// the components' own.

// plansConfig salts with the engine's separator.
func (c *RunConfig) plansConfig() plans.Config {
	cfg := c.PlanLifecycle
	cfg.Separator = c.Engine.SaltSeparator
	return cfg
}

// alertConfig is the alerter's configuration but for the plan versions,
// which come from the running plan manager. The runbook link of skew
// alerts defaults to the API this process serves.
func (c *RunConfig) alertConfig() alertdeliver.Config {
	cfg := alertdeliver.DefaultConfig()
	causes := cfg.StateMachine.Causes
	cfg.StateMachine = c.Alerts
	cfg.StateMachine.Causes = causes
	if cfg.StateMachine.SaltingURL == "" && c.APIListen != "" {
		cfg.StateMachine.SaltingURL = "http://" + c.APIListen
	}
	return cfg
}

func (c *RunConfig) incidentConfig() incident.Config {
	cfg := incident.DefaultConfig()
	cfg.Hysteresis = c.Hysteresis
	// With statistics every job reports every window: the incidents (and
	// alerts) of a job gone silent wait for its run's end (job_end).
	cfg.RequireReports = c.Stats
	return cfg
}
