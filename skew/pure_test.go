package skew

import (
	"testing"

	"github.com/skewlens/skewlens/internal/testenv/puretest"
)

// pureImports are what the engine may import beyond the pure standard
// library: its own sketch and key-group packages, a hash and a
// distribution's quantiles, all pure.
var pureImports = puretest.Allowed{
	"github.com/skewlens/skewlens/skew/hitters":  true,
	"github.com/skewlens/skewlens/skew/keygroup": true,
	"github.com/cespare/xxhash/v2":               true,
	"gonum.org/v1/gonum/stat/distuv":             true,
	// knob reads the Config's tags; it is pure itself (its TestPure).
	"github.com/skewlens/skewlens/internal/knob": true,
	// rescale formats the changes the findings recommend; net/url only
	// escapes the ids in the REST paths of a slow subtask's evidence.
	"github.com/skewlens/skewlens/skew/rescale": true,
	"net/url": true,
	// the trackers fold the engine's findings into incidents, alerts and
	// plans, and import the engine and each other.
	"github.com/skewlens/skewlens/skew":          true,
	"github.com/skewlens/skewlens/skew/incident": true,
}

// TestPure checks that the engine and its trackers stay pure, as their
// doc comments say (no I/O, no clock, no logging, no metrics): no
// non-test file of skew or of a folder under it (but plans, whose
// Manager locks a mutex because serve reads it while run writes it; it
// does no I/O and reads no clock) imports anything that does I/O, logs,
// keeps metrics, synchronises goroutines or draws random numbers, reads
// the clock, or starts or waits on goroutines.
func TestPure(t *testing.T) {
	puretest.Check(t, pureImports, 2, ".", "hitters", "keygroup", "rescale", "incident", "alert")
}
