package stream

import (
	"context"
	"log/slog"
	"time"
)

// ReportProgress logs the messages processed and findings written so far
// every interval, at Info on log, until done is closed or ctx ends; then it
// returns nil. It shows a long run is moving (the counters grow) without
// a metrics scraper. It blocks; run it as its own actor beside Run.
func (r *Runner) ReportProgress(ctx context.Context, every time.Duration, log *slog.Logger, done <-chan struct{}) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			msgs, written := r.Progress()
			log.Info("progress", "messages", msgs, "findings_written", written)
		case <-done:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}
