package decode

import (
	"encoding/binary"
	"math"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/skewlens/skewlens/skew"
)

// JSON decoding, hand-written for the hot path: encoding/json (reflection,
// an allocation per string) is more than ten times slower and far too slow
// for the >= 2M key samples/s target; compare BenchmarkKeySampleJSON with
// BenchmarkKeySampleEncodingJSON.
//
// One pass validates the whole object (RFC 8259 syntax; unknown values of
// any type are skipped but still validated) and records, for each field we
// know, where its value is; numbers are converted while they are
// validated. Only after the object is complete do we know its shape (key
// sample or metric), and only then are the recorded values interpreted.
// Duplicate fields: the last one wins, as in encoding/json. Top-level keys
// are predicted from the previous line's layout (see predKey), which
// replaces scanning and looking up most keys by two word compares.

// MaxJSONDepth bounds the nesting of objects and arrays, counting the
// top-level object as 1. Deeper input is rejected as invalid_json.
const MaxJSONDepth = 64

// Value kinds recorded for a field.
const (
	jAbsent uint8 = iota
	jString
	jNumber
	jTrue
	jFalse
	jNull
	jObject
	jArray
)

// Fields recorded during the scan. Top-level fields, then the fields of a
// metric's "tags" object, then those of a metric's "value" object.
const (
	fTS = iota
	fJobID
	fJobName
	fTaskName
	fKey
	fWeight
	fSampleRate
	fPar
	fMaxPar
	fSubtask
	fName
	fTime
	fHost
	fTMID
	fTaskID
	fTaskAttemptID
	fValue
	fTags

	tHost
	tTMID
	tJobID
	tJobName
	tTaskID
	tTaskName
	tTaskAttemptID
	tSubtask

	vCount
	vRate
	vValue

	numJSONFields
)

const (
	tagBits   = (1<<(tSubtask+1) - 1) &^ (1<<tHost - 1)
	valueBits = (1<<(vValue+1) - 1) &^ (1<<vCount - 1)
)

// Which key table applies inside an object.
const (
	tblTop uint8 = iota
	tblTags
	tblValue
)

type jspan struct {
	s, e int // value bytes; for strings the content between the quotes
	// Numbers: the value as mant * 10^exp (negated when neg), filled in
	// while validating. numExact: mant holds every digit. numInt: no
	// fraction or exponent was written.
	mant  uint64
	exp   int32
	kind  uint8
	esc   bool // strings: contains backslash escapes
	neg   bool
	flags uint8
}

const (
	numExact uint8 = 1 << iota
	numInt
)

// maxPredicted is how many leading top-level keys are predicted.
const maxPredicted = 24

// predKey remembers the key found at one position of the previous line's
// top-level object: its bytes plus the closing quote, as two masked
// little-endian words. Lines from one producer repeat their layout, so
// comparing two words usually replaces scanning the key and looking it up.
type predKey struct {
	w0, w1 uint64
	m0, m1 uint64
	n      uint8 // key length + 1 (the quote); 0: no prediction
	id     int8
}

func (p *predKey) set(key []byte, id int) {
	n := len(key) + 1
	if n > 16 {
		p.n = 0
		return
	}
	var buf [16]byte
	copy(buf[:], key)
	buf[len(key)] = '"'
	p.w0 = binary.LittleEndian.Uint64(buf[0:])
	p.w1 = binary.LittleEndian.Uint64(buf[8:])
	p.m0, p.m1 = ^uint64(0), ^uint64(0)
	if n < 8 {
		p.m0 = 1<<(8*n) - 1
	}
	if n <= 8 {
		p.m1 = 0
	} else if n < 16 {
		p.m1 = 1<<(8*(n-8)) - 1
	}
	p.n = uint8(n)
	p.id = int8(id)
}

type jsonState struct {
	have  uint32 // bit i set: spans[i] recorded
	spans [numJSONFields]jspan
	pred  [maxPredicted]predKey
}

// get returns the span of field id if present and not null.
func (js *jsonState) get(id int) (*jspan, bool) {
	if js.have&(1<<id) == 0 {
		return nil, false
	}
	sp := &js.spans[id]
	return sp, sp.kind != jNull
}

func topField(k string) int {
	switch k {
	case "ts":
		return fTS
	case "key":
		return fKey
	case "name":
		return fName
	case "value":
		return fValue
	case "job_id", "<job_id>":
		return fJobID
	case "task_name", "<task_name>":
		return fTaskName
	case "job_name", "<job_name>":
		return fJobName
	case "subtask_index", "<subtask_index>":
		return fSubtask
	case "weight":
		return fWeight
	case "sample_rate":
		return fSampleRate
	case "parallelism":
		return fPar
	case "max_parallelism":
		return fMaxPar
	case "time_stamp", "timestamp":
		return fTime
	case "host", "<host>":
		return fHost
	case "tm_id", "<tm_id>":
		return fTMID
	case "task_id", "<task_id>":
		return fTaskID
	case "task_attempt_id", "<task_attempt_id>":
		return fTaskAttemptID
	case "tags":
		return fTags
	}
	return -1
}

var tagFieldOf = [...]int{
	varHost:          tHost,
	varTMID:          tTMID,
	varJobID:         tJobID,
	varJobName:       tJobName,
	varTaskID:        tTaskID,
	varTaskName:      tTaskName,
	varTaskAttemptID: tTaskAttemptID,
	varSubtask:       tSubtask,
}

func lookupField(tbl uint8, k string) int {
	switch tbl {
	case tblTop:
		return topField(k)
	case tblTags:
		if v := lookupVar(k); v != varNone && v != varTaskAttemptNum {
			return tagFieldOf[v]
		}
	case tblValue:
		switch k {
		case "count":
			return vCount
		case "rate":
			return vRate
		case "value":
			return vValue
		}
	}
	return -1
}

func jsonErr(msg string) *Error { return newErr(ReasonInvalidJSON, "", msg) }

const (
	errJSONEOF   = "unexpected end of input"
	errJSONDepth = "nesting deeper than 64"
)

func (d *Decoder) decodeJSON(b []byte, f Format) (Kind, *Error) {
	if b[0] != '{' {
		return KindNone, jsonErr("not a JSON object")
	}
	d.js.have = 0
	i, err := d.scanObject(b, 0, tblTop, 1)
	if err != nil {
		return KindNone, err
	}
	// trimBlank removed trailing blanks, so anything left is garbage.
	if i != len(b) {
		return KindNone, jsonErr("trailing data after object")
	}
	switch f {
	case FormatKeyJSON:
		return d.finishKeySample(b)
	case FormatMetricJSON:
		return d.finishMetricJSON(b)
	}
	if _, ok := d.js.get(fName); ok {
		return d.finishMetricJSON(b)
	}
	if _, ok := d.js.get(fKey); ok {
		return d.finishKeySample(b)
	}
	return KindNone, newErr(ReasonMissingField, "key", `object has neither "key" (key sample) nor "name" (metric)`)
}

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

// str returns the string value of a recorded string span, unescaping into
// scratch when needed.
func (d *Decoder) jsonStr(b []byte, sp *jspan) string {
	raw := b[sp.s:sp.e]
	if !sp.esc {
		return bytesToString(raw)
	}
	mark := len(d.scratch)
	d.scratch = appendJSONUnescaped(d.scratch, raw)
	return bytesToString(d.scratch[mark:])
}

// jsonText returns the text of a string or number span: strings unescaped,
// numbers as written. ok is false for other kinds.
func (d *Decoder) jsonText(b []byte, sp *jspan) (string, bool) {
	switch sp.kind {
	case jString:
		return d.jsonStr(b, sp), true
	case jNumber:
		return bytesToString(b[sp.s:sp.e]), true
	}
	return "", false
}

// jsonInt reads an optional integer field that must be a JSON number in
// [lo, hi].
func (d *Decoder) jsonInt(b []byte, id int, name, msg string, lo, hi int64) (int64, bool, *Error) {
	sp, ok := d.js.get(id)
	if !ok {
		return 0, false, nil
	}
	if sp.kind != jNumber {
		return 0, false, newErr(ReasonBadField, name, "must be a number")
	}
	v, ok := sp.numInt64(b)
	if !ok || v < lo || v > hi {
		return 0, false, newErr(ReasonBadField, name, msg)
	}
	return v, true, nil
}

// jsonReqStr reads a required string field.
func (d *Decoder) jsonReqStr(b []byte, id int, name string, nonEmpty bool) (string, *Error) {
	sp, ok := d.js.get(id)
	if !ok {
		return "", newErr(ReasonMissingField, name, "")
	}
	if sp.kind != jString {
		return "", newErr(ReasonBadField, name, "must be a string")
	}
	if nonEmpty && sp.e == sp.s {
		return "", newErr(ReasonBadField, name, "must not be empty")
	}
	return d.jsonStr(b, sp), nil
}

// finishKeySample interprets the recorded fields as a key sample.
func (d *Decoder) finishKeySample(b []byte) (Kind, *Error) {
	if d.fastKeySample(b) {
		return KindKeySample, nil
	}
	return d.slowKeySample(b)
}

// Fields a key sample must have, and those it may have.
const (
	ksRequired = 1<<fTS | 1<<fJobID | 1<<fTaskName | 1<<fKey
	ksOptional = 1<<fJobName | 1<<fTaskID | 1<<fWeight | 1<<fSampleRate | 1<<fPar | 1<<fMaxPar | 1<<fSubtask
)

// fastKeySample handles the common, valid key sample without calls: no
// escapes, plain non-negative integers, numbers exact in float64. It
// reports false, having possibly written parts of d.Sample, for anything
// else; slowKeySample then decides (and reports the error, if any). It
// never accepts a line slowKeySample rejects and gives the same values.
func (d *Decoder) fastKeySample(b []byte) bool {
	js := &d.js
	if js.have&ksRequired != ksRequired {
		return false
	}
	s := &d.Sample
	sp := &js.spans

	// ts: numInt64 of a plain integer, which must be >= 0. A negative
	// zero is left to the slow path.
	ts := &sp[fTS]
	if ts.kind != jNumber || ts.flags != numInt|numExact || ts.neg || ts.mant > math.MaxInt64 {
		return false
	}
	s.TS = int64(ts.mant)
	// Required strings; empty job_id / task_name are errors.
	j, t, k := &sp[fJobID], &sp[fTaskName], &sp[fKey]
	if j.kind != jString || j.esc || j.e == j.s ||
		t.kind != jString || t.esc || t.e == t.s ||
		k.kind != jString || k.esc {
		return false
	}
	s.JobID = bytesToString(b[j.s:j.e])
	s.TaskName = bytesToString(b[t.s:t.e])
	s.Key = bytesToString(b[k.s:k.e])

	// Optional fields: absent or null means the default. have&opt holds
	// exactly the optional fields recorded on this line.
	opt := js.have & ksOptional
	s.JobName = ""
	if opt&(1<<fJobName) != 0 {
		if n := &sp[fJobName]; n.kind == jString && !n.esc {
			s.JobName = bytesToString(b[n.s:n.e])
		} else if n.kind != jNull {
			return false
		}
	}
	s.TaskID = ""
	if opt&(1<<fTaskID) != 0 {
		if n := &sp[fTaskID]; n.kind == jString && !n.esc {
			s.TaskID = bytesToString(b[n.s:n.e])
		} else if n.kind != jNull {
			return false
		}
	}
	s.Weight = 1
	if opt&(1<<fWeight) != 0 {
		if w := &sp[fWeight]; w.kind == jNumber {
			// Positive and exact: numFloat's fast path, finite and > 0.
			if w.neg || w.mant == 0 || w.flags&numExact == 0 || w.mant >= 1<<53 || w.exp < -22 || w.exp > 22 {
				return false
			}
			s.Weight = exactFloat(w.mant, w.exp)
		} else if w.kind != jNull {
			return false
		}
	}
	s.SampleRate = 1
	if opt&(1<<fSampleRate) != 0 {
		if r := &sp[fSampleRate]; r.kind == jNumber {
			if r.neg || r.mant == 0 || r.flags&numExact == 0 || r.mant >= 1<<53 || r.exp < -22 || r.exp > 22 {
				return false
			}
			v := exactFloat(r.mant, r.exp)
			if v > 1 {
				return false
			}
			s.SampleRate = v
		} else if r.kind != jNull {
			return false
		}
	}

	// Integers: plain, non-negative, in range; absent or null.
	par, maxPar, sub := int64(0), int64(0), int64(-1)
	hasPar := false
	if opt&(1<<fPar) != 0 {
		if p := &sp[fPar]; p.kind == jNumber {
			if p.flags != numInt|numExact || p.neg || p.mant < 1 || p.mant > MaxParallelism {
				return false
			}
			par, hasPar = int64(p.mant), true
		} else if p.kind != jNull {
			return false
		}
	}
	if opt&(1<<fMaxPar) != 0 {
		if p := &sp[fMaxPar]; p.kind == jNumber {
			if p.flags != numInt|numExact || p.neg || p.mant > MaxParallelism {
				return false
			}
			maxPar = int64(p.mant)
		} else if p.kind != jNull {
			return false
		}
	}
	if hasPar && maxPar > 0 && par > maxPar {
		return false
	}
	if opt&(1<<fSubtask) != 0 {
		if p := &sp[fSubtask]; p.kind == jNumber {
			if p.flags != numInt|numExact || p.neg || p.mant > maxSubtask {
				return false
			}
			sub = int64(p.mant)
			if hasPar && sub >= par {
				return false
			}
		} else if p.kind != jNull {
			return false
		}
	}
	s.Parallelism = int32(par)
	s.MaxParallelism = int32(maxPar)
	s.Subtask = int32(sub)
	return true
}

// exactFloat is numFloat's fast path for mant < 2^53, |exp| <= 22: one
// correctly rounded IEEE operation.
func exactFloat(mant uint64, exp int32) float64 {
	f := float64(mant)
	if exp > 0 {
		f *= pow10[exp]
	} else if exp < 0 {
		f /= pow10[-exp]
	}
	return f
}

// slowKeySample is finishKeySample for every line: it checks each field
// and reports the first problem.
func (d *Decoder) slowKeySample(b []byte) (Kind, *Error) {
	s := &d.Sample
	sp, ok := d.js.get(fTS)
	if !ok {
		return KindNone, newErr(ReasonMissingField, "ts", "")
	}
	if sp.kind != jNumber {
		return KindNone, newErr(ReasonBadTimestamp, "ts", "must be a number")
	}
	ts, ok := sp.numInt64(b)
	if !ok || ts < 0 {
		return KindNone, newErr(ReasonBadTimestamp, "ts", "must be a non-negative integer (epoch ms)")
	}
	s.TS = ts

	var err *Error
	if s.JobID, err = d.jsonReqStr(b, fJobID, "job_id", true); err != nil {
		return KindNone, err
	}
	if s.TaskName, err = d.jsonReqStr(b, fTaskName, "task_name", true); err != nil {
		return KindNone, err
	}
	if s.Key, err = d.jsonReqStr(b, fKey, "key", false); err != nil {
		return KindNone, err
	}
	s.JobName = ""
	if sp, ok := d.js.get(fJobName); ok {
		if sp.kind != jString {
			return KindNone, newErr(ReasonBadField, "job_name", "must be a string")
		}
		s.JobName = d.jsonStr(b, sp)
	}
	// task_id: as the metric variable, but a string only; empty is absent.
	s.TaskID = ""
	if sp, ok := d.js.get(fTaskID); ok {
		if sp.kind != jString {
			return KindNone, newErr(ReasonBadField, "task_id", "must be a string")
		}
		s.TaskID = d.jsonStr(b, sp)
	}

	s.Weight = 1
	if sp, ok := d.js.get(fWeight); ok {
		if sp.kind != jNumber {
			return KindNone, newErr(ReasonBadField, "weight", "must be a number")
		}
		w, ok := sp.numFloat(b)
		if !ok || !(w > 0) || !finite(w) {
			return KindNone, newErr(ReasonBadField, "weight", "must be finite and > 0")
		}
		s.Weight = w
	}
	s.SampleRate = 1
	if sp, ok := d.js.get(fSampleRate); ok {
		if sp.kind != jNumber {
			return KindNone, newErr(ReasonBadField, "sample_rate", "must be a number")
		}
		r, ok := sp.numFloat(b)
		if !ok || !(r > 0 && r <= 1) {
			return KindNone, newErr(ReasonBadField, "sample_rate", "must be in (0, 1]")
		}
		s.SampleRate = r
	}

	par, hasPar, err := d.jsonInt(b, fPar, "parallelism", "must be an integer in [1, 32768]", 1, MaxParallelism)
	if err != nil {
		return KindNone, err
	}
	maxPar, _, err := d.jsonInt(b, fMaxPar, "max_parallelism", "must be an integer in [0, 32768]", 0, MaxParallelism)
	if err != nil {
		return KindNone, err
	}
	if hasPar && maxPar > 0 && par > maxPar {
		return KindNone, newErr(ReasonBadField, "parallelism", "must be <= max_parallelism")
	}
	sub, hasSub, err := d.jsonInt(b, fSubtask, "subtask_index", "must be an integer in [0, 32767]", 0, maxSubtask)
	if err != nil {
		return KindNone, err
	}
	if !hasSub {
		sub = -1
	} else if hasPar && sub >= par {
		return KindNone, newErr(ReasonBadField, "subtask_index", "must be < parallelism")
	}
	s.Parallelism = int32(par)
	s.MaxParallelism = int32(maxPar)
	s.Subtask = int32(sub)
	return KindKeySample, nil
}

// jsonVars lists, per Flink variable, its top-level and its tags field.
var jsonVars = [...]struct {
	v        varID
	top, tag int
}{
	{varHost, fHost, tHost},
	{varTMID, fTMID, tTMID},
	{varJobID, fJobID, tJobID},
	{varJobName, fJobName, tJobName},
	{varTaskID, fTaskID, tTaskID},
	{varTaskName, fTaskName, tTaskName},
	{varTaskAttemptID, fTaskAttemptID, tTaskAttemptID},
	{varSubtask, fSubtask, tSubtask},
}

func (d *Decoder) finishMetricJSON(b []byte) (Kind, *Error) {
	sp, ok := d.js.get(fName)
	if !ok {
		return KindNone, newErr(ReasonMissingField, "name", "")
	}
	if sp.kind != jString {
		return KindNone, newErr(ReasonBadField, "name", "must be a string")
	}
	name := LookupMetric(d.jsonStr(b, sp))
	if name == skew.MetricUnknown {
		return KindNone, nil
	}
	m := &d.Metric
	*m = skew.Metric{Name: name, Subtask: -1}

	// Variables: top level wins over "tags"; strings or numbers.
	var seen uint16
	var sub string
	for _, v := range jsonVars {
		sp, ok := d.js.get(v.top)
		if !ok {
			if sp, ok = d.js.get(v.tag); !ok {
				continue
			}
		}
		text, ok := d.jsonText(b, sp)
		if !ok {
			return KindNone, newErr(ReasonBadField, varField[v.v], "must be a string or number")
		}
		seen |= 1 << v.v
		if v.v == varSubtask {
			sub = text
		} else {
			setVar(m, v.v, text)
		}
	}
	if err := d.checkMetricVars(seen, sub); err != nil {
		return KindNone, err
	}

	// Timestamp: epoch ms, number or numeric string.
	if sp, ok := d.js.get(fTime); ok {
		var ts int64
		switch sp.kind {
		case jNumber:
			ts, ok = sp.numInt64(b)
		case jString:
			ts, ok = parseInt(d.jsonStr(b, sp))
		default:
			return KindNone, newErr(ReasonBadTimestamp, "time_stamp", "must be a number")
		}
		if !ok || ts < 0 {
			return KindNone, newErr(ReasonBadTimestamp, "time_stamp", "must be a non-negative integer (epoch ms)")
		}
		m.TS = ts
	} else {
		var err *Error
		if m.TS, err = d.defaultTS(); err != nil {
			return KindNone, err
		}
	}

	// Value: number, numeric string, or {"count":..,"rate":..} / {"value":..}.
	sp, ok = d.js.get(fValue)
	if !ok {
		return KindNone, newErr(ReasonMissingField, "value", "")
	}
	if sp.kind == jObject {
		vs, ok := d.js.get(vValue)
		if !ok {
			if vs, ok = d.js.get(vCount); !ok {
				return KindNone, newErr(ReasonBadValue, "value", `object has no "value" or "count"`)
			}
		}
		v, err := d.jsonNum(b, vs)
		if err != nil {
			return KindNone, err
		}
		m.Value = v
		if rs, ok := d.js.get(vRate); ok {
			r, err := d.jsonNum(b, rs)
			if err != nil {
				return KindNone, err
			}
			m.Rate, m.HasRate = r, true
		}
		return KindMetric, nil
	}
	v, err := d.jsonNum(b, sp)
	if err != nil {
		return KindNone, err
	}
	m.Value = v
	return KindMetric, nil
}

// jsonNum reads a finite number given as a JSON number or numeric string.
func (d *Decoder) jsonNum(b []byte, sp *jspan) (float64, *Error) {
	var v float64
	var ok bool
	switch sp.kind {
	case jNumber:
		v, ok = sp.numFloat(b)
	case jString:
		v, ok = parseFloat(d.jsonStr(b, sp))
	default:
		return 0, newErr(ReasonBadValue, "value", "must be a number")
	}
	if !ok || !finite(v) {
		return 0, newErr(ReasonBadValue, "value", "must be a finite number")
	}
	return v, nil
}
