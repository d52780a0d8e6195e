package alertmanager

import (
	"testing"

	"github.com/skewlens/skewlens/internal/knob"
)

// TestConfigSettings: the tags of Config are well formed, and its
// defaults valid once the required URL is set.
func TestConfigSettings(t *testing.T) {
	if _, err := knob.Settings(Config{}); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.URL = "http://127.0.0.1:9093"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}
