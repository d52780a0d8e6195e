package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/skewlens/skewlens/internal/app"
)

type serveCmd struct {
	clickhouseFlags `set:"clickhouse_addr_note=Required: the one skewlens run writes to."`
	logFlags
	app.API `set:"api_listen=${serve_listen}"`
}

// Validate is called by kong after parsing.
func (c *serveCmd) Validate() error { return c.RequireAddr() }

// check is called before Run (checkCommand).
func (c *serveCmd) check() error {
	if c.APIListen == "" {
		return fmt.Errorf("--api-listen is empty: nothing to serve")
	}
	return errors.Join(c.ClickHouse.Check(), c.API.Check())
}

// Run serves the API until SIGINT or SIGTERM (app.Serve).
func (c *serveCmd) Run(e *env) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	return app.Serve(ctx, c.ClickHouse, c.API, c.logger(e.stderr, nil))
}
