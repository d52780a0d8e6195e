package decode

import (
	"encoding/binary"
	"math/bits"
)

// Word-at-a-time (SWAR) scans for the bytes that end a line-protocol
// token. They were the hot spot of a metrics fleet: most of a Flink
// InfluxdbReporter line is tag values (32-hex-digit ids), and most lines
// are of metrics skewlens ignores, whose tag set is only searched for the
// space before the fields.
//
// Each finder looks at eight bytes per step. For a needle byte c,
// x = w ^ (lsb*c) has a zero byte where w has c, and (x-lsb) &^ x has the
// high bit of that byte set. The subtraction can borrow through a zero
// byte and so mark bytes above the first match too, but never below it:
// the lowest marked byte is always the first match, which is all a finder
// returns. The last fewer-than-eight bytes are read as one word as well
// (tailWord), so that short tokens at the end of a line take no byte loop.

// eqBytes marks (high bit) the bytes of w equal to the byte repeated in
// needle (lsb*c); exact up to and including the lowest mark.
func eqBytes(w, needle uint64) uint64 {
	x := w ^ needle
	return (x - lsb) &^ x
}

// influxValueStops marks ',', ' ' and '\\': the bytes that end a
// measurement or a tag value.
func influxValueStops(w uint64) uint64 {
	return (eqBytes(w, lsb*',') | eqBytes(w, lsb*' ') | eqBytes(w, lsb*'\\')) & msb
}

// influxKeyStops marks ',', ' ', '\\' and '=': the bytes that end a tag or
// field key.
func influxKeyStops(w uint64) uint64 {
	return (eqBytes(w, lsb*',') | eqBytes(w, lsb*' ') | eqBytes(w, lsb*'\\') | eqBytes(w, lsb*'=')) & msb
}

// braceOrTab marks '{' and '\t'. With influxValueStops it marks the bytes
// that end the metric-name token for detect: '\\', '{', ',', ' ' and
// '\t' (two calls, as one function of five needles would be too big for
// the compiler to inline).
func braceOrTab(w uint64) uint64 {
	return (eqBytes(w, lsb*'{') | eqBytes(w, lsb*'\t')) & msb
}

// tailWord returns b[i:], which must hold 1 to 7 bytes, in the low bytes
// of a little-endian word whose other bytes are zero. No needle is zero,
// so the padding never matches.
func tailWord(b []byte, i int) uint64 {
	n := len(b) - i
	if len(b) >= 8 {
		// One load of the last eight bytes; shift out those before i.
		return binary.LittleEndian.Uint64(b[len(b)-8:]) >> (8 * (8 - n))
	}
	var w uint64
	for k := len(b) - 1; k >= i; k-- {
		w = w<<8 | uint64(b[k])
	}
	return w
}

// firstMark converts the lowest marked byte of t (non-zero) to an offset.
func firstMark(t uint64) int { return bits.TrailingZeros64(t) >> 3 }

// scanInfluxValue scans from b[i] to the first unescaped ',' or ' ' (the
// end of a measurement or tag value) and returns its index, or len(b),
// and whether a backslash was seen. A backslash protects the byte after
// it.
func scanInfluxValue(b []byte, i int) (int, bool) {
	esc := false
	for i < len(b) {
		var t uint64
		if i+8 <= len(b) {
			t = influxValueStops(binary.LittleEndian.Uint64(b[i:]))
		} else {
			t = influxValueStops(tailWord(b, i))
		}
		if t == 0 {
			i += 8
			continue
		}
		i += firstMark(t)
		if b[i] != '\\' {
			return i, esc
		}
		esc = true
		i += 2
	}
	return len(b), esc
}

// scanInfluxKey is scanInfluxValue for a tag or field key, which also ends
// at an unescaped '='.
func scanInfluxKey(b []byte, i int) (int, bool) {
	esc := false
	for i < len(b) {
		var t uint64
		if i+8 <= len(b) {
			t = influxKeyStops(binary.LittleEndian.Uint64(b[i:]))
		} else {
			t = influxKeyStops(tailWord(b, i))
		}
		if t == 0 {
			i += 8
			continue
		}
		i += firstMark(t)
		if b[i] != '\\' {
			return i, esc
		}
		esc = true
		i += 2
	}
	return len(b), esc
}

// findNameStop returns the index of the first '\\', '{', ',', ' ' or '\t'
// at or after i, or len(b) (also when i >= len(b)).
func findNameStop(b []byte, i int) int {
	for i < len(b) {
		var w uint64
		if i+8 <= len(b) {
			w = binary.LittleEndian.Uint64(b[i:])
		} else {
			w = tailWord(b, i)
		}
		t := influxValueStops(w) | braceOrTab(w)
		if t != 0 {
			return i + firstMark(t)
		}
		i += 8
	}
	return len(b)
}
