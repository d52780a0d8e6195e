package decode

import (
	"bytes"

	"github.com/skewlens/skewlens/skew"
)

// InfluxDB line protocol, as written by Flink's InfluxdbReporter:
//
//	measurement[,tag=value...] field=value[,field=value...] [timestamp]
//
// Measurement, tag keys, tag values and field keys escape ',', ' ' and '='
// with a backslash (a backslash before any other byte is literal, and, as
// in InfluxDB's own scanner, it still protects the byte after it from
// being read as a separator). Field values are floats, integers with an
// 'i' (or 'u') suffix, booleans, or double-quoted strings with \" and \\
// escapes. Hand-written for speed (>= 1M lines/s target).

// appendInfluxUnescaped removes the backslash of \, \space and \=.
func appendInfluxUnescaped(dst, src []byte) []byte {
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c == '\\' && i+1 < len(src) {
			if n := src[i+1]; n == ',' || n == ' ' || n == '=' {
				dst = append(dst, n)
				i++
				continue
			}
		}
		dst = append(dst, c)
	}
	return dst
}

// appendQuotedUnescaped undoes \\ and \" (and \n when nl is set); any other
// backslash is kept with the byte after it.
func appendQuotedUnescaped(dst, src []byte, nl bool) []byte {
	for i := 0; i < len(src); i++ {
		c := src[i]
		if c == '\\' && i+1 < len(src) {
			switch n := src[i+1]; {
			case n == '\\' || n == '"':
				dst = append(dst, n)
				i++
				continue
			case n == 'n' && nl:
				dst = append(dst, '\n')
				i++
				continue
			}
		}
		dst = append(dst, c)
	}
	return dst
}

func (d *Decoder) influxStr(raw []byte, esc bool) string {
	if !esc {
		return bytesToString(raw)
	}
	mark := len(d.scratch)
	d.scratch = appendInfluxUnescaped(d.scratch, raw)
	return bytesToString(d.scratch[mark:])
}

// Field keys we read.
const (
	ifOther = iota
	ifValue
	ifCount
	ifRate
)

func influxFieldKey(k string) int {
	switch k {
	case "value":
		return ifValue
	case "count":
		return ifCount
	case "rate":
		return ifRate
	}
	return ifOther
}

// influxTagKeys predicts the tag keys of a line from those of the lines
// before: a reporter writes the same keys in the same order on every line
// (Flink's InfluxdbReporter: host, job_id, job_name, subtask_index, ...),
// so checking that the key expected at a tag position is there, followed
// by '=', replaces scanning the key and looking it up. The check gives
// exactly what the scan would: a known key's name holds none of the bytes
// that end a key, so the scan stops at the '=' after it.
type influxTagKeys struct {
	// keys[k] is the variable whose key was last seen at tag position k;
	// varNone predicts nothing.
	keys [maxPredictedTags]varID
}

// maxPredictedTags bounds the tag positions predicted: Flink writes nine
// variables for a task metric, a few more for operators.
const maxPredictedTags = 16

// match returns the end of the key of tag position tag, starting at b[ks],
// if it is the predicted known key followed by '=', and -1 otherwise. A
// matched key holds no backslash: no known key has one.
func (p *influxTagKeys) match(tag int, b []byte, ks int) int {
	if tag >= len(p.keys) || p.keys[tag] == varNone {
		return -1
	}
	name := varField[p.keys[tag]]
	if e := ks + len(name); e < len(b) && b[e] == '=' && bytesToString(b[ks:e]) == name {
		return e
	}
	return -1
}

// learn records the variable found at tag position tag (varNone for a key
// that is not one) as the prediction for the lines that follow.
func (p *influxTagKeys) learn(tag int, id varID) {
	if tag < len(p.keys) {
		p.keys[tag] = id
	}
}

func badLine(msg string) *Error { return newErr(ReasonBadLine, "", msg) }

// decodeInflux decodes the line-protocol line b. nameEnd >= 0 is the end
// of the measurement, and nameEsc whether it holds a backslash, when
// detectAt has found them already; -1 makes decodeInflux scan for them.
func (d *Decoder) decodeInflux(b []byte, nameEnd int, nameEsc bool) (Kind, *Error) {
	if b[0] == '{' {
		return KindNone, badLine("JSON object in line protocol input")
	}
	i, esc := nameEnd, nameEsc
	if i < 0 {
		i, esc = scanInfluxValue(b, 0)
	}
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
		if !influxTailOK(b, i) {
			return KindNone, badLine("not line protocol (measurement[,tags] fields [timestamp])")
		}
		return KindNone, nil
	}
	m := &d.Metric
	*m = skew.Metric{Name: name, Subtask: -1}

	// Tags.
	var seen uint16
	var sub string
	if n := len(d.tags.set); d.tags.match(FormatInflux, b, i) && i+n < len(b) && b[i+n] == ' ' {
		// The tag set of the line before (see tagCache), ended by the
		// same unescaped ' '.
		seen, sub = d.tags.apply(m, b, i)
		i += n
	} else if i < len(b) && b[i] == ',' {
		rec := tagRecorder{start: i, ok: true}
		i = d.influxTagSet(b, i, &seen, &sub, &rec)
		if i < 0 {
			return KindNone, badLine("bad tag")
		}
		if i < len(b) && b[i] == ' ' {
			d.tags.store(FormatInflux, &rec, b, i, seen)
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
		ke, kesc := scanInfluxKey(b, ks)
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
		t, ok := parseInt(bytesToString(tok))
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

var influxFieldName = [...]string{ifOther: "", ifValue: "value", ifCount: "count", ifRate: "rate"}

// parseInfluxValue parses an unquoted field value. isNum is false for
// booleans; ok is false for anything unparseable.
func parseInfluxValue(s string) (f float64, isNum, ok bool) {
	switch s {
	case "t", "T", "true", "True", "TRUE", "f", "F", "false", "False", "FALSE":
		return 0, false, true
	}
	if n := len(s); n > 1 && (s[n-1] == 'i' || s[n-1] == 'u') {
		body := s[:n-1]
		if body[0] == '+' || (s[n-1] == 'u' && body[0] == '-') {
			return 0, false, false
		}
		for j := range len(body) {
			if c := body[j]; (c < '0' || c > '9') && !(j == 0 && c == '-') {
				return 0, false, false
			}
		}
		v, ok := parseInt(body)
		if !ok {
			// Out of int64 range (a large uint64): still a number.
			v, ok := parseFloat(body)
			return v, ok, ok
		}
		return float64(v), true, true
	}
	v, ok := parseFloat(s)
	return v, ok, ok
}

// toMillis converts an epoch timestamp of unknown unit to milliseconds,
// guessing the unit from its magnitude: < 1e11 seconds, < 1e14
// milliseconds, < 1e17 microseconds, else nanoseconds.
func toMillis(t int64) int64 {
	switch {
	case t < 1e11:
		return t * 1000
	case t < 1e14:
		return t
	case t < 1e17:
		return t / 1000
	default:
		return t / 1e6
	}
}

// influxTailOK reports whether b[i:] holds a field set after the tag set:
// an unescaped space followed by text containing '='. It is the cheap check
// for lines of measurements skewlens ignores, most lines of a fleet, so it
// leans on bytes.IndexByte, which looks at many bytes per instruction:
// find the next space, then any backslash before it; without one the
// space is the separator, else skip the escaped byte and look again. sp
// is kept while it lies ahead, so each byte is looked at at most twice
// however many backslashes a line holds.
func influxTailOK(b []byte, i int) bool {
	sp := -1 // the first space at or after i, once known
	for i < len(b) {
		if sp < i {
			k := bytes.IndexByte(b[i:], ' ')
			if k < 0 {
				return false
			}
			sp = i + k
		}
		k := bytes.IndexByte(b[i:sp], '\\')
		if k < 0 {
			return bytes.IndexByte(b[sp+1:], '=') > 0
		}
		i += k + 2 // the escaped byte is never the separator
	}
	return false
}

// influxTagSet parses the tag set at b[i] == ',' up to the end of its
// last value, setting the variables it finds on d.Metric (subtask_index
// into *sub), and returns that end, or -1 for a bad tag. rec learns
// where each variable's value lies.
func (d *Decoder) influxTagSet(b []byte, i int, seen *uint16, sub *string, rec *tagRecorder) int {
	m := &d.Metric
	for tag := 0; i < len(b) && b[i] == ','; tag++ {
		ks := i + 1
		var id varID
		ke, kesc := d.influxTags.match(tag, b, ks), false
		if ke < 0 {
			ke, kesc = scanInfluxKey(b, ks)
			if ke >= len(b) || b[ke] != '=' || ke == ks {
				return -1
			}
			if !kesc {
				id = lookupVar(bytesToString(b[ks:ke]))
			} else {
				mark := len(d.scratch)
				d.scratch = appendInfluxUnescaped(d.scratch, b[ks:ke])
				id = lookupVar(bytesToString(d.scratch[mark:]))
				d.scratch = d.scratch[:mark]
			}
			d.influxTags.learn(tag, id)
		} else {
			id = d.influxTags.keys[tag]
		}
		vs := ke + 1
		ve, vesc := scanInfluxValue(b, vs)
		i = ve

		if id == varNone || id == varTaskAttemptNum {
			continue
		}
		*seen |= 1 << id
		rec.record(id, vs, ve, vesc)
		v := d.influxStr(b[vs:ve], vesc)
		if id == varSubtask {
			*sub = v
		} else {
			setVar(m, id, v)
		}
	}
	return i
}
