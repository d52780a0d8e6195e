package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/store/clickhouse"
)

type migrateCmd struct {
	ClickhouseAddr string `env:"SKEWLENS_CLICKHOUSE_ADDR" required:"" placeholder:"HOST:PORT" help:"ClickHouse native-protocol address."`
	Database       string `env:"SKEWLENS_DATABASE" default:"skewlens" help:"ClickHouse database (created when missing)."`
	LogFormat      string `env:"SKEWLENS_LOG_FORMAT" enum:"text,json" default:"text" help:"Log format: ${enum}."`
}

// Run applies the versioned schema idempotently, as `run` does at startup,
// picking the dialect from the server version.
func (c *migrateCmd) Run(e *env) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	log := newLogger(e, c.LogFormat)
	store, err := clickhouse.New(clickhouse.Config{Addr: c.ClickhouseAddr, Database: c.Database}, log, prometheus.NewRegistry())
	if err != nil {
		return err
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "schema of %s is current (ClickHouse %s, %s dialect)\n", c.Database, store.ServerVersion(), store.Dialect())
	return err
}
