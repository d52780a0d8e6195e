package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"

	"github.com/skewlens/skewlens/internal/app"
)

// analyzeCmd binds `skewlens analyze`: every setting of the replay
// (app.AnalyzeConfig).
type analyzeCmd struct {
	analyzeSettings
}

// analyzeSettings holds the replay's settings, unexported for the reason
// of runSettings.
type analyzeSettings struct{ app.AnalyzeConfig }

// Help is the detail analyze -h shows under the summary.
func (c *analyzeCmd) Help() string {
	return fmt.Sprintf("Exit status: 0 when findings (or none) were printed; 1 on an error, a flag's value out of its range included; "+
		"2 on a usage error (unknown flag, missing --input); %d when no valid record was read (no key sample or metric: a wrong file, format or empty --input).", exitNoRecords)
}

// check is called before Run (checkCommand).
func (c *analyzeCmd) check() error { return c.AnalyzeConfig.Check() }

// Run replays the inputs (app.Analyze) until they end or SIGINT.
func (c *analyzeCmd) Run(e *env) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := app.Analyze(ctx, c.AnalyzeConfig, e.streams())
	if errors.Is(err, app.ErrNoRecords) {
		return exitError{exitNoRecords} // said on stderr
	}
	return err
}

// exitNoRecords is analyze's exit code when no key sample or metric was
// read (app.ErrNoRecords; docs/cli.md, analyze -h); 1 is any other failure
// and 2 a usage error.
const exitNoRecords = 3
