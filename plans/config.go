package plans

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Config configures a Manager. The zero value of every field means its
// default, given in the field's comment; Validate (NewManager calls it)
// fills the defaults in and checks the values.
type Config struct {
	// Cooldown is how long a hot key stays salted after the last window in
	// which it was hot (default 10m). It keeps a key that drops out of
	// the top keys for a window or two from leaving and re-entering the
	// plan, which would make the Flink job re-key its state each time.
	Cooldown time.Duration
	// TTL is how long a plan stays without being confirmed by a
	// salting_plan finding of its task before it is retired (default
	// 30m). A plan is also retired as soon as all its keys have cooled
	// down.
	TTL time.Duration
	// BucketChange is the relative change of a key's bucket count that is
	// material, as a fraction of the current count (default 0.5): the
	// plan keeps a key's salted keys until the engine proposes a count
	// that differs by at least BucketChange × current (2→3, 3→5, 4→6,
	// 8→4, 8→12 are material; 3→4, 8→10 are not). Must be in (0, 1].
	BucketChange float64
	// Separator joins a key and its salt, and must equal the engine's
	// SaltSeparator (default "#"): keys whose salted keys do not start
	// with key + Separator are left out of plans.
	Separator string
	// MaxPlans bounds the tasks the Manager tracks, live or recently
	// retired (default 10000). When it is reached, the oldest retired
	// task is forgotten first; when none is, findings of new tasks are
	// dropped and counted in Stats.Overflow.
	MaxPlans int
	// MaxKeys bounds the keys of one plan (default 64). Beyond it the
	// keys that are not hot in the current window are dropped first,
	// least recently hot first, then the smallest shares; each dropped
	// key is counted in Stats.KeysCapped.
	MaxKeys int
	// RetainRetired is how long a retired plan's version is remembered
	// (default 24h of event time), so that a plan that comes back within
	// it continues its numbering instead of starting at 1 again.
	RetainRetired time.Duration
}

// Defaults, named for the comments above and the tests.
const (
	DefaultCooldown      = 10 * time.Minute
	DefaultTTL           = 30 * time.Minute
	DefaultBucketChange  = 0.5
	DefaultSeparator     = "#"
	DefaultMaxPlans      = 10000
	DefaultMaxKeys       = 64
	DefaultRetainRetired = 24 * time.Hour
)

// Validate fills in the defaults of c and reports every invalid field.
func (c *Config) Validate() error {
	if c.Cooldown == 0 {
		c.Cooldown = DefaultCooldown
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.BucketChange == 0 {
		c.BucketChange = DefaultBucketChange
	}
	if c.Separator == "" {
		c.Separator = DefaultSeparator
	}
	if c.MaxPlans == 0 {
		c.MaxPlans = DefaultMaxPlans
	}
	if c.MaxKeys == 0 {
		c.MaxKeys = DefaultMaxKeys
	}
	if c.RetainRetired == 0 {
		c.RetainRetired = DefaultRetainRetired
	}
	var errs []error
	if c.Cooldown < time.Millisecond {
		errs = append(errs, fmt.Errorf("cooldown %s: must be at least 1ms", c.Cooldown))
	}
	if c.TTL < time.Millisecond {
		errs = append(errs, fmt.Errorf("ttl %s: must be at least 1ms", c.TTL))
	}
	if math.IsNaN(c.BucketChange) || c.BucketChange <= 0 || c.BucketChange > 1 {
		errs = append(errs, fmt.Errorf("bucket change %v: must be in (0, 1]", c.BucketChange))
	}
	if err := checkName("separator", c.Separator, 16); err != nil {
		errs = append(errs, err)
	}
	if c.MaxPlans < 1 {
		errs = append(errs, fmt.Errorf("max plans %d: must be positive", c.MaxPlans))
	}
	if c.MaxKeys < 1 {
		errs = append(errs, fmt.Errorf("max keys %d: must be positive", c.MaxKeys))
	}
	if c.RetainRetired < 0 {
		errs = append(errs, fmt.Errorf("retain retired %s: must be positive", c.RetainRetired))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("plans config: %w", err)
	}
	return nil
}

// material reports whether a change of a key's bucket count from old to
// new is large enough to re-key the key (see Config.BucketChange).
func (c *Config) material(old, new int) bool {
	d := math.Abs(float64(new - old))
	return d > 0 && d >= c.BucketChange*float64(old)
}
