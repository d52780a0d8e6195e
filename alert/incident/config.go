package incident

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Config configures a Tracker. DefaultConfig returns the defaults given
// in the field comments.
type Config struct {
	// Hysteresis says when an incident closes and when it has lasted
	// long enough for its alert to fire. Default DefaultFor and
	// DefaultResolveAfter.
	Hysteresis Hysteresis
	// Causes lists the causes that make incidents. Default all
	// (Causes()).
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
	// Plan, when set, returns the salting plan served now for a task: its
	// version and the event time (epoch ms) that version was made at. A
	// data_skew incident of the task then follows the plan's effect on its
	// subtask from the subtask_stats findings (see Incident.Plan): it
	// closes, resolved by the plan, in the first window after the plan in
	// which the subtask is not saturated. It is called on Observe's
	// goroutine.
	Plan func(jobID, taskName string) (version uint64, at int64, ok bool)
	// ReliefWithin is how long a plan may be served without relieving its
	// data_skew incident's subtask before the incident says so
	// (PlanEffect.Overdue); it stays open. Default 3m: the jobs poll for
	// plans every 30 s by default, and relief shows in the next windows.
	ReliefWithin time.Duration
}

// Defaults of Config.
const (
	DefaultMaxOpen    = 10000
	DefaultMaxHotKeys = 10
	// DefaultReliefWithin is Config.ReliefWithin's default.
	DefaultReliefWithin = 3 * time.Minute
)

// DefaultConfig returns a Config with every default filled in.
func DefaultConfig() Config {
	return Config{
		Hysteresis:   Hysteresis{For: DefaultFor, ResolveAfter: DefaultResolveAfter},
		Causes:       Causes(),
		MaxOpen:      DefaultMaxOpen,
		MaxHotKeys:   DefaultMaxHotKeys,
		ReliefWithin: DefaultReliefWithin,
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
		if !slices.Contains(Causes(), cause) {
			errs = append(errs, fmt.Errorf("cause %q: unknown", cause))
		}
	}
	if c.MaxOpen < 1 {
		errs = append(errs, fmt.Errorf("max open %d: must be positive", c.MaxOpen))
	}
	if c.ReliefWithin <= 0 {
		errs = append(errs, fmt.Errorf("relief within %s: must be positive", c.ReliefWithin))
	}
	if c.MaxHotKeys < 0 {
		errs = append(errs, fmt.Errorf("max hot keys %d: must not be negative", c.MaxHotKeys))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("incident tracker config: %w", err)
	}
	return nil
}
