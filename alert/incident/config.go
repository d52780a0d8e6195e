package incident

import (
	"errors"
	"fmt"
	"slices"

	"github.com/skewlens/skewlens/alert"
)

// Config configures a Tracker. DefaultConfig returns the defaults given
// in the field comments.
type Config struct {
	// Hysteresis is the alert rule incidents follow; only ResolveAfter
	// matters: an incident closes once no finding of its condition arrived
	// for ResolveAfter. Default the alert defaults (ResolveAfter 30s); the
	// pipeline passes the alert tracker's, so alerts and incidents agree.
	Hysteresis alert.Hysteresis
	// Causes lists the causes that make incidents. Default all
	// (alert.Causes()).
	Causes []string
	// MaxOpen bounds the incidents open at once. Overflow policy: a
	// finding of a new condition is ignored while the bound is reached
	// (Tracker.Refused counts them); open incidents keep updating.
	// Default 10000.
	MaxOpen int
	// MaxHotKeys bounds Incident.HotKeys. Default 10.
	MaxHotKeys int
	// RequireReports makes a condition absent only in windows its job
	// reported in: a job's report is any finding of it, so the engine
	// must emit subtask_stats (skew.Config.EmitStats). A job gone silent
	// (stopped, or restarting under a new id) then keeps its incidents
	// open until its run's end (skew.KindJobEnd) closes them with the
	// reason. Default false: absence is measured against the watermark.
	RequireReports bool
}

// Defaults of Config.
const (
	DefaultMaxOpen    = 10000
	DefaultMaxHotKeys = 10
)

// DefaultConfig returns a Config with every default filled in.
func DefaultConfig() Config {
	return Config{
		Hysteresis: alert.DefaultTrackerConfig().Hysteresis(),
		Causes:     alert.Causes(),
		MaxOpen:    DefaultMaxOpen,
		MaxHotKeys: DefaultMaxHotKeys,
	}
}

// Validate reports every invalid field; it changes nothing.
func (c Config) Validate() error {
	var errs []error
	if c.Hysteresis.ResolveAfter <= 0 {
		errs = append(errs, fmt.Errorf("resolve after %s: must be positive", c.Hysteresis.ResolveAfter))
	}
	if len(c.Causes) == 0 {
		errs = append(errs, errors.New("causes: none"))
	}
	for _, cause := range c.Causes {
		if !slices.Contains(alert.Causes(), cause) {
			errs = append(errs, fmt.Errorf("cause %q: unknown", cause))
		}
	}
	if c.MaxOpen < 1 {
		errs = append(errs, fmt.Errorf("max open %d: must be positive", c.MaxOpen))
	}
	if c.MaxHotKeys < 0 {
		errs = append(errs, fmt.Errorf("max hot keys %d: must not be negative", c.MaxHotKeys))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("incident tracker config: %w", err)
	}
	return nil
}
