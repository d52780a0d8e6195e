package top

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/skewlens/skewlens/top/topstore"
)

// Defaults, used by DefaultConfig and named for the tests. Windows and
// Lookback default to the store query's (topstore.DefaultWindows,
// topstore.DefaultLookback), so a zero Query reads what a default Config
// shows.
const (
	DefaultRefresh      = 2 * time.Second
	DefaultMaxRows      = 10
	DefaultTimeout      = 10 * time.Second
	DefaultKeyWidth     = 40
	DefaultNameWidth    = 32
	DefaultSummaryWidth = 80
)

// Color modes.
const (
	ColorAuto   = "auto"
	ColorAlways = "always"
	ColorNever  = "never"
)

// Limits checked by Validate.
const (
	MinRefresh      = 100 * time.Millisecond
	MaxRowsLimit    = 1000
	MaxWindowsLimit = 1000
	minWidth        = 8
	MaxWidth        = 10000
	// minFrameWidth is the narrowest Config.Width: the fixed columns of
	// the tables alone are wider, but a header must still say something.
	minFrameWidth = 20
)

// Config configures a Top. DefaultConfig returns it with the defaults
// given in the field comments; New also reads a zero field as its default.
type Config struct {
	// Refresh is the time between the starts of two refreshes. Default 2s;
	// at least 100ms.
	Refresh time.Duration
	// Jobs restricts the view to these job ids. Default: every job.
	Jobs []string
	// MaxRows is the most rows of each section (task skew, hot keys,
	// saturated subtasks) per job. Default 10.
	MaxRows int
	// Windows is how many of each job's newest windows the view covers.
	// Default 3.
	Windows int
	// Lookback is how old the newest window of a job may be for the job to
	// be shown. Default 1h.
	Lookback time.Duration
	// Timeout bounds one refresh; a refresh that takes longer fails and
	// shows its error. Default 10s.
	Timeout time.Duration
	// Color is "auto" (default: colors when the output is a terminal),
	// "always" or "never".
	Color string
	// Once makes Run draw one frame and return, without clearing the
	// screen; Run then returns the refresh's error.
	Once bool
	// KeyWidth is the widest a key is drawn, in columns. Default 40; at
	// least 8.
	KeyWidth int
	// NameWidth is the widest a task name, host or cause is drawn.
	// Default 32; at least 8.
	NameWidth int
	// SummaryWidth is the widest a summary or a job name is drawn.
	// Default 80; at least 8.
	SummaryWidth int
	// Width is the widest a line of a frame is drawn, in columns (see
	// Style.Width), at least 20. Default 0: the terminal's width, read
	// again before each frame so that a resize takes effect, when the
	// output is a terminal; no limit otherwise (a pipe, a file).
	Width int
}

// DefaultConfig returns a Config with every default filled in: the
// values named by the constants above, which the field comments state in
// words. Callers start from it and override what they configure.
func DefaultConfig() Config {
	return Config{
		Refresh:      DefaultRefresh,
		MaxRows:      DefaultMaxRows,
		Windows:      topstore.DefaultWindows,
		Lookback:     topstore.DefaultLookback,
		Timeout:      DefaultTimeout,
		Color:        ColorAuto,
		KeyWidth:     DefaultKeyWidth,
		NameWidth:    DefaultNameWidth,
		SummaryWidth: DefaultSummaryWidth,
	}
}

// withDefaults returns c with every zero field set to its value in
// DefaultConfig. New applies it, so a zero field means its default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.Refresh = cmp.Or(c.Refresh, d.Refresh)
	c.MaxRows = cmp.Or(c.MaxRows, d.MaxRows)
	c.Windows = cmp.Or(c.Windows, d.Windows)
	c.Lookback = cmp.Or(c.Lookback, d.Lookback)
	c.Timeout = cmp.Or(c.Timeout, d.Timeout)
	c.Color = cmp.Or(c.Color, d.Color)
	c.KeyWidth = cmp.Or(c.KeyWidth, d.KeyWidth)
	c.NameWidth = cmp.Or(c.NameWidth, d.NameWidth)
	c.SummaryWidth = cmp.Or(c.SummaryWidth, d.SummaryWidth)
	return c
}

// Validate reports every invalid field. It changes nothing; New fills the
// zero fields with their defaults before it validates.
func (c Config) Validate() error {
	var errs []error
	if c.Refresh < MinRefresh {
		errs = append(errs, fmt.Errorf("refresh %s: must be at least %s", c.Refresh, MinRefresh))
	}
	if c.MaxRows < 0 || c.MaxRows > MaxRowsLimit {
		errs = append(errs, fmt.Errorf("max rows %d: must be between 1 and %d", c.MaxRows, MaxRowsLimit))
	}
	if c.Windows < 0 || c.Windows > MaxWindowsLimit {
		errs = append(errs, fmt.Errorf("windows %d: must be between 1 and %d", c.Windows, MaxWindowsLimit))
	}
	if c.Lookback < 0 {
		errs = append(errs, fmt.Errorf("lookback %s: must be positive", c.Lookback))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("timeout %s: must be positive", c.Timeout))
	}
	switch c.Color {
	case ColorAuto, ColorAlways, ColorNever:
	default:
		errs = append(errs, fmt.Errorf("color %q: must be %q, %q or %q", c.Color, ColorAuto, ColorAlways, ColorNever))
	}
	for _, w := range []struct {
		name string
		v    int
	}{{"key width", c.KeyWidth}, {"name width", c.NameWidth}, {"summary width", c.SummaryWidth}} {
		if w.v < minWidth || w.v > MaxWidth {
			errs = append(errs, fmt.Errorf("%s %d: must be between %d and %d", w.name, w.v, minWidth, MaxWidth))
		}
	}
	if c.Width != 0 && (c.Width < minFrameWidth || c.Width > MaxWidth) {
		errs = append(errs, fmt.Errorf("width %d: must be 0 (the terminal's) or between %d and %d", c.Width, minFrameWidth, MaxWidth))
	}
	for i, j := range c.Jobs {
		if j == "" {
			errs = append(errs, fmt.Errorf("jobs[%d]: empty job id", i))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("top config: %w", err)
	}
	return nil
}
