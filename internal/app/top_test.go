package app

import (
	"testing"

	"github.com/skewlens/skewlens/top"
)

// TestTopViewNoColor: NO_COLOR turns colors off unless --color asks for
// them; --width is the view's.
func TestTopViewNoColor(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	cfg := top.DefaultConfig()
	if got := topView(cfg, 80); got.Color != top.ColorNever || got.Width != 80 {
		t.Errorf("under NO_COLOR: color %v, width %d; want never, 80", got.Color, got.Width)
	}
	cfg.Color = top.ColorAlways
	if got := topView(cfg, 0); got.Color != top.ColorAlways {
		t.Errorf("--color always under NO_COLOR: %v", got.Color)
	}
}
