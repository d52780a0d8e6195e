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
}

// TestPure checks that the engine stays pure, as its doc comment says
// (no I/O, no clock, no logging, no metrics): no non-test file of skew,
// skew/hitters or skew/keygroup imports anything that does I/O, logs,
// keeps metrics, synchronises goroutines or draws random numbers, reads
// the clock, or starts or waits on goroutines.
func TestPure(t *testing.T) {
	puretest.Check(t, pureImports, 2, ".", "hitters", "keygroup", "rescale")
}
