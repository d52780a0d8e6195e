package retry

import "testing"

var presets = map[string]Policy{"Pipeline": Pipeline, "Setup": Setup, "Request": Request, "Delivery": Delivery}

// TestPresets checks that every preset is a policy Do can follow that
// retries at all, and that no two presets are the same policy under two
// names.
func TestPresets(t *testing.T) {
	seen := map[Policy]string{}
	for name, p := range presets {
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
	}
}
