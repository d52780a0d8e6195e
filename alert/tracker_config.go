package alert

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"
)

// TrackerConfig configures a Tracker. DefaultTrackerConfig returns it
// with the defaults given in the field comments; NewTracker also reads a
// zero field as its default. Durations are event time.
type TrackerConfig struct {
	// For is how long a condition must be ongoing before its alert fires:
	// from the start of its first window to the end of its latest one.
	// Default 20s (two 10 s windows); a negative value fires on the first
	// finding.
	For time.Duration
	// ResolveAfter is the hysteresis: a condition is over once no finding
	// of it has arrived for this long. Shorter gaps neither resolve a
	// firing alert nor reset a pending one, so a flapping condition gives
	// one alert, not one per flap. It must exceed the interval at which
	// the engine reports a lasting condition (the metric reporting
	// interval when that is longer than the window). Default 30s.
	ResolveAfter time.Duration
	// RenotifyInterval repeats the Firing notification of an alert whose
	// findings keep arriving, this long after the previous one, for
	// receivers without reminders of their own (Alertmanager has
	// repeat_interval). Default 0: never.
	RenotifyInterval time.Duration
	// RequireReports makes absence count only while the job keeps
	// reporting: a job's report is any finding of it (subtask_stats
	// included, so run the engine with EmitStats) or a JobsReported call.
	// Alerts of a job silent for SilentAfter then resolve with reason
	// job_silent. Default false: absence is measured against the
	// watermarks given to Advance, which assumes that a job without
	// findings is healthy.
	RequireReports bool
	// SilentAfter is how long a job may send nothing before its alerts
	// resolve (RequireReports only). Default 5m.
	SilentAfter time.Duration
	// MaxTracked bounds the alerts tracked at once (pending and firing).
	// Overflow policy: a finding of a new identity is ignored while the
	// bound is reached (Tracker.Refused counts them; alerts already
	// tracked keep updating). Default 10000.
	MaxTracked int
	// Causes lists the causes that make alerts (CauseHotKey and the
	// skew.Cause* constants). Default all of them (Causes()).
	Causes []string
	// Severities maps a cause to the severity label of its alerts;
	// missing causes get the defaults: hot_key "info", every other cause
	// "warning".
	Severities map[string]string
	// PlanVersion, when set, returns the current salting plan version of a
	// task for the runbook annotation ("apply salting plan v3"). It is
	// called by the goroutine that owns the Tracker, for each notification
	// of a hot_key, data_skew or rotating_hot_key alert, so it must be
	// fast, never block, and be safe for that goroutine. Default nil:
	// "apply the current salting plan".
	PlanVersion func(jobID, taskName string) (version uint64, ok bool)
	// SaltingURL is the base URL of the salting plan service for the
	// runbook (e.g. "http://skewlens:8080"); the runbook then reads "GET
	// http://skewlens:8080/v1/salting/<job>/<task>". Default "": the path
	// alone.
	SaltingURL string
}

// Tracker defaults, used by DefaultTrackerConfig and named for the flags
// and the docs test.
const (
	DefaultFor          = 20 * time.Second
	DefaultResolveAfter = 30 * time.Second
	DefaultSilentAfter  = 5 * time.Minute
	DefaultMaxTracked   = 10000
)

// DefaultSeverity returns the default severity of a cause.
func DefaultSeverity(cause string) string {
	if cause == CauseHotKey {
		return "info"
	}
	return "warning"
}

// DefaultTrackerConfig returns a TrackerConfig with every default filled
// in: the values named by the constants above and Causes(), which the
// field comments state in words. Callers start from it and override what
// they configure.
func DefaultTrackerConfig() TrackerConfig {
	return TrackerConfig{
		For:          DefaultFor,
		ResolveAfter: DefaultResolveAfter,
		SilentAfter:  DefaultSilentAfter,
		MaxTracked:   DefaultMaxTracked,
		Causes:       Causes(),
	}
}

// withDefaults returns c with every zero field set to its value in
// DefaultTrackerConfig (an empty Causes included). NewTracker applies it,
// so a zero field means its default.
func (c TrackerConfig) withDefaults() TrackerConfig {
	d := DefaultTrackerConfig()
	c.For = cmp.Or(c.For, d.For)
	c.ResolveAfter = cmp.Or(c.ResolveAfter, d.ResolveAfter)
	c.SilentAfter = cmp.Or(c.SilentAfter, d.SilentAfter)
	c.MaxTracked = cmp.Or(c.MaxTracked, d.MaxTracked)
	if len(c.Causes) == 0 {
		c.Causes = d.Causes
	}
	return c
}

// Validate reports every invalid field. It changes nothing: zero fields
// are invalid here (For aside: 0, like a negative value, fires on the
// first finding), NewTracker fills them in first.
func (c TrackerConfig) Validate() error {
	var errs []error
	if c.ResolveAfter <= 0 {
		errs = append(errs, fmt.Errorf("resolve after %s: must be positive", c.ResolveAfter))
	}
	if c.RenotifyInterval < 0 {
		errs = append(errs, fmt.Errorf("renotify interval %s: must be positive or 0 (off)", c.RenotifyInterval))
	}
	if c.SilentAfter <= 0 {
		errs = append(errs, fmt.Errorf("silent after %s: must be positive", c.SilentAfter))
	} else if c.RequireReports && c.SilentAfter < c.ResolveAfter {
		errs = append(errs, fmt.Errorf("silent after %s: must not be shorter than resolve after %s", c.SilentAfter, c.ResolveAfter))
	}
	if c.MaxTracked < 1 {
		errs = append(errs, fmt.Errorf("max tracked %d: must be positive", c.MaxTracked))
	}
	if len(c.Causes) == 0 {
		errs = append(errs, errors.New("causes: none"))
	}
	known := Causes()
	for _, cause := range c.Causes {
		if !slices.Contains(known, cause) {
			errs = append(errs, fmt.Errorf("cause %q: unknown (known: %v)", cause, known))
		}
	}
	for cause, sev := range c.Severities {
		if !slices.Contains(known, cause) {
			errs = append(errs, fmt.Errorf("severity of cause %q: unknown cause", cause))
		}
		if sev == "" {
			errs = append(errs, fmt.Errorf("severity of cause %q: empty", cause))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("alert tracker config: %w", err)
	}
	return nil
}

// severity returns the severity label of a cause.
func (c *TrackerConfig) severity(cause string) string {
	if s, ok := c.Severities[cause]; ok {
		return s
	}
	return DefaultSeverity(cause)
}

// Hysteresis is the rule that makes consecutive findings of one condition
// one alert (and one incident, package incident): the condition has
// lasted once For has passed from the start of its first window to the
// end of its latest one, and it is over once no finding of it arrived for
// ResolveAfter. Times are event time in epoch milliseconds.
type Hysteresis struct {
	For          time.Duration
	ResolveAfter time.Duration
}

// Hysteresis returns the configuration's hysteresis rule.
func (c TrackerConfig) Hysteresis() Hysteresis {
	return Hysteresis{For: c.For, ResolveAfter: c.ResolveAfter}
}

// Lasted reports whether a condition seen from start to lastSeen has
// lasted For (always, when For is 0 or negative).
func (h Hysteresis) Lasted(start, lastSeen int64) bool {
	return h.For <= 0 || time.Duration(lastSeen-start)*time.Millisecond >= h.For
}

// Over reports whether a condition last seen at lastSeen is over at now:
// it has been absent for ResolveAfter.
func (h Hysteresis) Over(lastSeen, now int64) bool {
	return now-lastSeen >= h.ResolveAfter.Milliseconds()
}

// OverAt returns the event time at which a condition last seen at
// lastSeen is over if nothing more is seen: the event time of its
// resolution, however late it is noticed.
func (h Hysteresis) OverAt(lastSeen int64) int64 {
	return lastSeen + h.ResolveAfter.Milliseconds()
}
