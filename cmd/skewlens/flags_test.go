package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/skewlens/skewlens/internal/ops"
	"github.com/skewlens/skewlens/internal/simfeed"
	"github.com/skewlens/skewlens/pipeline/kafkasrc"
	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/serve"
	"github.com/skewlens/skewlens/sinks/clickhouse"
	"github.com/skewlens/skewlens/sinks/planpub"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/plans"
	"github.com/skewlens/skewlens/top"
)

// parse parses args into a fresh command tree without running it.
func parse(t *testing.T, args ...string) *cli {
	t.Helper()
	var c cli
	var out bytes.Buffer
	p, err := newParser(&c, &env{stdin: strings.NewReader(""), stdout: &out, stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return &c
}

// clearEnv unsets every SKEWLENS_* variable for the test, so that the
// environment the tests run in cannot change the defaults checked.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "SKEWLENS_") {
			t.Setenv(k, "") // restored after the test
			os.Unsetenv(k)
		}
	}
}

// TestFlagDefaultsAreComponentDefaults checks that a command line without
// flags configures every component with its DefaultConfig: the flags state
// no default of their own.
func TestFlagDefaultsAreComponentDefaults(t *testing.T) {
	clearEnv(t)
	an := parse(t, "analyze", "-i", "x").Analyze
	if got := an.Engine; got != skew.DefaultConfig() {
		t.Errorf("analyze engine config\n got %+v\nwant %+v", got, skew.DefaultConfig())
	}
	if an.Window.AllowedLatenessMs != 0 {
		t.Errorf("allowed lateness %d ms, want 0", an.Window.AllowedLatenessMs)
	}

	r := parse(t, "run").Run
	if got := r.Engine; got != skew.DefaultConfig() {
		t.Errorf("run engine config\n got %+v\nwant %+v", got, skew.DefaultConfig())
	}
	pl := plans.DefaultConfig()
	ch := clickhouse.DefaultConfig()
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"group", r.Kafka.GroupID, kafkasrc.DefaultConfig().GroupID},
		{"topics", r.Kafka.Topics, kafkasrc.DefaultConfig().Topics},
		{"dead-letter-topic", r.Kafka.DeadLetterTopic, kafkasrc.DefaultConfig().DeadLetterTopic},
		{"database", r.Store.Database, ch.Database},
		{"listen", r.Ops.Listen, ops.DefaultConfig().Listen},
		{"speed (demo)", parse(t, "demo").Demo.Feed.Speed, simfeed.DefaultConfig().Speed},
		{"plans-topic", r.PlanPublisher.Topic, planpub.DefaultConfig().Topic},
		{"plan-cooldown", r.PlanLifecycle.Cooldown, pl.Cooldown},
		{"plan-ttl", r.PlanLifecycle.TTL, pl.TTL},
		{"override-poll", r.PlanPublisher.OverridePoll, planpub.DefaultConfig().OverridePoll},
		{"api-listen (run serves no API by default)", r.APIListen, ""},
		{"run's store config", func() clickhouse.Config { c := r.StoreConfig(); c.Addr = ch.Addr; return c }(), ch},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("run --%s: %v, want %v", c.name, c.got, c.want)
		}
	}

	if got := parse(t, "serve", "--clickhouse-addr", "h:9000").Serve.APIListen; got != serve.DefaultConfig().Addr {
		t.Errorf("serve --api-listen %q, want %q", got, serve.DefaultConfig().Addr)
	}

	tc := parse(t, "top", "--clickhouse-addr", "h:9000").Top
	wantTop := top.DefaultConfig()
	if tc.Top.Refresh != wantTop.Refresh || tc.Top.MaxRows != wantTop.MaxRows || tc.Top.Windows != wantTop.Windows ||
		tc.Top.Lookback != wantTop.Lookback || tc.Top.Color != wantTop.Color || tc.Store.Database != ch.Database {
		t.Errorf("top flags %+v, want the defaults %+v", tc, wantTop)
	}

	// simulate differs from simulate.DefaultConfig on purpose in three
	// fields: a fixed seed and every metric format and naming generation.
	sim := parse(t, "simulate", "hot_key").Simulate.JobConfig()
	want := simulate.DefaultConfig()
	want.Scenario, want.Seed, want.MetricFormat, want.Naming = simulate.HotKey, 1, simulate.FormatMixed, simulate.NamingMixed
	if !reflect.DeepEqual(sim, want) {
		t.Errorf("simulate config\n got %+v\nwant %+v", sim, want)
	}
}

// TestEveryFlagReadsEnv checks that each flag of each command reads
// SKEWLENS_<FLAG NAME>, and that the variable takes effect.
func TestEveryFlagReadsEnv(t *testing.T) {
	clearEnv(t)
	var out bytes.Buffer
	p, err := newParser(&cli{}, &env{stdout: &out, stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var walk func(node *kong.Node)
	walk = func(node *kong.Node) {
		for _, f := range node.Flags {
			if f.Name == "help" {
				continue
			}
			if f.Name == "version" { // an action, as --help: no variable
				if len(f.Envs) != 0 {
					t.Errorf("--version reads %v, want none", f.Envs)
				}
				continue
			}
			n++
			want := "SKEWLENS_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
			if !reflect.DeepEqual(f.Envs, []string{want}) {
				t.Errorf("%s --%s reads %v, want [%s]", node.Path(), f.Name, f.Envs, want)
			}
		}
		for _, c := range node.Children {
			walk(c)
		}
	}
	walk(p.Model.Node)
	if n < 80 {
		t.Errorf("only %d flags seen", n)
	}

	// A variable changes a flag's value, and the command line wins over it.
	t.Setenv("SKEWLENS_PLAN_COOLDOWN", "3m")
	t.Setenv("SKEWLENS_CLICKHOUSE_ADDR", "env-host:9000")
	r := parse(t, "run").Run
	if r.PlanLifecycle.Cooldown.String() != "3m0s" || r.ClickhouseAddr != "env-host:9000" {
		t.Errorf("from the environment: --plan-cooldown %s, --clickhouse-addr %q", r.PlanLifecycle.Cooldown, r.ClickhouseAddr)
	}
	if r := parse(t, "run", "--plan-cooldown", "4m").Run; r.PlanLifecycle.Cooldown.String() != "4m0s" {
		t.Errorf("the command line lost to the environment: --plan-cooldown %s", r.PlanLifecycle.Cooldown)
	}
	// The address from the environment satisfies top's requirement.
	if tc := parse(t, "top").Top; tc.ClickhouseAddr != "env-host:9000" {
		t.Errorf("top --clickhouse-addr %q", tc.ClickhouseAddr)
	}
}

// TestConfigFilePrecedence checks docs/cli.md's promise for run: flags win
// over the environment, which wins over the --config file.
func TestConfigFilePrecedence(t *testing.T) {
	clearEnv(t)
	file := filepath.Join(t.TempDir(), "skewlens.yaml")
	if err := os.WriteFile(file, []byte("plan_ttl: 7m\nplan_cooldown: 8m\ngroup: from-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SKEWLENS_PLAN_COOLDOWN", "9m")
	r := parse(t, "run", "--config", file, "--group", "from-flag").Run
	if r.PlanLifecycle.TTL.String() != "7m0s" || r.PlanLifecycle.Cooldown.String() != "9m0s" || r.Kafka.GroupID != "from-flag" {
		t.Errorf("file < env < flag: --plan-ttl %s (want 7m), --plan-cooldown %s (want 9m from env), --group %q (want from-flag)",
			r.PlanLifecycle.TTL, r.PlanLifecycle.Cooldown, r.Kafka.GroupID)
	}
}
