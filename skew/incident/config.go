package incident

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/skewlens/skewlens/internal/knob"
)

// Config configures a Tracker. Its tags declare each setting once
// (internal/knob): DefaultConfig and Validate read them, and the command
// line can bind the Hysteresis's as flags. A zero field is not its
// default here: New takes the Config as it is.
type Config struct {
	// Hysteresis says when an incident closes and when it has lasted
	// long enough for its alert to fire.
	Hysteresis Hysteresis `embed:""`
	// Causes lists the causes that make incidents. Default all
	// (Causes()).
	Causes []string `kong:"-"`
	// MaxOpen bounds the incidents open at once. Overflow policy: a
	// finding of a new condition is ignored while the bound is reached
	// (Tracker.Refused counts them); open incidents keep updating.
	MaxOpen int `kong:"-" default:"10000" range:"[1,]"`
	// MaxHotKeys bounds Incident.HotKeys.
	MaxHotKeys int `kong:"-" default:"10" range:"[0,]"`
	// RequireReports makes a condition absent only in windows its job
	// reported in: a job's report is any finding of it, so the engine
	// must emit subtask_stats (skew.Config.EmitStats). A job gone silent
	// (stopped, or restarting under a new id) then keeps its incidents
	// open until its run's end (skew.KindJobEnd) closes them with the
	// reason. Default false: absence is measured against the watermark.
	RequireReports bool `kong:"-"`
	// Plan, when set, returns the salting plan served now for a task: its
	// version and the event time (epoch ms) that version was made at. A
	// data_skew incident of the task then follows the plan's effect on its
	// subtask from the subtask_stats findings (see Incident.Plan): it
	// closes, resolved by the plan, in the first window after the plan in
	// which the subtask is not saturated. It is called on Observe's
	// goroutine.
	Plan func(jobID, taskName string) (version uint64, at int64, ok bool) `kong:"-"`
	// ReliefWithin is how long a plan may be served without relieving its
	// data_skew incident's subtask, or a higher parallelism be in effect
	// without relieving an under_provisioned incident's task, before the
	// incident says so (PlanEffect.Overdue, RescaleEffect.Overdue); it
	// stays open. The jobs poll for plans every 30 s by default, and
	// relief shows in the next windows.
	ReliefWithin time.Duration `kong:"-" default:"3m" range:"(0s,]"`
}

// DefaultConfig returns the defaults the tags declare, with every cause.
func DefaultConfig() Config {
	c := knob.Defaults[Config]()
	c.Causes = Causes()
	return c
}

// Validate reports every invalid field; it changes nothing.
func (c Config) Validate() error {
	errs := []error{knob.Check(c)}
	if len(c.Causes) == 0 {
		errs = append(errs, errors.New("causes: none"))
	}
	for _, cause := range c.Causes {
		if !slices.Contains(Causes(), cause) {
			errs = append(errs, fmt.Errorf("cause %q: unknown", cause))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("incident tracker config: %w", err)
	}
	return nil
}
