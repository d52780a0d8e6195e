package plans

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"time"
)

// Config configures a Manager. DefaultConfig returns it with the
// defaults given in the field comments; NewManager also reads a zero field
// as its default.
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

// Defaults, used by DefaultConfig and named for the tests.
const (
	DefaultCooldown      = 10 * time.Minute
	DefaultTTL           = 30 * time.Minute
	DefaultBucketChange  = 0.5
	DefaultSeparator     = "#"
	DefaultMaxPlans      = 10000
	DefaultMaxKeys       = 64
	DefaultRetainRetired = 24 * time.Hour
)

// DefaultConfig returns a Config with every default filled in: the
// values named by the constants above, which the field comments state in
// words. Callers start from it and override what they configure.
func DefaultConfig() Config {
	return Config{
		Cooldown:      DefaultCooldown,
		TTL:           DefaultTTL,
		BucketChange:  DefaultBucketChange,
		Separator:     DefaultSeparator,
		MaxPlans:      DefaultMaxPlans,
		MaxKeys:       DefaultMaxKeys,
		RetainRetired: DefaultRetainRetired,
	}
}

// withDefaults returns c with every zero field set to its value in
// DefaultConfig. NewManager applies it: a zero field means its default,
// as the many Config literals of the tests rely on.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	c.Cooldown = cmp.Or(c.Cooldown, d.Cooldown)
	c.TTL = cmp.Or(c.TTL, d.TTL)
	c.BucketChange = cmp.Or(c.BucketChange, d.BucketChange)
	c.Separator = cmp.Or(c.Separator, d.Separator)
	c.MaxPlans = cmp.Or(c.MaxPlans, d.MaxPlans)
	c.MaxKeys = cmp.Or(c.MaxKeys, d.MaxKeys)
	c.RetainRetired = cmp.Or(c.RetainRetired, d.RetainRetired)
	return c
}

// Validate reports every invalid field. It changes nothing: zero fields
// are invalid here, NewManager fills them in first.
func (c Config) Validate() error {
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
	if err := checkName("separator", c.Separator, MaxSeparatorBytes); err != nil {
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
