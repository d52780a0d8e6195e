package alert

import (
	"testing"

	"github.com/skewlens/skewlens/internal/testenv/puretest"
)

// pureImports are what the pure packages may import beyond the pure
// standard library: net/url only escapes strings (the runbook's salting
// URL); the engine and the incidents alerts are made from are pure
// themselves.
var pureImports = puretest.Allowed{
	"net/url":                           true,
	"github.com/skewlens/skewlens/skew": true,
	"github.com/skewlens/skewlens/alert/incident": true,
	// knob reads the Configs' tags, as the engine's.
	"github.com/skewlens/skewlens/internal/knob": true,
}

// TestPure checks that packages alert and alert/incident stay pure
// (their doc comments say so): no non-test file imports anything that
// does I/O, logs, keeps metrics or synchronises goroutines, reads the
// clock, or starts or waits on goroutines.
func TestPure(t *testing.T) {
	puretest.Check(t, pureImports, 5, ".", "incident")
}
