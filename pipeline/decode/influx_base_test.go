package decode

// The Influx decode path as it was at d7db979, before the word-at-a-time
// scans: kept verbatim (renamed with a "base" prefix, Decode as a function;
// the timestamp parsed with that commit's parseInt) so that
// TestInfluxSameAsBase and FuzzInfluxSameAsBase can check that the faster
// path decodes every line exactly as before, and so that benchVsBase
// (BenchmarkFlinkInflux/new-vs-base, BenchmarkInfluxVsBase) can measure
// both in the same run on a shared machine. Only test code calls it.

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/skewlens/skewlens/skew"
)

// baseDecode is Decoder.Decode with the base Influx path.
func baseDecode(d *Decoder, line []byte) (Kind, error) {
	b := trimBlank(line)
	if len(b) == 0 {
		return KindNone, nil
	}
	if b[0] == '#' {
		if err := d.directive(b); err != nil {
			return KindNone, err
		}
		return KindNone, nil
	}
	d.scratch = d.scratch[:0]
	f := d.format
	if f == FormatAuto {
		f = baseDetect(b)
	}
	var k Kind
	var err *Error
	switch f {
	case FormatInflux:
		k, err = baseDecodeInflux(d, b)
	case FormatPrometheus:
		k, err = d.decodeProm(b)
	default:
		k, err = d.decodeJSON(b, f)
	}
	if err != nil {
		// Returning a nil *Error as error would make a non-nil interface.
		return KindNone, err
	}
	return k, nil
}

// baseDetect picks the format of a non-blank, non-comment line.
func baseDetect(b []byte) Format {
	if b[0] == '{' {
		return FormatJSON
	}
	i := 0
	for i < len(b) {
		for i < len(b) && !baseNameStop[b[i]] {
			i++
		}
		if i >= len(b) {
			break
		}
		switch b[i] {
		case '\\':
			i += 2
			continue
		case '{':
			return FormatPrometheus
		case ',':
			return FormatInflux
		}
		// blank
		for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
			i++
		}
		for i < len(b) && b[i] != ' ' && b[i] != '\t' {
			switch b[i] {
			case '\\':
				i++
			case '=':
				return FormatInflux
			}
			i++
		}
		return FormatPrometheus
	}
	// A lone token: neither format; the Prometheus parser reports it.
	return FormatPrometheus
}

// baseScanInfluxToken scans from b[i] to the first unescaped byte in stop
// (',' and ' ', plus '=' when eq is set). It returns the end index and
// whether a backslash was seen.
func baseScanInfluxToken(b []byte, i int, eq bool) (int, bool) {
	c3 := uint64(',')
	if eq {
		c3 = '='
	}
	esc := false
	for {
		i = baseFindInfluxSpecial(b, i, c3)
		if i >= len(b) {
			return len(b), esc
		}
		if b[i] != '\\' {
			return i, esc
		}
		esc = true
		i += 2
	}
}

// baseFindInfluxSpecial returns the index of the first ',', ' ', '\\' or c3 at
// or after i, or len(b). Eight bytes at a time (tag values are long ids).
func baseFindInfluxSpecial(b []byte, i int, c3 uint64) int {
	for i+8 <= len(b) {
		w := binary.LittleEndian.Uint64(b[i:])
		x1 := w ^ (lsb * ',')
		x2 := w ^ (lsb * ' ')
		x3 := w ^ (lsb * '\\')
		x4 := w ^ (lsb * c3)
		t := ((x1 - lsb) &^ x1) | ((x2 - lsb) &^ x2) | ((x3 - lsb) &^ x3) | ((x4 - lsb) &^ x4)
		if t &= msb; t != 0 {
			return i + bits.TrailingZeros64(t)>>3
		}
		i += 8
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == ',' || c == ' ' || c == '\\' || uint64(c) == c3 {
			return i
		}
	}
	return len(b)
}
func baseDecodeInflux(d *Decoder, b []byte) (Kind, *Error) {
	if b[0] == '{' {
		return KindNone, badLine("JSON object in line protocol input")
	}
	i, esc := baseScanInfluxToken(b, 0, false)
	if i == 0 {
		return KindNone, badLine("empty measurement")
	}
	if i >= len(b) {
		return KindNone, badLine("no fields")
	}
	name := LookupMetric(d.influxStr(b[:i], esc))
	if name == skew.MetricUnknown {
		// Ignored, but only if it looks like line protocol: a field set
		// (key=value) after the first unescaped space.
		if !baseInfluxTailOK(b, i) {
			return KindNone, badLine("not line protocol (measurement[,tags] fields [timestamp])")
		}
		return KindNone, nil
	}
	m := &d.Metric
	*m = skew.Metric{Name: name, Subtask: -1}

	// Tags.
	var seen uint16
	var sub string
	for i < len(b) && b[i] == ',' {
		ks := i + 1
		ke, kesc := baseScanInfluxToken(b, ks, true)
		if ke >= len(b) || b[ke] != '=' || ke == ks {
			return KindNone, badLine("bad tag")
		}
		vs := ke + 1
		ve, vesc := baseScanInfluxToken(b, vs, false)
		i = ve

		var id varID
		if !kesc {
			id = lookupVar(bytesToString(b[ks:ke]))
		} else {
			mark := len(d.scratch)
			d.scratch = appendInfluxUnescaped(d.scratch, b[ks:ke])
			id = lookupVar(bytesToString(d.scratch[mark:]))
			d.scratch = d.scratch[:mark]
		}
		if id == varNone || id == varTaskAttemptNum {
			continue
		}
		seen |= 1 << id
		v := d.influxStr(b[vs:ve], vesc)
		if id == varSubtask {
			sub = v
		} else {
			setVar(m, id, v)
		}
	}
	if i >= len(b) || b[i] != ' ' {
		return KindNone, badLine("no fields")
	}
	for i < len(b) && b[i] == ' ' {
		i++
	}

	// Fields.
	var val, cnt, rate float64
	var haveVal, haveCnt, haveRate bool
	badKey := ifOther // first value/count/rate field whose value did not parse
	for {
		ks := i
		ke, kesc := baseScanInfluxToken(b, ks, true)
		if ke >= len(b) || b[ke] != '=' || ke == ks {
			return KindNone, badLine("bad field")
		}
		key := ifOther
		if !kesc {
			key = influxFieldKey(bytesToString(b[ks:ke]))
		} else {
			mark := len(d.scratch)
			d.scratch = appendInfluxUnescaped(d.scratch, b[ks:ke])
			key = influxFieldKey(bytesToString(d.scratch[mark:]))
			d.scratch = d.scratch[:mark]
		}
		i = ke + 1
		var f float64
		var isNum bool
		if i < len(b) && b[i] == '"' {
			i++
			vs := i
			sesc := false
			for i < len(b) && b[i] != '"' {
				if b[i] == '\\' {
					sesc = true
					i++
				}
				i++
			}
			if i >= len(b) {
				return KindNone, badLine("unterminated string field")
			}
			raw := b[vs:i]
			i++
			if key != ifOther {
				s := bytesToString(raw)
				if sesc {
					mark := len(d.scratch)
					d.scratch = appendQuotedUnescaped(d.scratch, raw, false)
					s = bytesToString(d.scratch[mark:])
					d.scratch = d.scratch[:mark]
				}
				// A non-numeric string field is ignored.
				f, isNum = parseFloat(s)
			}
		} else {
			vs := i
			for i < len(b) && b[i] != ',' && b[i] != ' ' {
				i++
			}
			if i == vs {
				return KindNone, badLine("empty field value")
			}
			if key != ifOther {
				var ok bool
				f, isNum, ok = parseInfluxValue(bytesToString(b[vs:i]))
				if !ok && badKey == ifOther {
					badKey = key
				}
			}
		}
		if isNum {
			switch key {
			case ifValue:
				val, haveVal = f, true
			case ifCount:
				cnt, haveCnt = f, true
			case ifRate:
				rate, haveRate = f, true
			}
		}
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		break
	}

	// Timestamp.
	haveTS := false
	var ts int64
	if i < len(b) {
		if b[i] != ' ' { // only after a quoted string: `f="x"y`
			return KindNone, badLine("expected ',' or ' ' after field")
		}
		for i < len(b) && b[i] == ' ' {
			i++
		}
		s := i
		for i < len(b) && b[i] != ' ' {
			i++
		}
		tok := b[s:i]
		for i < len(b) && b[i] == ' ' {
			i++
		}
		if i != len(b) {
			return KindNone, badLine("trailing data after timestamp")
		}
		t, ok := baseParseInt(bytesToString(tok))
		if !ok || t < 0 {
			return KindNone, newErr(ReasonBadTimestamp, "", "must be a non-negative integer")
		}
		ts, haveTS = toMillis(t), true
	}

	if err := d.checkMetricVars(seen, sub); err != nil {
		return KindNone, err
	}
	if haveTS {
		m.TS = ts
	} else {
		var err *Error
		if m.TS, err = d.defaultTS(); err != nil {
			return KindNone, err
		}
	}
	if badKey != ifOther {
		return KindNone, newErr(ReasonBadValue, influxFieldName[badKey], "not a number")
	}
	switch {
	case haveVal:
		m.Value = val
	case haveCnt:
		m.Value = cnt
	default:
		return KindNone, newErr(ReasonBadValue, "", `no numeric "value" or "count" field`)
	}
	if noValue(m, m.Value) {
		return KindMetric, nil
	}
	if !finite(m.Value) {
		return KindNone, newErr(ReasonBadValue, "value", "must be finite")
	}
	if haveRate {
		if !finite(rate) {
			return KindNone, newErr(ReasonBadValue, "rate", "must be finite")
		}
		m.Rate, m.HasRate = rate, true
	}
	return KindMetric, nil
}

// baseInfluxTailOK reports whether b[i:] holds a field set after the tag set:
// an unescaped space followed by text containing '='. It is the cheap check
// for lines of measurements skewlens ignores.
func baseInfluxTailOK(b []byte, i int) bool {
	for ; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case ' ':
			return bytes.IndexByte(b[i+1:], '=') > 0
		}
	}
	return false
}

// baseNameStop: bytes that end the metric-name token for baseDetect.
var baseNameStop = func() (t [256]bool) {
	for _, c := range "\\{, \t" {
		t[c] = true
	}
	return t
}()

// baseParseInt parses an integral number: [+-]digits, or any number
// parseFloat accepts whose value is integral (1e3, 1593004193363.0) and
// fits int64.
func baseParseInt(s string) (int64, bool) {
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
