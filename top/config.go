package top

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/sinks/topstore"
)

// Color modes.
const (
	ColorAuto   = "auto"
	ColorAlways = "always"
	ColorNever  = "never"
)

// Limits of the widths, checked by Validate.
const (
	// MaxWidth bounds every width of a Config.
	MaxWidth = 10000
	// minFrameWidth is the narrowest Config.Width: the fixed columns of
	// the tables alone are wider, but a header must still say something.
	minFrameWidth = 20
)

// Config configures a Top. Its tags declare each setting once
// (internal/knob): DefaultConfig and Validate read them, and skewlens top
// binds the fields with a name as its flags. New also reads a zero field
// as its default.
type Config struct {
	// Jobs restricts the view to these job ids; none: every job.
	Jobs []string `name:"job" placeholder:"JOB_ID" help:"Show only this job id (repeatable; default: every job)."`
	// Refresh is the time between the starts of two refreshes.
	Refresh time.Duration `name:"refresh" default:"2s" range:"[100ms,]" help:"Time between refreshes."`
	// Once makes Run draw one frame and return, without clearing the
	// screen; Run then returns the refresh's error.
	Once bool `name:"once" help:"Draw one frame and exit; the exit code is 1 when ClickHouse failed (it is tried once)."`
	// MaxRows is the most rows of each section (task skew, hot keys,
	// saturated subtasks) per job.
	MaxRows int `name:"rows" default:"10" range:"[1,1000]" help:"Most rows per section and job."`
	// Windows is how many of each job's newest windows the view covers.
	// Its default is the store query's (topstore.DefaultWindows), so that
	// a zero Query reads what a default Config shows.
	Windows int `name:"windows" default:"3" range:"[1,${top_max_windows}]" help:"How many of each job's newest windows to cover."`
	// Lookback is how old the newest window of a job may be for the job to
	// be shown. Its default is the store query's
	// (topstore.DefaultLookback).
	Lookback time.Duration `name:"lookback" default:"1h" range:"(0s,]" help:"Hide jobs whose newest window started longer ago."`
	// Color is "auto" (colors when the output is a terminal), "always" or
	// "never".
	Color string `name:"color" enum:"auto,always,never" default:"auto" zero:"default" help:"Colors: ${enum} (auto: on a terminal unless NO_COLOR is set)."`
	// Timeout bounds one refresh; a refresh that takes longer fails and
	// shows its error.
	Timeout time.Duration `kong:"-" default:"10s" range:"(0s,]"`
	// KeyWidth is the widest a key is drawn, in columns.
	KeyWidth int `kong:"-" default:"40" range:"[8,${max_width}]"`
	// NameWidth is the widest a task name, host or cause is drawn.
	NameWidth int `kong:"-" default:"32" range:"[8,${max_width}]"`
	// SummaryWidth is the widest a summary or a job name is drawn.
	SummaryWidth int `kong:"-" default:"80" range:"[8,${max_width}]"`
	// Width is the widest a line of a frame is drawn, in columns (see
	// Style.Width), at least 20. 0: the terminal's width, read again
	// before each frame so that a resize takes effect, when the output is
	// a terminal; no limit otherwise (a pipe, a file). skewlens top sets
	// it from --width, which its other text commands share.
	Width int `kong:"-"`
}

// KnobVars gives the range bounds the tags name.
func (Config) KnobVars() map[string]string {
	return map[string]string{
		"top_max_windows": strconv.Itoa(topstore.MaxWindows),
		"max_width":       strconv.Itoa(MaxWidth),
	}
}

// DefaultConfig returns the defaults the tags declare. Callers start from
// it and override what they configure.
func DefaultConfig() Config { return knob.Defaults[Config]() }

// withDefaults returns c with every zero field set to its default
// (Width, whose zero is the terminal's, aside). New applies it, so a zero
// field means its default.
func (c Config) withDefaults() Config {
	knob.FillZero(&c)
	return c
}

// Validate reports every invalid field. It changes nothing; New fills the
// zero fields with their defaults before it validates.
func (c Config) Validate() error {
	errs := []error{knob.Check(c)}
	switch c.Color {
	case ColorAuto, ColorAlways, ColorNever:
	default:
		errs = append(errs, fmt.Errorf("color %q: must be %q, %q or %q", c.Color, ColorAuto, ColorAlways, ColorNever))
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
