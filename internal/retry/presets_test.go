package retry

import "testing"

// TestPresets checks that every preset is a policy Do can follow that
// retries at all, that no two presets are the same policy under two
// names, and that each reads and writes as its name.
func TestPresets(t *testing.T) {
	seen := map[Policy]string{}
	for name, p := range presets() {
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if p.MaxRetries == 0 {
			t.Errorf("%s never retries", name)
		}
		if p.OrDefault(Policy{}) != p {
			t.Errorf("%s has a zero field", name)
		}
		if other, ok := seen[p]; ok {
			t.Errorf("%s and %s are the same policy %+v", name, other, p)
		}
		seen[p] = name
		var got Policy
		if err := got.UnmarshalText([]byte(name)); err != nil || got != p {
			t.Errorf("UnmarshalText(%s) = %+v, %v; want %+v", name, got, err, p)
		}
		if text, _ := p.MarshalText(); string(text) != name {
			t.Errorf("MarshalText(%s) = %s", name, text)
		}
	}
	if len(seen) != 4 {
		t.Errorf("%d presets, want 4", len(seen))
	}
	var p Policy
	if err := p.UnmarshalText([]byte("fast")); err == nil {
		t.Error("UnmarshalText(fast): no error")
	}
}
