package deliver

import (
	"testing"

	"github.com/skewlens/skewlens/internal/knob"
)

// TestFanoutConfigSettings: the tags of FanoutConfig are well formed, and
// its defaults valid.
func TestFanoutConfigSettings(t *testing.T) {
	if _, err := knob.Settings(FanoutConfig{}); err != nil {
		t.Fatal(err)
	}
	if err := DefaultFanoutConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}
