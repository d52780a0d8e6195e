package app

import (
	"context"
	"log/slog"

	oklogrun "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/skewlens/skewlens/internal/promreg"
	"github.com/skewlens/skewlens/sinks/clickhouse"
	"github.com/skewlens/skewlens/sinks/servestore"
)

// Serve serves the API until ctx is cancelled. It is stateless: every
// answer comes from ClickHouse, so replicas can run behind a load
// balancer. It starts while ClickHouse is down: the store connects (and
// migrates) in the background, /readyz answers 503 until it has, and
// only a failure no retry can fix (a refused login) stops serve.
// Shutdown order: the HTTP server drains, then the ClickHouse connections
// close.
func Serve(ctx context.Context, ch ClickHouse, api API, log *slog.Logger) error {
	reg := prometheus.NewRegistry()
	if _, err := promreg.Register(reg, "process", collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The tables may not exist yet when serve starts before the
	// pipeline: the connector migrates once connected.
	conn, err := clickhouse.NewConnector(ch.StoreConfig(), log, reg)
	if err != nil {
		return err
	}
	defer conn.Close()
	srv, err := NewServer(api, connectorStore(conn), log, reg)
	if err != nil {
		return err
	}
	log.Info("serving the salting API", "addr", srv.Addr(), "database", ch.Store.Database)
	var g oklogrun.Group
	connCtx, stopConn := context.WithCancel(ctx)
	g.Add(func() error {
		if err := conn.Run(connCtx); err != nil && connCtx.Err() == nil {
			return err
		}
		<-connCtx.Done()
		return nil
	}, func(error) { stopConn() })
	g.Add(func() error { return srv.Run(ctx) }, func(error) { srv.Stop() })
	g.Add(func() error { <-ctx.Done(); return nil }, func(error) { cancel() })
	return g.Run()
}

// connectorStore is the API's store while it may not be connected yet:
// the connector is every part.
func connectorStore(c *clickhouse.Connector) servestore.Store {
	return servestore.Store{Ready: c, Plans: c, Overrides: c, Audit: c, Findings: c, Stats: c, Incidents: c}
}
