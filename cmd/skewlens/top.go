package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/store/clickhouse"
	"github.com/skewlens/skewlens/top"
)

type topCmd struct {
	clickhouseFlags `set:"clickhouse_addr_note=Required (make run prints it)."`
	Job             []string      `placeholder:"JOB_ID" help:"Show only this job id (repeatable; default: every job)."`
	Refresh         time.Duration `default:"${refresh}" help:"Time between refreshes." range:"[${top_min_refresh},]"`
	Once            bool          `help:"Draw one frame and exit; the exit code is 1 when ClickHouse failed (it is tried once)."`
	Rows            int           `default:"${rows}" help:"Most rows per section and job." range:"[1,${top_max_rows}]"`
	Windows         int           `default:"${windows}" help:"How many of each job's newest windows to cover." range:"[1,${top_max_windows}]"`
	Lookback        time.Duration `default:"${lookback}" help:"Hide jobs whose newest window started longer ago." range:"(0s,]"`
	Color           string        `enum:"auto,always,never" default:"${color}" help:"Colors: ${enum} (auto: on a terminal unless NO_COLOR is set)."`
	textFlags
	logFlags
}

// Validate is called by kong after parsing.
func (c *topCmd) Validate() error { return c.requireAddr() }

// config returns top.DefaultConfig with the flags' values.
func (c *topCmd) config() top.Config {
	color := c.Color
	if _, ok := os.LookupEnv("NO_COLOR"); ok && color == top.ColorAuto {
		color = top.ColorNever
	}
	cfg := top.DefaultConfig()
	cfg.Refresh, cfg.Jobs, cfg.MaxRows, cfg.Windows = c.Refresh, c.Job, c.Rows, c.Windows
	cfg.Lookback, cfg.Color, cfg.Once, cfg.Width = c.Lookback, color, c.Once, c.Width
	return cfg
}

// check is called before Run (checkCommand).
func (c *topCmd) check() error {
	if err := c.checkStore(); err != nil {
		return err
	}
	if err := c.config().Validate(); err != nil {
		return fmt.Errorf("--refresh, --rows, --windows, --lookback, --width, --job: %w", err)
	}
	return nil
}

// Run wires the terminal view to ClickHouse; it refreshes until q or
// Ctrl-C. ClickHouse may be away at start: the connection is retried
// (without limit, with the store's backoff) and each failed try printed,
// except with --once, which tries once.
func (c *topCmd) Run(e *env) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Info lines would scroll the redrawn screen.
	log := c.logger(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})
	cfg := c.config()
	if !c.Once {
		keys, err := top.WatchKeys(ctx, e.stdin)
		if err != nil {
			log.Warn("q does not quit; Ctrl-C does", "err", err)
		} else {
			defer func() {
				if err := keys.Stop(); err != nil {
					log.Warn("restoring the terminal", "err", err)
				}
			}()
			ctx = keys.Context()
		}
	}
	var store *clickhouse.Store
	connect := func(ctx context.Context) (err error) {
		store, err = clickhouse.New(ctx, c.storeConfig(), log, nil)
		return err
	}
	var err error
	if c.Once {
		err = connect(ctx)
	} else {
		wait := clickhouse.DefaultConfig().Retry
		wait.MaxRetries = retry.Unlimited
		err = retry.Do(ctx, wait, top.WaitNotice(e.stdout, "ClickHouse at "+c.ClickhouseAddr), connect)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil // q or Ctrl-C while waiting
		}
		return err
	}
	defer store.Close()
	view, err := top.New(cfg, store.Top(), e.stdout, log)
	if err != nil {
		return err
	}
	return view.Run(ctx)
}
