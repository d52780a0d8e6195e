package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/sinks/clickhouse"
)

type migrateCmd struct {
	clickhouseFlags `set:"clickhouse_addr_note=Required, but with --print; the database is created when missing."`
	logFlags
	Print string `enum:",legacy,modern" default:"" placeholder:"DIALECT" help:"Print the DDL for a manual install instead of applying it, connecting to nothing: legacy (ClickHouse 18.16 to 20.2) or modern (20.3 and later). With --clickhouse-cluster, in its cluster form."`
}

// Validate is called by kong after parsing.
func (c *migrateCmd) Validate() error {
	if c.Print != "" {
		return nil
	}
	return c.RequireAddr()
}

// check is called before Run (checkCommand).
func (c *migrateCmd) check() error { return c.ClickHouse.Check() }

// Run applies the versioned schema idempotently, as `run` does at startup,
// picking the dialect from the server version, or with --print writes it.
func (c *migrateCmd) Run(e *env) error {
	if c.Print != "" {
		return clickhouse.WriteDDL(e.stdout, clickhouse.Dialect(c.Print), c.StoreConfig())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	log := c.logger(e.stderr, nil)
	store, err := clickhouse.New(ctx, c.StoreConfig(), log, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "schema of %s is current (ClickHouse %s, %s dialect)\n", c.Store.Database, store.ServerVersion(), store.Dialect())
	return err
}
