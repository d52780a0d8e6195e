package decode

import (
	"math"
	"strconv"
)

// Number parsing. strconv is correct but its general path costs 30-60 ns;
// the values on our lines (timestamps, small decimals) nearly always fit
// the exact fast paths below, which give bit-identical results.

// pow10 holds the powers of ten that are exact in float64.
var pow10 = [...]float64{
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
}

// parseFloat parses a decimal number (as strconv.ParseFloat does, so also
// "NaN", "Inf", hex floats). ok is false for syntax errors and for values
// out of float64 range. NaN and ±Inf are returned with ok true; callers
// that need finite values check.
func parseFloat(s string) (float64, bool) {
	if f, ok := fastFloat(s); ok {
		return f, true
	}
	if !plausibleFloat(s) {
		// Spare strconv's error path, which allocates, on plain garbage.
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

// plausibleFloat reports whether strconv.ParseFloat might accept s: a
// well-formed decimal, an inf/infinity/nan spelling, or anything starting
// like a hex float (left for strconv to judge).
func plausibleFloat(s string) bool {
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		return true
	}
	switch len(s) {
	case 3, 8:
		if equalFold(s, "inf") || equalFold(s, "nan") || equalFold(s, "infinity") {
			return true
		}
	}
	i, digits := 0, 0
	for i < len(s) && s[i]-'0' <= 9 {
		i++
		digits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i]-'0' <= 9 {
			i++
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		e := i
		for i < len(s) && s[i]-'0' <= 9 {
			i++
		}
		if i == e {
			return false
		}
	}
	return i == len(s)
}

// equalFold compares s with a lower-case ASCII word, ignoring case.
func equalFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := range len(s) {
		if s[i]|0x20 != lower[i] {
			return false
		}
	}
	return true
}

// fastFloat is Clinger's fast path: [+-]digits[.digits][e[+-]digits] with
// at most 15 significant digits (so the mantissa is exact) and a decimal
// exponent within ±22 (so the power of ten is exact); one IEEE operation
// then rounds correctly. ok is false when s is outside that set (which
// includes malformed input).
func fastFloat(s string) (float64, bool) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	var mant uint64
	nd := 0     // significant digits in mant
	exp := 0    // decimal exponent applied to mant
	digits := 0 // digits seen, integer and fraction part
	for ; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			break
		}
		digits++
		if mant == 0 && c == 0 {
			continue // leading zero
		}
		if nd >= 15 {
			return 0, false
		}
		mant = mant*10 + uint64(c)
		nd++
	}
	if i < len(s) && s[i] == '.' {
		i++
		fd := 0
		for ; i < len(s); i++ {
			c := s[i] - '0'
			if c > 9 {
				break
			}
			fd++
			exp--
			if mant == 0 && c == 0 {
				continue
			}
			if nd >= 15 {
				return 0, false
			}
			mant = mant*10 + uint64(c)
			nd++
		}
		if fd == 0 {
			return 0, false // "5." is left to strconv
		}
		digits += fd
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			eneg = s[i] == '-'
			i++
		}
		e, ed := 0, 0
		for ; i < len(s); i++ {
			c := s[i] - '0'
			if c > 9 {
				break
			}
			if ed >= 4 {
				return 0, false
			}
			e = e*10 + int(c)
			ed++
		}
		if ed == 0 {
			return 0, false
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	if i != len(s) {
		return 0, false
	}
	f := float64(mant)
	switch {
	case mant == 0 || exp == 0:
	case exp > 0 && exp <= 22:
		f *= pow10[exp]
	case exp < 0 && exp >= -22:
		f /= pow10[-exp]
	default:
		return 0, false
	}
	if neg {
		f = -f
	}
	return f, true
}

// le64 returns s[i:i+8] as a little-endian word; the compiler makes it one
// load.
func le64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// parseInt parses an integral number: [+-]digits, or any number
// parseFloat accepts whose value is integral (1e3, 1593004193363.0) and
// fits int64.
func parseInt(s string) (int64, bool) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	for i < len(s)-1 && s[i] == '0' {
		i++
	}
	start := i
	var u uint64
	// Eight digits a step: Influx timestamps have 19.
	for i+8 <= len(s) {
		w := le64(s, i)
		if !isEightDigits(w) {
			break
		}
		u = u*1e8 + eightDigits(w)
		i += 8
	}
	for ; i < len(s); i++ {
		c := s[i] - '0'
		if c > 9 {
			break
		}
		u = u*10 + uint64(c)
	}
	if i == len(s) && i > start {
		if i-start > 19 {
			return 0, false // > 9999999999999999999 > MaxInt64
		}
		if neg {
			if u > 1<<63 {
				return 0, false
			}
			return -int64(u), true
		}
		if u > math.MaxInt64 {
			return 0, false
		}
		return int64(u), true
	}
	f, ok := parseFloat(s)
	if !ok || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, false // NaN fails f != Trunc(f); ±Inf fails the range
	}
	return int64(f), true
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
