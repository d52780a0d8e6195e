package top

import (
	"errors"
	"fmt"
	"time"
)

// Defaults, named for the field comments and the tests.
const (
	DefaultRefresh      = 2 * time.Second
	DefaultMaxRows      = 10
	DefaultWindows      = 3
	DefaultLookback     = time.Hour
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
	minRefresh = 100 * time.Millisecond
	maxRows    = 1000
	maxWindows = 1000
	minWidth   = 8
	maxWidth   = 10000
)

// Config configures a Top. The zero value of every field means its
// default, given in the field's comment; New calls Validate.
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
}

// Validate fills in the defaults of c and reports every invalid field.
func (c *Config) Validate() error {
	if c.Refresh == 0 {
		c.Refresh = DefaultRefresh
	}
	if c.MaxRows == 0 {
		c.MaxRows = DefaultMaxRows
	}
	if c.Windows == 0 {
		c.Windows = DefaultWindows
	}
	if c.Lookback == 0 {
		c.Lookback = DefaultLookback
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Color == "" {
		c.Color = ColorAuto
	}
	if c.KeyWidth == 0 {
		c.KeyWidth = DefaultKeyWidth
	}
	if c.NameWidth == 0 {
		c.NameWidth = DefaultNameWidth
	}
	if c.SummaryWidth == 0 {
		c.SummaryWidth = DefaultSummaryWidth
	}
	var errs []error
	if c.Refresh < minRefresh {
		errs = append(errs, fmt.Errorf("refresh %s: must be at least %s", c.Refresh, minRefresh))
	}
	if c.MaxRows < 0 || c.MaxRows > maxRows {
		errs = append(errs, fmt.Errorf("max rows %d: must be between 1 and %d", c.MaxRows, maxRows))
	}
	if c.Windows < 0 || c.Windows > maxWindows {
		errs = append(errs, fmt.Errorf("windows %d: must be between 1 and %d", c.Windows, maxWindows))
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
		if w.v < minWidth || w.v > maxWidth {
			errs = append(errs, fmt.Errorf("%s %d: must be between %d and %d", w.name, w.v, minWidth, maxWidth))
		}
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
