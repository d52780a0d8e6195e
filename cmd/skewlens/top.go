package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/store/clickhouse"
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

// config returns the view's configuration: the flags', with --width, and
// colors off under NO_COLOR unless --color asks for them.
func (c *topCmd) config() top.Config {
	cfg := c.Top
	cfg.Width = c.Width
	if _, ok := os.LookupEnv("NO_COLOR"); ok && cfg.Color == top.ColorAuto {
		cfg.Color = top.ColorNever
	}
	return cfg
}

// check is called before Run (checkCommand).
func (c *topCmd) check() error {
	if err := c.ClickHouse.Check(); err != nil {
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
	if !cfg.Once {
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
		store, err = clickhouse.New(ctx, c.StoreConfig(), log, nil)
		return err
	}
	var err error
	if cfg.Once {
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
