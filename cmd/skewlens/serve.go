package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	oklogrun "github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/skewlens/skewlens/internal/promreg"
	"github.com/skewlens/skewlens/serve"
	"github.com/skewlens/skewlens/serve/servestore"
	"github.com/skewlens/skewlens/store/clickhouse"
)

// apiFlags configure the salting-suggestion HTTP API, served by
// `skewlens serve` and, for the embedded demo, by `skewlens run`.
type apiFlags struct {
	APIListen string `default:"${api_listen}" group:"API" help:"Address of the salting-suggestion API (/v1/salting, /v1/findings, /v1/stats; docs/api.md). Empty: no API."`
	TokenFile string `group:"API" placeholder:"FILE" type:"existingfile" help:"YAML map of name: bearer token allowed to pin, override or exclude (the name is audited). Without it the API is read-only."`
	TLSCert   string `group:"API" placeholder:"FILE" type:"existingfile" help:"PEM certificate (chain) to serve HTTPS with; needs --tls-key."`
	TLSKey    string `group:"API" placeholder:"FILE" type:"existingfile" help:"PEM private key of --tls-cert."`
}

// server returns the API server on store, or nil when --api-listen is
// empty.
func (f *apiFlags) server(store servestore.Store, log *slog.Logger, reg serve.Registry) (*serve.Server, error) {
	if f.APIListen == "" {
		return nil, nil
	}
	cfg, err := f.serveConfig()
	if err != nil {
		return nil, err
	}
	srv, err := serve.New(cfg, store, log, reg)
	if err != nil {
		return nil, fmt.Errorf("API: %w", err)
	}
	if f.TokenFile != "" && len(cfg.Tokens) == 0 {
		// Given a token file, the operator meant to allow writes: an empty
		// one is more likely a mistake than a choice.
		log.Warn(fmt.Sprintf("read-only API: no write tokens in %s", f.TokenFile), "token_file", f.TokenFile)
	}
	return srv, nil
}

// checkAPI checks the API's configuration, tokens included, when it is
// served.
func (f *apiFlags) checkAPI() error {
	if f.APIListen == "" {
		return nil
	}
	cfg, err := f.serveConfig()
	if err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("--api-listen, --token-file, --tls-cert, --tls-key: %w", err)
	}
	return nil
}

// serveConfig returns serve.DefaultConfig with the flags' address, TLS files
// and the tokens of --token-file.
func (f *apiFlags) serveConfig() (serve.Config, error) {
	cfg := serve.DefaultConfig()
	cfg.Addr, cfg.TLSCertFile, cfg.TLSKeyFile = f.APIListen, f.TLSCert, f.TLSKey
	if f.TokenFile != "" {
		b, err := os.ReadFile(f.TokenFile)
		if err != nil {
			return cfg, fmt.Errorf("--token-file: %w", err)
		}
		if cfg.Tokens, err = serve.ParseTokens(b); err != nil {
			return cfg, fmt.Errorf("--token-file %s: %w", f.TokenFile, err)
		}
	}
	return cfg, nil
}

type serveCmd struct {
	clickhouseFlags `set:"clickhouse_addr_note=Required: the one skewlens run writes to."`
	logFlags
	apiFlags `set:"api_listen=${serve_listen}"`
}

// Validate is called by kong after parsing.
func (c *serveCmd) Validate() error { return c.requireAddr() }

// check is called before Run (checkCommand).
func (c *serveCmd) check() error {
	if c.APIListen == "" {
		return fmt.Errorf("--api-listen is empty: nothing to serve")
	}
	return errors.Join(c.checkStore(), c.checkAPI())
}

// Run serves the API until SIGINT or SIGTERM. It is stateless: every
// answer comes from ClickHouse, so replicas can run behind a load
// balancer. It starts while ClickHouse is down: the store connects (and
// migrates) in the background, /readyz answers 503 until it has, and
// only a failure no retry can fix (a refused login) stops serve.
// Shutdown order: the HTTP server drains, then the ClickHouse connections
// close.
func (c *serveCmd) Run(e *env) error {
	log := c.logger(e.stderr, nil)
	reg := prometheus.NewRegistry()
	if _, err := promreg.Register(reg, "process", collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	// The tables may not exist yet when serve starts before the
	// pipeline: the connector migrates once connected.
	conn, err := clickhouse.NewConnector(c.storeConfig(), log, reg)
	if err != nil {
		return err
	}
	defer conn.Close()
	srv, err := c.server(connectorStore(conn), log, reg)
	if err != nil {
		return err
	}
	log.Info("serving the salting API", "addr", srv.Addr(), "database", c.Database)
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

// serveStore is the API's store: the parts of the ClickHouse store it
// reads and writes.
func serveStore(st *clickhouse.Store) servestore.Store {
	return servestore.Store{Ready: st, Plans: st.Plans(), Overrides: st.Writer(), Audit: st.Audit(),
		Findings: st.Findings(), Stats: st.Stats(), Incidents: st.Incidents()}
}
