package top

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/skewlens/skewlens/internal/termtext"
	"github.com/skewlens/skewlens/sinks/topstore"
)

// Screen control: cursor home, then clear the screen.
const clearScreen = "\x1b[H\x1b[2J"

// separator is the line between two frames when the output is not a
// terminal.
const separator = "----------------------------------------------------------------------"

// Top is the terminal view of `skewlens top`. Create it with New and call
// Run.
type Top struct {
	cfg   Config
	src   topstore.Reader
	out   io.Writer
	log   *slog.Logger
	style Style
	// term: out is a terminal, so frames are redrawn in place.
	term bool
	// now is the clock of the frames and of the lookback (tests fix it).
	now func() time.Time
}

// New validates cfg, whose zero fields mean their defaults
// (DefaultConfig), and returns a view that reads from src and draws to
// out. Frames are redrawn in place, fitted to the terminal's width, when
// out is a terminal, and printed one after the other, separated by a
// line, otherwise. log may be nil to discard log records.
func New(cfg Config, src topstore.Reader, out io.Writer, log *slog.Logger) (*Top, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if src == nil {
		return nil, errors.New("top: nil source")
	}
	if out == nil {
		return nil, errors.New("top: nil output")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	term := termtext.IsTerminal(out)
	return &Top{
		cfg: cfg, src: src, out: out, log: log, term: term, now: time.Now,
		style: Style{
			Color:        cfg.Color == ColorAlways || (cfg.Color == ColorAuto && term),
			KeyWidth:     cfg.KeyWidth,
			NameWidth:    cfg.NameWidth,
			SummaryWidth: cfg.SummaryWidth,
			Width:        cfg.Width,
		},
	}, nil
}

// Run refreshes and draws the view every Config.Refresh until ctx ends,
// then returns nil. A failed refresh (the source's error, or Config.Timeout
// passing) is shown in the footer under the last good data, and the next
// refresh tries again. With Config.Once, Run draws one frame and returns
// the refresh's error, if any. Run blocks; it returns an error when writing
// to the output fails. Do not call Run concurrently on one Top.
func (t *Top) Run(ctx context.Context) error {
	if t.cfg.Once {
		fr := t.refresh(ctx, Frame{})
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("refresh: %w", err)
		}
		if err := t.draw(fr, 0); err != nil {
			return err
		}
		if fr.Err != nil {
			return fmt.Errorf("refresh: %w", fr.Err)
		}
		return nil
	}
	fr := Frame{Refresh: t.cfg.Refresh}
	for n := 0; ; n++ {
		start := time.Now()
		fr = t.refresh(ctx, fr)
		if ctx.Err() != nil {
			// Interrupted: the refresh's error is ours, not the source's.
			return nil
		}
		if err := t.draw(fr, n); err != nil {
			return err
		}
		timer := time.NewTimer(time.Until(start.Add(t.cfg.Refresh)))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		}
	}
}

// query is the source query of a refresh at now.
func (t *Top) query(now time.Time) topstore.Query {
	return topstore.Query{
		Jobs:    t.cfg.Jobs,
		Since:   now.Add(-t.cfg.Lookback),
		Windows: t.cfg.Windows,
		Limit:   t.cfg.MaxRows,
		// A column shows at most width runes of at most 4 bytes each:
		// reading more of a 64 KB key would only be thrown away.
		MaxStringBytes: 4*max(t.cfg.KeyWidth, t.cfg.SummaryWidth) + 4,
	}
}

// refresh reads a snapshot and returns fr updated with it, or with the
// error and the old snapshot.
func (t *Top) refresh(ctx context.Context, fr Frame) Frame {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	snap, err := t.src.View(ctx, t.query(t.now()))
	if err != nil {
		fr.Err = err
		fr.Failures++
		t.log.Debug("top: refresh failed", "failures", fr.Failures, "err", err)
		return fr
	}
	if fr.Failures > 0 {
		t.log.Debug("top: refresh succeeded again", "after_failures", fr.Failures)
	}
	fr.Snapshot, fr.Updated, fr.Err, fr.Failures = snap, t.now(), nil, 0
	return fr
}

// draw writes frame number n in one Write, so a terminal never shows half
// a frame: on a terminal after clearing the screen, else after a separator
// line (from the second frame on).
func (t *Top) draw(fr Frame, n int) error {
	st := t.style
	if st.Width == 0 && t.term {
		st.Width = termtext.Columns(t.out)
	}
	var b bytes.Buffer
	switch {
	case t.term && !t.cfg.Once:
		b.WriteString(clearScreen)
	case n > 0:
		b.WriteString(termtext.Fit(separator, st.Width) + "\n")
	}
	if err := Render(&b, fr, t.now(), st); err != nil {
		return err
	}
	if _, err := t.out.Write(b.Bytes()); err != nil {
		return fmt.Errorf("top: write frame: %w", err)
	}
	return nil
}
