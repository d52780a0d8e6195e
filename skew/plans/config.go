package plans

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/skewlens/skewlens/internal/knob"
)

// Config configures a Manager. Its tags declare each setting once
// (internal/knob): DefaultConfig and Validate read them, and the command
// line binds the flags among them. NewManager also reads a zero field as
// its default.
type Config struct {
	// Cooldown is how long a hot key stays salted after the last window in
	// which it was hot. It keeps a key that drops out of the top keys for
	// a window or two from leaving and re-entering the plan, which would
	// make the Flink job re-key its state each time.
	Cooldown time.Duration `name:"plan-cooldown" default:"10m" range:"[1ms,]" group:"Plans" help:"How long a hot key stays salted after the last window it was hot in."`
	// TTL is how long a plan stays without being confirmed by a
	// salting_plan finding of its task before it is retired. A plan is
	// also retired as soon as all its keys have cooled down.
	TTL time.Duration `name:"plan-ttl" default:"30m" range:"[1ms,]" group:"Plans" help:"Retire a plan that no finding confirmed for this long."`
	// BucketChange is the relative change of a key's bucket count that is
	// material, as a fraction of the current count: the plan keeps a key's
	// salted keys until the engine proposes a count that differs by at
	// least BucketChange × current (at 0.5: 2→3, 3→5, 4→6, 8→4, 8→12 are
	// material; 3→4, 8→10 are not).
	BucketChange float64 `kong:"-" default:"0.5" range:"(0,1]"`
	// Separator joins a key and its salt, and must equal the engine's
	// SaltSeparator (the command line sets it from --salt-separator): keys
	// whose salted keys do not start with key + Separator are left out of
	// plans.
	Separator string `kong:"-" default:"#" range:"[1,${max_separator}]"`
	// MaxPlans bounds the tasks the Manager tracks, live or recently
	// retired. When it is reached, the oldest retired task is forgotten
	// first; when none is, findings of new tasks are dropped and counted
	// in Stats.Overflow.
	MaxPlans int `kong:"-" default:"10000" range:"[1,]"`
	// MaxKeys bounds the keys of one plan. Beyond it the keys that are not
	// hot in the current window are dropped first, least recently hot
	// first, then the smallest shares; each dropped key is counted in
	// Stats.KeysCapped.
	MaxKeys int `kong:"-" default:"64" range:"[1,]"`
	// RetainRetired is how long a retired plan's version is remembered (in
	// event time), so that a plan that comes back within it continues its
	// numbering instead of starting at 1 again.
	RetainRetired time.Duration `kong:"-" default:"24h" range:"(0s,]"`
}

// KnobVars gives the range bounds the tags name.
func (Config) KnobVars() map[string]string {
	return map[string]string{"max_separator": strconv.Itoa(MaxSeparatorBytes)}
}

// DefaultConfig returns the defaults the tags declare. Callers start from
// it and override what they configure.
func DefaultConfig() Config { return knob.Defaults[Config]() }

// withDefaults returns c with every zero field set to its default.
// NewManager applies it: a zero field means its default, as the many
// Config literals of the tests rely on.
func (c Config) withDefaults() Config {
	knob.FillZero(&c)
	return c
}

// Validate reports every invalid field. It changes nothing: zero fields
// are invalid here, NewManager fills them in first.
func (c Config) Validate() error {
	errs := []error{knob.Check(c)}
	// The separator's length is its range's; checkName adds what a
	// plan's separator may contain.
	if c.Separator != "" && len(c.Separator) <= MaxSeparatorBytes {
		if err := checkName("separator", c.Separator, MaxSeparatorBytes); err != nil {
			errs = append(errs, err)
		}
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
