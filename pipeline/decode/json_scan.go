package decode

import (
	"encoding/binary"
	"math"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// The JSON scanner: one pass over an object that validates its syntax,
// records the spans of the fields json.go's tables know, and converts
// numbers while it validates them.

func skipWS(b []byte, i int) int {
	for i < len(b) && isBlank(b[i]) {
		i++
	}
	return i
}

// scanObject scans the object starting at b[i] == '{' at nesting depth
// depth, recording known fields of table tbl. It returns the index after
// the closing '}'.
func (d *Decoder) scanObject(b []byte, i int, tbl uint8, depth int) (int, *Error) {
	if depth > MaxJSONDepth {
		return 0, jsonErr(errJSONDepth)
	}
	n := len(b)
	js := &d.js
	i = skipWS(b, i+1)
	if i < n && b[i] == '}' {
		return i + 1, nil
	}
	npred := 0 // keys of the top-level object are predicted
	if tbl == tblTop {
		npred = maxPredicted
	}
	// js.have, kept in a register: stores through sp could alias it.
	// Stored back before calls that update it and before returning
	// success; after an error it does not matter.
	have := js.have
	for k := 0; ; k++ {
		if i >= n {
			return 0, jsonErr(errJSONEOF)
		}
		if b[i] != '"' {
			return 0, jsonErr("expected string key")
		}

		// Key: predicted from the previous line, else scanned and looked up.
		id, ke := -1, -1
		predict := k < npred
		if predict && i+17 <= n {
			// One slice of known length (no further bounds checks) and
			// one branch for both words.
			kb := b[i+1 : i+17]
			if p := &js.pred[k]; p.n != 0 &&
				(binary.LittleEndian.Uint64(kb[0:])&p.m0^p.w0)|
					(binary.LittleEndian.Uint64(kb[8:])&p.m1^p.w1) == 0 {
				id, ke = int(p.id), i+int(p.n)
			}
		}
		if ke < 0 {
			ks := i + 1
			var esc bool
			var err *Error
			if ke, esc, err = scanString(b, ks); err != nil {
				return 0, err
			}
			if !esc {
				id = lookupField(tbl, bytesToString(b[ks:ke]))
				if predict {
					js.pred[k].set(b[ks:ke], id)
				}
			} else {
				mark := len(d.scratch)
				d.scratch = appendJSONUnescaped(d.scratch, b[ks:ke])
				id = lookupField(tbl, bytesToString(d.scratch[mark:]))
				d.scratch = d.scratch[:mark]
				if predict {
					js.pred[k].n = 0
				}
			}
		}

		i = ke + 1
		if i < n && b[i] == ':' {
			i++
		} else {
			if i = skipWS(b, i); i >= n || b[i] != ':' {
				return 0, jsonErr("expected ':' after key")
			}
			i++
		}
		if i < n && b[i] <= ' ' {
			i = skipWS(b, i)
		}
		if i >= n {
			return 0, jsonErr(errJSONEOF)
		}

		// Value. A repeated "tags" or "value" replaces what the earlier
		// one held, whatever the new value's type.
		switch id {
		case fTags:
			have &^= tagBits
		case fValue:
			have &^= valueBits
		}
		var err *Error
		switch c := b[i]; {
		case id < 0:
			i, err = skipValue(b, i, depth)
		case c == '"':
			// The common string, without escapes, is scanned here eight
			// bytes at a time; from the first special byte on (which
			// usually is the closing quote) scanString takes over. Only
			// bytes known to be plain are skipped, so the result is
			// scanString's.
			sp := &js.spans[id]
			j := i + 1
			sp.s = j
			sp.kind = jString
			for j+8 <= n {
				if t := strSpecial(binary.LittleEndian.Uint64(b[j:])); t != 0 {
					j += bits.TrailingZeros64(t) >> 3
					break
				}
				j += 8
			}
			if j < n && b[j] == '"' {
				sp.e, sp.esc = j, false
			} else {
				sp.e, sp.esc, err = scanString(b, j)
			}
			i = sp.e + 1
			have |= 1 << id
		case c-'1' <= 8:
			// Inline fast path for an integer of 1 to 15 digits that
			// does not start with 0 (timestamps, parallelism, indexes),
			// storing what scanNumber would; anything else (fraction,
			// exponent, 16 digits or more) goes to scanNumber. Saves a
			// call per number, which is measurable here.
			sp := &js.spans[id]
			sp.s = i
			sp.kind = jNumber
			j := i
			var mant uint64
			if j+8 <= n {
				if w := binary.LittleEndian.Uint64(b[j:]); isEightDigits(w) {
					mant = eightDigits(w)
					j += 8
				}
			}
			for j < n && j-i < 16 {
				d := b[j] - '0'
				if d > 9 {
					break
				}
				mant = mant*10 + uint64(d)
				j++
			}
			if j < n && (b[j] <= '9' && b[j] >= '.' || b[j]|0x20 == 'e') || j-i >= 16 {
				// A fraction or exponent follows (the range test also
				// takes '/' and digits: harmless), or 16+ digits.
				i, err = scanNumber(b, i, sp)
			} else {
				sp.mant, sp.exp, sp.neg, sp.flags = mant, 0, false, numInt|numExact
				i = j
			}
			sp.e = i
			have |= 1 << id
		case c == '-' || c-'0' <= 9:
			sp := &js.spans[id]
			sp.s = i
			sp.kind = jNumber
			i, err = scanNumber(b, i, sp)
			sp.e = i
			have |= 1 << id
		case (id == fTags || id == fValue) && c == '{':
			sub := tblTags
			if id == fValue {
				sub = tblValue
			}
			js.have = have | 1<<id
			js.spans[id] = jspan{s: i, kind: jObject}
			i, err = d.scanObject(b, i, sub, depth+1)
			js.spans[id].e = i
			have = js.have
		default:
			js.have = have
			i, err = d.scanField(b, i, depth, id)
			have = js.have
		}
		if err != nil {
			return 0, err
		}

		if i < n && b[i] == ',' {
			i++
			if i < n && b[i] <= ' ' {
				i = skipWS(b, i)
			}
			continue
		}
		if i = skipWS(b, i); i >= n {
			return 0, jsonErr(errJSONEOF)
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			js.have = have
			return i + 1, nil
		default:
			return 0, jsonErr("expected ',' or '}'")
		}
	}
}

// strSpecial flags (bit 7 of the byte) the bytes of w that end the plain
// run of a JSON string: '"', '\\' and control bytes < 0x20. Bits above the
// lowest flagged byte may be false positives (borrows), so only the
// lowest one is meaningful.
func strSpecial(w uint64) uint64 {
	q := w ^ (lsb * '"')
	s := w ^ (lsb * '\\')
	return (((q - lsb) &^ q) | ((s - lsb) &^ s) | ((w - lsb*0x20) &^ w)) & msb
}

// scanField scans a non-string value at b[i] (i < len(b)) and records it
// as field id.
func (d *Decoder) scanField(b []byte, i, depth, id int) (int, *Error) {
	sp := &d.js.spans[id]
	sp.s = i
	var err *Error
	switch c := b[i]; c {
	case '{', '[':
		sp.kind = jObject
		if c == '[' {
			sp.kind = jArray
		}
		i, err = skipValue(b, i, depth)
	case '"':
		sp.s = i + 1
		sp.kind = jString
		sp.e, sp.esc, err = scanString(b, i+1)
		i = sp.e + 1
		if err == nil {
			d.js.have |= 1 << id
		}
		return i, err
	case 't':
		sp.kind = jTrue
		i, err = scanLiteral(b, i, "true")
	case 'f':
		sp.kind = jFalse
		i, err = scanLiteral(b, i, "false")
	case 'n':
		sp.kind = jNull
		i, err = scanLiteral(b, i, "null")
	default:
		sp.kind = jNumber
		i, err = scanNumber(b, i, sp)
	}
	sp.e = i
	if err != nil {
		return 0, err
	}
	d.js.have |= 1 << id
	return i, nil
}

// skipValue validates and skips the value at b[i] (i < len(b)) found
// inside a container at nesting depth depth.
func skipValue(b []byte, i, depth int) (int, *Error) {
	switch b[i] {
	case '"':
		e, _, err := scanString(b, i+1)
		if err != nil {
			return 0, err
		}
		return e + 1, nil
	case '{':
		if depth+1 > MaxJSONDepth {
			return 0, jsonErr(errJSONDepth)
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		for {
			if i >= len(b) {
				return 0, jsonErr(errJSONEOF)
			}
			if b[i] != '"' {
				return 0, jsonErr("expected string key")
			}
			e, _, err := scanString(b, i+1)
			if err != nil {
				return 0, err
			}
			i = skipWS(b, e+1)
			if i >= len(b) || b[i] != ':' {
				return 0, jsonErr("expected ':' after key")
			}
			i = skipWS(b, i+1)
			if i >= len(b) {
				return 0, jsonErr(errJSONEOF)
			}
			if i, err = skipValue(b, i, depth+1); err != nil {
				return 0, err
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return 0, jsonErr(errJSONEOF)
			}
			switch b[i] {
			case ',':
				i = skipWS(b, i+1)
			case '}':
				return i + 1, nil
			default:
				return 0, jsonErr("expected ',' or '}'")
			}
		}
	case '[':
		if depth+1 > MaxJSONDepth {
			return 0, jsonErr(errJSONDepth)
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		for {
			if i >= len(b) {
				return 0, jsonErr(errJSONEOF)
			}
			var err *Error
			if i, err = skipValue(b, i, depth+1); err != nil {
				return 0, err
			}
			i = skipWS(b, i)
			if i >= len(b) {
				return 0, jsonErr(errJSONEOF)
			}
			switch b[i] {
			case ',':
				i = skipWS(b, i+1)
			case ']':
				return i + 1, nil
			default:
				return 0, jsonErr("expected ',' or ']'")
			}
		}
	case 't':
		return scanLiteral(b, i, "true")
	case 'f':
		return scanLiteral(b, i, "false")
	case 'n':
		return scanLiteral(b, i, "null")
	}
	var sp jspan
	return scanNumber(b, i, &sp)
}

func scanLiteral(b []byte, i int, lit string) (int, *Error) {
	if len(b)-i < len(lit) || bytesToString(b[i:i+len(lit)]) != lit {
		return 0, jsonErr("invalid literal")
	}
	return i + len(lit), nil
}

// scanNumber validates the JSON number at b[i], returns its end and
// stores its decimal mantissa and exponent in sp (mant, exp, neg, flags).
//
// Fast path: [-]int[.frac] with at most 19 digits in all, so mant holds
// every digit exactly; mant and exp are then what scanNumberSlow computes
// (it too keeps every digit below 20 significant ones). Anything else
// (exponent, leading zero, no digit, more digits) goes to scanNumberSlow,
// which also reports the errors.
func scanNumber(b []byte, i int, sp *jspan) (int, *Error) {
	start := i
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	j := i
	var mant uint64
	if i+8 <= len(b) {
		if w := binary.LittleEndian.Uint64(b[i:]); isEightDigits(w) {
			mant = eightDigits(w)
			i += 8
		}
	}
	for i < len(b) {
		d := b[i] - '0'
		if d > 9 {
			break
		}
		mant = mant*10 + uint64(d)
		i++
	}
	nd := i - j
	if nd == 0 || nd > 19 || (b[j] == '0' && nd > 1) {
		return scanNumberSlow(b, start, sp)
	}
	flags := numInt | numExact
	var exp int32
	if i < len(b) && b[i] == '.' {
		// Fraction digits (sample_rate, weight): without this fast path
		// every such number was scanned twice.
		i++
		f := i
		for i < len(b) {
			d := b[i] - '0'
			if d > 9 {
				break
			}
			mant = mant*10 + uint64(d)
			i++
		}
		if i == f || nd+i-f > 19 {
			return scanNumberSlow(b, start, sp)
		}
		exp = int32(f - i)
		flags = numExact
	}
	if i < len(b) && b[i]|0x20 == 'e' {
		return scanNumberSlow(b, start, sp)
	}
	sp.mant, sp.exp, sp.neg, sp.flags = mant, exp, neg, flags
	return i, nil
}

func isEightDigits(w uint64) bool {
	return w&0xF0F0F0F0F0F0F0F0 == 0x3030303030303030 &&
		(w+0x0606060606060606)&0xF0F0F0F0F0F0F0F0 == 0x3030303030303030
}

// scanNumberSlow is scanNumber for fractions, exponents, huge integers
// and malformed input.
func scanNumberSlow(b []byte, i int, sp *jspan) (int, *Error) {
	n := len(b)
	sp.neg = false
	if i < n && b[i] == '-' {
		sp.neg = true
		i++
	}
	if i >= n {
		return 0, jsonErr(errJSONEOF)
	}
	var mant uint64
	var exp int32
	nd := 0 // significant digits in mant
	exact := true
	switch c := b[i]; {
	case c == '0':
		i++
	case c >= '1' && c <= '9':
		// Eight digits at a time while they fit in mant (timestamps).
		for i+8 <= n && nd <= 11 {
			w := binary.LittleEndian.Uint64(b[i:])
			if !isEightDigits(w) {
				break
			}
			mant = mant*100000000 + eightDigits(w)
			nd += 8
			i += 8
		}
		for i < n {
			d := b[i] - '0'
			if d > 9 {
				break
			}
			if nd < 19 {
				mant = mant*10 + uint64(d)
				nd++
			} else {
				exact = false
				exp++
			}
			i++
		}
	default:
		return 0, jsonErr("invalid value")
	}
	flags := numInt
	if i < n && b[i] == '.' {
		flags = 0
		i++
		s := i
		for i < n {
			d := b[i] - '0'
			if d > 9 {
				break
			}
			switch {
			case mant == 0 && d == 0:
				exp--
			case nd < 19:
				mant = mant*10 + uint64(d)
				nd++
				exp--
			default:
				exact = false
			}
			i++
		}
		if i == s {
			return 0, jsonErr("invalid number")
		}
	}
	if i < n && (b[i] == 'e' || b[i] == 'E') {
		flags = 0
		i++
		eneg := false
		if i < n && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		s := i
		var e int32
		for i < n && b[i]-'0' <= 9 {
			if e < 100000 {
				e = e*10 + int32(b[i]-'0')
			}
			i++
		}
		if i == s {
			return 0, jsonErr("invalid number")
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	if exact {
		flags |= numExact
	}
	sp.mant, sp.exp, sp.flags = mant, exp, flags
	return i, nil
}

// eightDigits converts eight ASCII digits, loaded little-endian (first
// digit in the low byte), to their value.
func eightDigits(w uint64) uint64 {
	w -= 0x3030303030303030
	w = (w * 10) + (w >> 8)
	w = ((w&0x000000FF000000FF)*(100+1000000<<32) +
		((w>>16)&0x000000FF000000FF)*(1+10000<<32)) >> 32
	return w
}

// numInt64 returns the value of a number span as an int64 if it is
// integral and in range.
func (sp *jspan) numInt64(b []byte) (int64, bool) {
	if sp.flags == numInt|numExact {
		if sp.neg {
			if sp.mant > 1<<63 {
				return 0, false
			}
			return -int64(sp.mant), true
		}
		if sp.mant > math.MaxInt64 {
			return 0, false
		}
		return int64(sp.mant), true
	}
	return parseInt(bytesToString(b[sp.s:sp.e]))
}

// numFloat returns the value of a number span (which may be ±Inf for
// out-of-range input; ok is false then).
func (sp *jspan) numFloat(b []byte) (float64, bool) {
	if sp.flags&numExact != 0 && sp.mant < 1<<53 && sp.exp >= -22 && sp.exp <= 22 {
		f := float64(sp.mant)
		if sp.exp > 0 {
			f *= pow10[sp.exp]
		} else if sp.exp < 0 {
			f /= pow10[-sp.exp]
		}
		if sp.neg {
			f = -f
		}
		return f, true
	}
	return parseFloat(bytesToString(b[sp.s:sp.e]))
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// scanString scans string content starting at b[i] (just after the
// opening quote). It returns the index of the closing quote and whether
// the string has escapes. Escapes are validated; raw control characters
// are rejected; other bytes, including invalid UTF-8, pass.
func scanString(b []byte, i int) (int, bool, *Error) {
	esc := false
	for {
		// Eight bytes at a time: find the first '"', '\\' or byte < 0x20.
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			q := w ^ (lsb * '"')
			s := w ^ (lsb * '\\')
			t := ((q - lsb) &^ q) | ((s - lsb) &^ s) | ((w - lsb*0x20) &^ w)
			t &= msb
			if t != 0 {
				i += bits.TrailingZeros64(t) >> 3
				break
			}
			i += 8
		}
		for i < len(b) {
			c := b[i]
			if c == '"' || c == '\\' || c < 0x20 {
				break
			}
			i++
		}
		if i >= len(b) {
			return 0, false, jsonErr("unterminated string")
		}
		switch c := b[i]; {
		case c == '"':
			return i, esc, nil
		case c < 0x20:
			return 0, false, jsonErr("control character in string")
		}
		// backslash
		esc = true
		if i+1 >= len(b) {
			return 0, false, jsonErr("unterminated string")
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+6 > len(b) || hex4(b[i+2:i+6]) < 0 {
				return 0, false, jsonErr(`invalid \u escape`)
			}
			i += 6
		default:
			return 0, false, jsonErr("invalid escape")
		}
	}
}

// hex4 decodes four hex digits, or returns -1.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// appendJSONUnescaped appends the unescaped form of the validated string
// content src to dst. Surrogate pairs are combined; a lone surrogate
// becomes U+FFFD, exactly as encoding/json does. The result is never
// longer than src.
func appendJSONUnescaped(dst, src []byte) []byte {
	for i := 0; i < len(src); {
		if src[i] != '\\' {
			j := i + 1
			for j < len(src) && src[j] != '\\' {
				j++
			}
			dst = append(dst, src[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(src) { // cannot happen for validated input
			dst = append(dst, '\\')
			break
		}
		c := src[i+1]
		i += 2
		switch c {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := rune(-1)
			if i+4 <= len(src) {
				r = hex4(src[i : i+4])
			}
			if r < 0 { // cannot happen for validated input
				dst = utf8.AppendRune(dst, utf8.RuneError)
				continue
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+6 <= len(src) && src[i] == '\\' && src[i+1] == 'u' {
					r2 = hex4(src[i+2 : i+6])
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default: // '"', '\\', '/'
			dst = append(dst, c)
		}
	}
	return dst
}
