package skew

import "testing"

// TestJobLabel: a run of a job reads as its name and the first eight
// characters of its id, so two runs of one job read apart.
func TestJobLabel(t *testing.T) {
	tests := []struct{ name, id, want string }{
		{"orders", "3f2a1c9e5b7d4a1f8c6e2d0b9a7f5e3c", "orders (3f2a1c9e)"},
		{"orders", "5b7d4a1f8c6e2d0b9a7f5e3c3f2a1c9e", "orders (5b7d4a1f)"},
		{"", "3f2a1c9e5b7d4a1f8c6e2d0b9a7f5e3c", "3f2a1c9e"},
		{"orders", "", "orders"},
		{"orders", "j1", "orders (j1)"},
		{"orders", "ééééééééé", "orders (éééééééé)"}, // cut by character, never inside one
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := JobLabel(tt.name, tt.id); got != tt.want {
			t.Errorf("JobLabel(%q, %q) = %q, want %q", tt.name, tt.id, got, tt.want)
		}
	}
}
