package simulate

import (
	"testing"

	"github.com/skewlens/skewlens/internal/knob"
)

// TestConfigSettings: the tags of Config and FleetConfig are well formed,
// and their defaults valid.
func TestConfigSettings(t *testing.T) {
	for _, c := range []any{Config{}, FleetConfig{}} {
		if _, err := knob.Settings(c); err != nil {
			t.Errorf("%T: %v", c, err)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Error(err)
	}
	fleet := DefaultFleetConfig()
	fleet.Jobs = 1 // one of Jobs and Subtasks has no default
	if err := fleet.Validate(); err != nil {
		t.Error(err)
	}
}
