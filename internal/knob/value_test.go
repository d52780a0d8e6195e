package knob

import (
	"testing"
	"time"
)

func TestDurationFormat(t *testing.T) {
	tests := []struct{ in, want string }{
		{"10m", "10m"}, {"1h", "1h"}, {"1h30m", "1h30m"}, {"90s", "1m30s"}, {"2s", "2s"},
		{"500ms", "500ms"}, {"0s", "0s"}, {"24h", "24h"}, {"1h0m5s", "1h0m5s"},
	}
	for _, tt := range tests {
		d, err := time.ParseDuration(tt.in)
		if err != nil {
			t.Fatal(err)
		}
		if got := Duration(d); got != tt.want {
			t.Errorf("Duration(%s) = %q, want %q", tt.in, got, tt.want)
		}
		if back, err := time.ParseDuration(Duration(d)); err != nil || back != d {
			t.Errorf("%q does not parse back to %s: %v, %v", Duration(d), d, back, err)
		}
	}
}
