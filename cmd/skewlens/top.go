package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/skewlens/skewlens/store/clickhouse"
	"github.com/skewlens/skewlens/top"
)

type topCmd struct {
	ClickhouseAddr string        `env:"SKEWLENS_CLICKHOUSE_ADDR" required:"" placeholder:"HOST:PORT" help:"ClickHouse native-protocol address (make run prints it)."`
	Database       string        `env:"SKEWLENS_DATABASE" default:"skewlens" help:"ClickHouse database."`
	Job            []string      `placeholder:"JOB_ID" help:"Show only this job id (repeatable; default: every job)."`
	Refresh        time.Duration `default:"2s" help:"Time between refreshes."`
	Once           bool          `help:"Draw one frame and exit; the exit code is 1 when ClickHouse failed."`
	Rows           int           `default:"10" help:"Most rows per section and job."`
	Windows        int           `default:"3" help:"How many of each job's newest windows to cover."`
	Lookback       time.Duration `default:"1h" help:"Hide jobs whose newest window started longer ago."`
	Color          string        `enum:"auto,always,never" default:"auto" help:"Colors: ${enum} (auto: on a terminal unless NO_COLOR is set)."`
	LogFormat      string        `env:"SKEWLENS_LOG_FORMAT" enum:"text,json" default:"text" help:"Log format: ${enum}."`
}

// Run wires the terminal view to ClickHouse; it refreshes until Ctrl-C.
func (c *topCmd) Run(e *env) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Info lines would scroll the redrawn screen.
	opts := &slog.HandlerOptions{Level: slog.LevelWarn}
	log := slog.New(slog.NewTextHandler(e.stderr, opts))
	if c.LogFormat == "json" {
		log = slog.New(slog.NewJSONHandler(e.stderr, opts))
	}
	color := c.Color
	if _, ok := os.LookupEnv("NO_COLOR"); ok && color == top.ColorAuto {
		color = top.ColorNever
	}
	store, err := clickhouse.New(clickhouse.Config{Addr: c.ClickhouseAddr, Database: c.Database}, log, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	view, err := top.New(top.Config{Refresh: c.Refresh, Jobs: c.Job, MaxRows: c.Rows, Windows: c.Windows,
		Lookback: c.Lookback, Color: color, Once: c.Once}, store.Top(), e.stdout, log)
	if err != nil {
		return err
	}
	return view.Run(ctx)
}
