package main

import (
	"github.com/skewlens/skewlens/internal/app"
)

// demoCmd binds `skewlens demo`: run with demo's plumbing (app.Demo).
// make run calls it.
type demoCmd struct {
	runCmd
	demoSettings
	fleetFlags
}

// demoSettings holds the simulation's settings, unexported for the
// reason of runSettings.
type demoSettings struct{ app.Demo }

// Run runs the pipeline as run does, on embedded servers where no
// address is given, with the simulated incidents.
func (c *demoCmd) Run(e *env) error {
	c.Demo.Fleet = c.fleetConfig(0, 0, 0, 0, 0) // the demo sets these five
	return c.start(e, &c.Demo)
}

// check is run's, but for the addresses run requires, and the
// simulation's.
func (c *demoCmd) check() error {
	if err := c.RunConfig.Check(); err != nil {
		return err
	}
	if err := c.checkFleet(); err != nil {
		return err
	}
	c.Demo.Fleet = c.fleetConfig(0, 0, 0, 0, 0)
	return c.Demo.Check(c.fleet())
}

// usageError is a command line that lacks what the command needs: exit
// status 2, as for a flag kong finds missing.
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }
