package alert

import (
	"testing"

	"github.com/skewlens/skewlens/internal/knob"
)

// TestTrackerConfigSettings: the tags of TrackerConfig are well formed,
// and its defaults valid.
func TestTrackerConfigSettings(t *testing.T) {
	if _, err := knob.Settings(TrackerConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := DefaultTrackerConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}
