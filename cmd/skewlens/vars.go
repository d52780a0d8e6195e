package main

import (
	"strconv"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/pipeline/kafkasrc"
	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/serve"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/keygroup"
	"github.com/skewlens/skewlens/skew/plans"
	"github.com/skewlens/skewlens/top"
)

// defaultVars are the kong variables of the help texts and range tags.
// The settings' defaults and ranges are their components' tags
// (internal/knob); what is left here is derived: the bounds those tags
// name (knob.Vars), serve's listen address as the default of its
// --api-listen (run's is empty), and the lists help shows.
func defaultVars() kong.Vars {
	vars := kong.Vars{
		"max_subtask":   strconv.Itoa(keygroup.UpperBoundMaxParallelism - 1),
		"max_width":     strconv.Itoa(top.MaxWidth),
		"serve_listen":  serve.DefaultConfig().Addr,
		"sim_scenarios": simScenarios(),
	}
	for k, v := range knob.Vars(skew.Config{}, window.Config{}, kafkasrc.Config{}, plans.Config{}, top.Config{}, simulate.Config{}, simulate.FleetConfig{}) {
		vars[k] = v
	}
	return vars
}

// simScenarios lists simulate's scenarios for its help.
func simScenarios() string {
	var names []string
	for _, sc := range simulate.Scenarios() {
		names = append(names, string(sc))
	}
	return strings.Join(names, ",")
}
