package knob

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Range is a parsed range tag.
type Range struct {
	lo, hi         string // bounds as written; "" is unbounded
	loOpen, hiOpen bool   // the bound itself is excluded
}

// ParseRange parses a range tag whose variables are expanded.
func ParseRange(s string) (Range, error) {
	if len(s) < 3 || !strings.ContainsRune("[(", rune(s[0])) || !strings.ContainsRune("])", rune(s[len(s)-1])) {
		return Range{}, fmt.Errorf("range %q: want [lo,hi] with ( or ) for an excluded bound", s)
	}
	lo, hi, ok := strings.Cut(s[1:len(s)-1], ",")
	if !ok || (lo == "" && hi == "") {
		return Range{}, fmt.Errorf("range %q: want [lo,hi] with at least one bound", s)
	}
	return Range{lo: strings.TrimSpace(lo), hi: strings.TrimSpace(hi), loOpen: s[0] == '(', hiOpen: s[len(s)-1] == ')'}, nil
}

var durationType = reflect.TypeFor[time.Duration]()

// measure returns the number a range applies to for v: the value of a
// number or duration (in nanoseconds), the length of a string or list;
// parse reads a bound in the same unit (a duration for an int64 of
// milliseconds is read as such by Contains's caller through millis).
func measure(v reflect.Value) (x float64, parse func(string) (float64, error), ok bool) {
	parseInt := func(s string) (float64, error) {
		n, err := strconv.ParseInt(s, 10, 64)
		return float64(n), err
	}
	switch {
	case v.Type() == durationType:
		return float64(v.Int()), parseDuration, true
	case v.CanInt():
		return float64(v.Int()), parseInt, true
	case v.CanUint():
		return float64(v.Uint()), parseInt, true
	case v.CanFloat():
		return v.Float(), func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }, true
	case v.Kind() == reflect.String, v.Kind() == reflect.Slice:
		return float64(v.Len()), parseInt, true
	}
	return 0, nil, false
}

func parseDuration(s string) (float64, error) {
	d, err := time.ParseDuration(s)
	return float64(d), err
}

// Contains reports whether v is in r; err reports a bound that does not
// parse as v's type. An int64 checked against duration bounds (1ms) is
// taken as milliseconds.
func (r Range) Contains(v reflect.Value) (bool, error) {
	x, parse, ok := measure(v)
	if !ok {
		return false, fmt.Errorf("a range does not apply to %s", v.Type())
	}
	if v.Kind() == reflect.Int64 && v.Type() != durationType && (isDuration(r.lo) || isDuration(r.hi)) {
		x, parse = float64(time.Duration(v.Int())*time.Millisecond), parseDuration
	}
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return false, nil
	}
	if r.lo != "" {
		lo, err := parse(r.lo)
		if err != nil {
			return false, fmt.Errorf("range bound %q: %w", r.lo, err)
		}
		if x < lo || (r.loOpen && x == lo) {
			return false, nil
		}
	}
	if r.hi != "" {
		hi, err := parse(r.hi)
		if err != nil {
			return false, fmt.Errorf("range bound %q: %w", r.hi, err)
		}
		if x > hi || (r.hiOpen && x == hi) {
			return false, nil
		}
	}
	return true, nil
}

// isDuration reports whether a bound is written as a duration (1ms).
func isDuration(bound string) bool {
	if bound == "" {
		return false
	}
	_, err := strconv.ParseFloat(bound, 64)
	return err != nil
}

// Rule states the range as a rule, for errors and help: "must be in
// (0,1]", "must be at least 1ms"; of a string or list, its length.
func (r Range) Rule(t reflect.Type) string {
	if t.Kind() == reflect.String || t.Kind() == reflect.Slice {
		what := "bytes long"
		if t.Kind() == reflect.Slice {
			what = "items"
		}
		switch {
		case r.lo == "1" && r.hi == "" && !r.loOpen:
			return "must not be empty"
		case r.hi == "":
			return fmt.Sprintf("must be at least %s %s", r.lo, what)
		}
		return fmt.Sprintf("must be %s to %s %s", cmp.Or(r.lo, "0"), r.hi, what)
	}
	switch {
	case r.lo != "" && r.hi != "":
		return fmt.Sprintf("must be in %s%s,%s%s", pick(r.loOpen, "(", "["), r.lo, r.hi, pick(r.hiOpen, ")", "]"))
	case r.lo != "" && !r.loOpen && (r.lo == "0" || r.lo == "0s"):
		return "must not be negative"
	case r.lo != "":
		return pick(r.loOpen, "must be above ", "must be at least ") + r.lo
	}
	return pick(r.hiOpen, "must be below ", "must be at most ") + r.hi
}

func pick(open bool, ifOpen, ifClosed string) string {
	if open {
		return ifOpen
	}
	return ifClosed
}
