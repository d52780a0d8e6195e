package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/sinks/clickhouse"
	"github.com/skewlens/skewlens/top"
)

// topView returns the view's configuration: cfg with the lines' width
// (0: the terminal's), and colors off under NO_COLOR unless --color asks
// for them.
func topView(cfg top.Config, width int) top.Config {
	cfg.Width = width
	if _, ok := os.LookupEnv("NO_COLOR"); ok && cfg.Color == top.ColorAuto {
		cfg.Color = top.ColorNever
	}
	return cfg
}

// CheckTop checks what Top would reject later: the connection's
// settings, then the view's.
func CheckTop(ch ClickHouse, cfg top.Config, width int) error {
	if err := ch.Check(); err != nil {
		return err
	}
	if err := topView(cfg, width).Validate(); err != nil {
		return fmt.Errorf("--refresh, --rows, --windows, --lookback, --width, --job: %w", err)
	}
	return nil
}

// Top runs the terminal view of ClickHouse (cfg, with the lines' width)
// on s.Out, reading q from s.In; it refreshes until q or ctx ends.
// ClickHouse may be away at start: the connection is retried (without
// limit, with the store's backoff) and each failed try printed, except
// with Once, which tries once.
func Top(ctx context.Context, ch ClickHouse, cfg top.Config, width int, s Streams, log *slog.Logger) error {
	cfg = topView(cfg, width)
	if !cfg.Once {
		keys, err := top.WatchKeys(ctx, s.In)
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
		store, err = clickhouse.New(ctx, ch.StoreConfig(), log, nil)
		return err
	}
	var err error
	if cfg.Once {
		err = connect(ctx)
	} else {
		wait := clickhouse.DefaultConfig().Retry
		wait.MaxRetries = retry.Unlimited
		err = retry.Do(ctx, wait, top.WaitNotice(s.Out, "ClickHouse at "+ch.ClickhouseAddr), connect)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil // q or Ctrl-C while waiting
		}
		return err
	}
	defer store.Close()
	view, err := top.New(cfg, store.Top(), s.Out, log)
	if err != nil {
		return err
	}
	return view.Run(ctx)
}
