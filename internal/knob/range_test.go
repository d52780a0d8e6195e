package knob

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRangeRules(t *testing.T) {
	dur := reflect.ValueOf(time.Duration(0))
	tests := []struct {
		tag      string
		v        any
		wantOK   bool
		wantRule string
	}{
		{"(0,1]", 1.0, true, "must be in (0,1]"},
		{"(0,1]", 0.0, false, "must be in (0,1]"},
		{"(0,1]", 1.5, false, "must be in (0,1]"},
		{"[0.5,1)", 1.0, false, "must be in [0.5,1)"},
		{"[0.5,1)", 0.5, true, "must be in [0.5,1)"},
		{"[2,10]", 10, true, "must be in [2,10]"},
		{"[2,10]", 11, false, "must be in [2,10]"},
		{"[1,]", 0, false, "must be at least 1"},
		{"(1,]", 1.0, false, "must be above 1"},
		{"[0s,]", -time.Second, false, "must not be negative"},
		{"[0s,]", time.Duration(0), true, "must not be negative"},
		{"[1ms,]", 500 * time.Microsecond, false, "must be at least 1ms"},
		{"(0s,]", time.Duration(0), false, "must be above 0s"},
		{"[,5]", 6, false, "must be at most 5"},
		{"[1,]", "", false, "must not be empty"},
		{"[1,16]", strings.Repeat("x", 17), false, "must be 1 to 16 bytes long"},
		{"[1,16]", "#", true, "must be 1 to 16 bytes long"},
		{"[1,]", []string{}, false, "must not be empty"},
		{"[0,]", math.Inf(1), false, "must not be negative"}, // never in range
		{"[0,]", math.NaN(), false, "must not be negative"},
		{"[1ms,]", int64(0), false, "must be at least 1ms"}, // an int64 of milliseconds
		{"[1ms,]", int64(1), true, "must be at least 1ms"},
	}
	for _, tt := range tests {
		r, err := ParseRange(tt.tag)
		if err != nil {
			t.Errorf("%s: %v", tt.tag, err)
			continue
		}
		v := reflect.ValueOf(tt.v)
		if d, ok := tt.v.(time.Duration); ok {
			v = reflect.New(dur.Type()).Elem()
			v.SetInt(int64(d))
		}
		ok, err := r.Contains(v)
		if err != nil || ok != tt.wantOK {
			t.Errorf("%s contains %v = %v, %v; want %v", tt.tag, tt.v, ok, err, tt.wantOK)
		}
		if got := r.Rule(v.Type()); got != tt.wantRule {
			t.Errorf("%s rule %q, want %q", tt.tag, got, tt.wantRule)
		}
	}
	for _, bad := range []string{"", "0,1", "[,]", "[1"} {
		if _, err := ParseRange(bad); err == nil {
			t.Errorf("range %q parsed", bad)
		}
	}
}
