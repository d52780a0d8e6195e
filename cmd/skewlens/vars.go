package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/skewlens/skewlens/alert/incident"
	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/internal/ops"
	"github.com/skewlens/skewlens/internal/simfeed"
	"github.com/skewlens/skewlens/pipeline/kafkasrc"
	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/plans"
	"github.com/skewlens/skewlens/serve"
	"github.com/skewlens/skewlens/sinks/planpub"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/keygroup"
	"github.com/skewlens/skewlens/store/clickhouse"
	"github.com/skewlens/skewlens/top"
)

// defaultVars are the kong variables the flags take their defaults from
// (default:"${plan_cooldown}"). Every value comes from its component's
// DefaultConfig or Default constant, so a default is stated once, in the
// component, and -h shows it. Defaults that belong to the command line
// alone (output formats, --state-dir, ...) stay in the flag tags.
func defaultVars() kong.Vars {
	pl := plans.DefaultConfig()
	ch := clickhouse.DefaultConfig()
	src := kafkasrc.DefaultConfig()
	hyst := incident.DefaultConfig().Hysteresis
	vars := kong.Vars{
		"max_subtask": strconv.Itoa(keygroup.UpperBoundMaxParallelism - 1),
		"max_width":   strconv.Itoa(top.MaxWidth),

		// ClickHouse (run, serve, top, migrate).
		"database": ch.Database,

		// run.
		"group":             src.GroupID,
		"broker_wait":       fmtDuration(src.BrokerWait),
		"topics":            strings.Join(src.Topics, ","),
		"dead_letter_topic": src.DeadLetterTopic,
		// A topic run or demo creates: 4 partitions, enough for a few
		// instances; replication 1, which a production cluster raises.
		"topic_partitions":         "4",
		"topic_replication_factor": "1",
		"ops_listen":               ops.DefaultConfig().Listen,
		"speed":                    fmtFloat(simfeed.DefaultConfig().Speed),
		"plans_topic":              planpub.DefaultConfig().Topic,
		"plan_cooldown":            fmtDuration(pl.Cooldown),
		"plan_ttl":                 fmtDuration(pl.TTL),
		"override_poll":            fmtDuration(planpub.DefaultConfig().OverridePoll),
		"alert_for":                fmtDuration(hyst.For),
		"alert_resolve":            fmtDuration(hyst.ResolveAfter),

		// serve (run serves no API unless asked).
		"serve_listen": serve.DefaultConfig().Addr,

		// simulate.
		"sim_scenarios": simScenarios(),
	}
	// The range bounds the components' Configs name.
	for k, v := range knob.Vars(skew.Config{}, window.Config{}, kafkasrc.Config{}, plans.Config{}, top.Config{}, simulate.Config{}, simulate.FleetConfig{}) {
		vars[k] = v
	}
	return vars
}

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// fmtDuration writes d as people write it in flags (knob.Duration).
func fmtDuration(d time.Duration) string { return knob.Duration(d) }

// simScenarios lists simulate's scenarios for its help.
func simScenarios() string {
	var names []string
	for _, sc := range simulate.Scenarios() {
		names = append(names, string(sc))
	}
	return strings.Join(names, ",")
}
