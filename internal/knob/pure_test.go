package knob

import (
	"testing"

	"github.com/skewlens/skewlens/internal/testenv/puretest"
)

// TestPure checks that knob stays pure, as the engine that imports it
// must: reflection over types and parsing of strings, no I/O, no clock.
func TestPure(t *testing.T) {
	puretest.Check(t, puretest.Allowed{}, 1, ".")
}
