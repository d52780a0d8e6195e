package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skewlens/skewlens/internal/app"
	"github.com/skewlens/skewlens/pipeline/simulate"
)

// simulateCmd binds `skewlens simulate`: every setting of the simulation
// (app.SimulateConfig).
type simulateCmd struct {
	simulateSettings
}

// simulateSettings holds the simulation's settings, unexported for the
// reason of runSettings.
type simulateSettings struct{ app.SimulateConfig }

// fleetFlags play a fleet of jobs in demo (--simulate fleet): they bind
// the FleetConfig's flags, as simulate's do.
type fleetFlags struct {
	Fleet simulate.FleetConfig `embed:""`
}

// fleet reports whether the flags ask for a fleet (app.FleetAsked).
func (f *fleetFlags) fleet() bool { return app.FleetAsked(f.Fleet) }

// fleetConfig returns the fleet's configuration (app.FleetOf).
func (f *fleetFlags) fleetConfig(seed uint64, start int64, duration, interval time.Duration, samples int) simulate.FleetConfig {
	return app.FleetOf(f.Fleet, seed, start, duration, interval, samples)
}

// checkFleet checks the rules between the fleet flags (app.CheckFleet).
func (f *fleetFlags) checkFleet() error { return app.CheckFleet(f.Fleet) }

// Validate is kong's check of the scenario argument, which is optional (a
// fleet has none) and so cannot be a kong enum: a name that is not a
// scenario is a usage error, as an enum's would be.
func (c *simulateCmd) Validate() error {
	if c.Scenario == "" || slices.Contains(simulate.Scenarios(), simulate.Scenario(c.Scenario)) {
		return nil
	}
	var quoted []string
	for _, sc := range simulate.Scenarios() {
		quoted = append(quoted, strconv.Quote(string(sc)))
	}
	return fmt.Errorf("<scenario> must be one of %s but got %q", strings.Join(quoted, ","), c.Scenario)
}

// check is called before Run (checkCommand).
func (c *simulateCmd) check() error { return c.SimulateConfig.Check() }

// Run writes the simulation (app.Simulate).
func (c *simulateCmd) Run(e *env) error { return app.Simulate(c.SimulateConfig, e.streams()) }
