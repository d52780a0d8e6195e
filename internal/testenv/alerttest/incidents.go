package alerttest

import (
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew/incident"
)

// Incidents returns an incident tracker with the default configuration
// but for Hysteresis.For (negative: alerts fire at the first finding):
// alerts are made from its changes (alert.StateMachine.Apply,
// alertdeliver.Alerter.Apply), as in the pipeline.
func Incidents(tb testing.TB, forDur time.Duration) *incident.Tracker {
	tb.Helper()
	cfg := incident.DefaultConfig()
	cfg.Hysteresis.For = forDur
	tr, err := incident.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return tr
}
