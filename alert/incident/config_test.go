package incident

import (
	"testing"

	"github.com/skewlens/skewlens/internal/knob"
)

// TestConfigSettings: the tags of Config are well formed, and its
// defaults valid.
func TestConfigSettings(t *testing.T) {
	if _, err := knob.Settings(Config{}); err != nil {
		t.Fatal(err)
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
}
