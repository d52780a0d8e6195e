package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/skewlens/skewlens/internal/app"
	"github.com/skewlens/skewlens/top"
)

type topCmd struct {
	clickhouseFlags `set:"clickhouse_addr_note=Required (make run prints it)."`
	topFlags
	textFlags
	logFlags
}

// topFlags bind top's Config: each setting with a name is a flag, as its
// tags declare it. The wrapper is unexported so that kong does not call
// the Config's Validate while parsing: check does, naming the flags.
type topFlags struct {
	Top top.Config `embed:""`
}

// Validate is called by kong after parsing.
func (c *topCmd) Validate() error { return c.RequireAddr() }

// check is called before Run (checkCommand).
func (c *topCmd) check() error { return app.CheckTop(c.ClickHouse, c.Top, c.Width) }

// Run shows the terminal view (app.Top) until q, SIGINT or SIGTERM.
func (c *topCmd) Run(e *env) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Info lines would scroll the redrawn screen.
	log := c.logger(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})
	return app.Top(ctx, c.ClickHouse, c.Top, c.Width, e.streams(), log)
}
