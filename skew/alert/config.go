package alert

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/skew/incident"
)

// Config configures a StateMachine: what its alerts say and to whom.
// When an alert fires and resolves is not here: it follows its incidents
// (incident.Hysteresis). Its tags declare each setting once
// (internal/knob), and the command line can bind those with a name as
// flags. NewStateMachine also reads a zero field as its default.
type Config struct {
	// RenotifyInterval repeats the Firing notification of an alert whose
	// findings keep arriving, this long (event time) after the previous
	// one, for receivers without reminders of their own (Alertmanager has
	// repeat_interval). 0: never.
	RenotifyInterval time.Duration `name:"alert-renotify" range:"[0s,]" group:"Alerts" help:"Repeat a firing alert's notification this often (default: never; Alertmanager has repeat_interval)."`
	// Causes lists the causes that make alerts (incident.Causes()).
	// Default all of them.
	Causes []string `kong:"-"`
	// Severities maps a cause to the severity label of its alerts;
	// missing causes get the defaults: hot_key "info", every other cause
	// "warning".
	Severities map[string]string `kong:"-"`
	// PlanVersion, when set, returns the current salting plan version of a
	// task for the runbook annotation ("apply salting plan v3"). It is
	// called by the goroutine that owns the StateMachine, for each notification
	// of a hot_key, data_skew or rotating_hot_key alert, so it must be
	// fast, never block, and be safe for that goroutine. Default nil:
	// "apply the current salting plan".
	PlanVersion func(jobID, taskName string) (version uint64, ok bool) `kong:"-"`
	// SaltingURL is the base URL of the salting plan service for the
	// runbook (e.g. "http://skewlens:8080"); the runbook then reads "GET
	// http://skewlens:8080/v1/salting/<job>/<task>". Empty: the path
	// alone.
	SaltingURL string `name:"salting-url" group:"Alerts" placeholder:"URL" help:"Base URL of skewlens serve, for the runbook link of skew alerts (default: the --api-listen address)."`
}

// DefaultSeverity returns the default severity of a cause.
func DefaultSeverity(cause string) string {
	if cause == incident.CauseHotKey {
		return "info"
	}
	return "warning"
}

// DefaultConfig returns the defaults the tags declare, with every
// cause. Callers start from it and override what they configure.
func DefaultConfig() Config {
	c := knob.Defaults[Config]()
	c.Causes = incident.Causes()
	return c
}

// withDefaults returns c with every zero field set to its default (an
// empty Causes included). NewStateMachine applies it, so a zero field means its
// default.
func (c Config) withDefaults() Config {
	knob.FillZero(&c)
	if len(c.Causes) == 0 {
		c.Causes = DefaultConfig().Causes
	}
	return c
}

// Validate reports every invalid field. It changes nothing: an empty
// Causes is invalid here, NewStateMachine fills it in first.
func (c Config) Validate() error {
	errs := []error{knob.Check(c)}
	if len(c.Causes) == 0 {
		errs = append(errs, errors.New("causes: none"))
	}
	known := incident.Causes()
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
		return fmt.Errorf("alert config: %w", err)
	}
	return nil
}

// severity returns the severity label of a cause.
func (c *Config) severity(cause string) string {
	if s, ok := c.Severities[cause]; ok {
		return s
	}
	return DefaultSeverity(cause)
}
