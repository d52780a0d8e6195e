package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/skewlens/skewlens/internal/app"
	"github.com/skewlens/skewlens/internal/cliconf"
)

// runCmd binds `skewlens run`: every setting of the pipeline
// (app.RunConfig) and the output for people.
type runCmd struct {
	cliconf.ConfigFlag
	runSettings
	logFlags
	Quiet     bool `help:"Do not print findings to the terminal."`
	PerWindow bool `help:"Print every finding and every incident update, a line per window, not only incidents as they open and close."`
	textFlags
}

// runSettings holds the pipeline's settings. kong calls the Validate
// method of every exported struct it binds while it parses, before the
// command's check, which names the flag of a bad value and where it was
// set; an unexported field is not walked, so the components' Validate
// runs once, in RunConfig.Check.
type runSettings struct{ app.RunConfig }

// Run runs the pipeline (app.Run) until interrupted.
func (c *runCmd) Run(e *env) error { return c.start(e, nil) }

// start runs the pipeline, with demo's plumbing when demo is not nil.
func (c *runCmd) start(e *env, demo *app.Demo) error {
	if _, err := c.lineWidth(e); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	out := app.Output{W: e.stdout, Quiet: c.Quiet, PerWindow: c.PerWindow, Width: func() int {
		w, _ := c.lineWidth(e) // checked above
		return w
	}}
	return app.Run(ctx, c.RunConfig, demo, out, c.logger(e.stderr, nil))
}

// check is called before Run (checkCommand): everything run would
// reject later is rejected here first; run is for production, and needs
// the brokers and ClickHouse.
func (c *runCmd) check() error {
	if err := c.RunConfig.Check(); err != nil {
		return err
	}
	if err := c.RequireServers(); err != nil {
		return usageError{err}
	}
	return nil
}
