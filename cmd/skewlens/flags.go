package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"

	"github.com/alecthomas/kong"
	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/store/clickhouse"
)

// clickhouseFlags connect a command to ClickHouse; run, serve, top and
// migrate embed them. The address is required by every command but run,
// which starts a local server without one: kong's required tag cannot
// differ between embeddings, so those commands check it in their
// Validate (requireAddr), which kong calls while parsing.
type clickhouseFlags struct {
	ClickhouseAddr string `placeholder:"HOST:PORT" help:"ClickHouse native-protocol address. ${clickhouse_addr_note}"`
	Database       string `default:"${database}" help:"ClickHouse database." range:"[1,]"`
	// ClickhouseCluster is clickhouse.Config.Cluster; empty (the default)
	// is one server.
	ClickhouseCluster string `placeholder:"NAME" help:"ClickHouse cluster (a remote_servers name) to keep the tables on: ON CLUSTER DDL, Replicated and Distributed tables (docs/queries.md). Empty: one server."`
}

// storeConfig returns the store configuration: the defaults of
// clickhouse.DefaultConfig with the flags' address and database.
func (f *clickhouseFlags) storeConfig() clickhouse.Config {
	cfg := clickhouse.DefaultConfig()
	cfg.Addr, cfg.Database, cfg.Cluster = f.ClickhouseAddr, f.Database, f.ClickhouseCluster
	return cfg
}

// checkStore checks the store configuration the flags make; without an
// address (run's local server) it checks the database name alone.
func (f *clickhouseFlags) checkStore() error {
	cfg := f.storeConfig()
	if cfg.Addr == "" {
		if cfg.Cluster != "" {
			// run's local server is one server, not a cluster.
			return errors.New("--clickhouse-cluster: needs --clickhouse-addr, a server of the cluster")
		}
		cfg.Addr = clickhouse.DefaultConfig().Addr
	}
	// The cluster is checked on its own, so that each error names its
	// flag.
	cluster := cfg.Cluster
	cfg.Cluster = ""
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("--clickhouse-addr, --database: %w", err)
	}
	if cluster != "" {
		cfg.Cluster = cluster
		if err := cfg.Validate(); err != nil {
			return fmt.Errorf("--clickhouse-cluster: %w", err)
		}
	}
	return nil
}

// requireAddr fails, as kong does for a missing required flag, when no
// address was given.
func (f *clickhouseFlags) requireAddr() error {
	if f.ClickhouseAddr == "" {
		return errors.New("missing flags: --clickhouse-addr=HOST:PORT")
	}
	return nil
}

// logFlags choose the log format of the commands that log.
type logFlags struct {
	LogFormat string `enum:"text,json" default:"text" help:"Log format: ${enum}."`
}

// logger returns a logger writing to w in the chosen format; opts may be
// nil.
func (f *logFlags) logger(w io.Writer, opts *slog.HandlerOptions) *slog.Logger {
	if f.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// millisMapper reads a duration flag (10s) into an int64 of milliseconds,
// the type:"ms" fields of the components' Configs (internal/knob).
type millisMapper struct{}

func (millisMapper) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	var text string
	if err := ctx.Scan.PopValueInto("duration", &text); err != nil {
		return err
	}
	v, err := knob.Parse(text, target.Type(), true)
	if err != nil {
		return fmt.Errorf("expected duration but got %q: %w", text, err)
	}
	target.Set(v)
	return nil
}
