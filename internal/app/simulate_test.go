package app

import (
	"testing"

	"github.com/skewlens/skewlens/pipeline/simulate"
)

// TestFleetOfIncidents: --incidents 0 is none, which the FleetConfig
// spells -1 (it reads 0 as its default).
func TestFleetOfIncidents(t *testing.T) {
	if got := FleetOf(simulate.FleetConfig{Jobs: 3}, 1, 0, 0, 0, 0).Incidents; got != -1 {
		t.Errorf("--incidents 0: %d, want -1", got)
	}
	if got := FleetOf(simulate.FleetConfig{Jobs: 3, Incidents: 2}, 1, 0, 0, 0, 0).Incidents; got != 2 {
		t.Errorf("--incidents 2: %d", got)
	}
}
