package decode

import (
	"encoding/binary"
	"math/bits"

	"github.com/skewlens/skewlens/skew"
)

// Prometheus text exposition, as served by Flink's PrometheusReporter:
//
//	name[{label="value",...}] value [timestamp_ms]
//
// Label values escape '\\', '"' and newline as \\, \" and \n; any other
// backslash sequence is kept as written. Blanks (space, tab) may separate
// tokens; a trailing comma in the label set is allowed. Hand-written for
// speed.

// promNameChar: Prometheus metric-name bytes [a-zA-Z0-9_:], plus '.' so
// that dotted Flink names are understood too.
var promNameChar = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == ':' || c == '.'
	}
	return t
}()

// findQuote returns the index of the first '"' or '\\' at or after i, or
// len(b); eight bytes at a time.
func findQuote(b []byte, i int) int {
	for i+8 <= len(b) {
		w := binary.LittleEndian.Uint64(b[i:])
		q := w ^ (lsb * '"')
		s := w ^ (lsb * '\\')
		if t := (((q - lsb) &^ q) | ((s - lsb) &^ s)) & msb; t != 0 {
			return i + bits.TrailingZeros64(t)>>3
		}
		i += 8
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' {
			return i
		}
	}
	return len(b)
}

// labelStop: bytes that end a label name.
var labelStop = func() (t [256]bool) {
	for _, c := range "= \t,}\"{" {
		t[c] = true
	}
	return t
}()

func skipSpTab(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return i
}

func (d *Decoder) decodeProm(b []byte) (Kind, *Error) {
	i := 0
	for i < len(b) && promNameChar[b[i]] {
		i++
	}
	if i == 0 {
		return KindNone, badLine("empty metric name")
	}
	if i >= len(b) {
		return KindNone, badLine("no value")
	}
	if c := b[i]; c != '{' && c != ' ' && c != '\t' {
		return KindNone, badLine("invalid metric name")
	}
	name := LookupMetric(bytesToString(b[:i]))
	if name == skew.MetricUnknown {
		// Unknown metrics are ignored, but only well-formed ones: text that
		// merely starts with a word is a bad line, not a metric.
		if !promTailOK(b, i) {
			return KindNone, badLine("not a Prometheus sample (name, optional labels, value, optional timestamp)")
		}
		return KindNone, nil
	}
	m := &d.Metric
	*m = skew.Metric{Name: name, Subtask: -1}

	var seen uint16
	var sub string
	if j := skipSpTab(b, i); j < len(b) && b[j] == '{' && d.tags.match(FormatPrometheus, b, j) {
		// The label set of the line before (see tagCache).
		seen, sub = d.tags.apply(m, b, j)
		i = j + len(d.tags.set)
	} else if j < len(b) && b[j] == '{' {
		i = j
		rec := tagRecorder{start: j, ok: true}
		i++
	labels:
		for {
			i = skipSpTab(b, i)
			if i >= len(b) {
				return KindNone, badLine("unterminated label set")
			}
			if b[i] == '}' {
				i++
				break
			}
			ks := i
			for i < len(b) && !labelStop[b[i]] {
				i++
			}
			ke := i
			if ke == ks {
				return KindNone, badLine("bad label name")
			}
			i = skipSpTab(b, i)
			if i >= len(b) || b[i] != '=' {
				return KindNone, badLine("expected '=' after label name")
			}
			i = skipSpTab(b, i+1)
			if i >= len(b) || b[i] != '"' {
				return KindNone, badLine("expected '\"' to open label value")
			}
			i++
			vs := i
			esc := false
			for {
				i = findQuote(b, i)
				if i >= len(b) || b[i] == '"' {
					break
				}
				esc = true // backslash: skip it and the escaped byte
				i += 2
			}
			if i >= len(b) {
				return KindNone, badLine("unterminated label value")
			}
			ve := i
			i++

			if id := lookupVar(bytesToString(b[ks:ke])); id != varNone && id != varTaskAttemptNum {
				seen |= 1 << id
				rec.record(id, vs, ve, esc)
				v := bytesToString(b[vs:ve])
				if esc {
					mark := len(d.scratch)
					d.scratch = appendQuotedUnescaped(d.scratch, b[vs:ve], true)
					v = bytesToString(d.scratch[mark:])
				}
				if id == varSubtask {
					sub = v
				} else {
					setVar(m, id, v)
				}
			}

			i = skipSpTab(b, i)
			if i >= len(b) {
				return KindNone, badLine("unterminated label set")
			}
			switch b[i] {
			case ',':
				i++
			case '}':
				i++
				break labels
			default:
				return KindNone, badLine("expected ',' or '}' in label set")
			}
		}
		d.tags.store(FormatPrometheus, &rec, b, i, seen)
	}

	// Value.
	if i >= len(b) || (b[i] != ' ' && b[i] != '\t') {
		return KindNone, badLine("no value")
	}
	i = skipSpTab(b, i)
	vs := i
	for i < len(b) && b[i] != ' ' && b[i] != '\t' {
		i++
	}
	valTok := b[vs:i]
	i = skipSpTab(b, i)

	// Optional timestamp (ms).
	haveTS := false
	var ts int64
	if i < len(b) {
		s := i
		for i < len(b) && b[i] != ' ' && b[i] != '\t' {
			i++
		}
		tsTok := b[s:i]
		if i = skipSpTab(b, i); i != len(b) {
			return KindNone, badLine("trailing data after timestamp")
		}
		t, ok := parseInt(bytesToString(tsTok))
		if !ok || t < 0 {
			return KindNone, newErr(ReasonBadTimestamp, "", "must be a non-negative integer (epoch ms)")
		}
		ts, haveTS = t, true
	}
	if len(valTok) == 0 { // cannot happen after trimBlank, kept for safety
		return KindNone, badLine("no value")
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
	v, ok := parseFloat(bytesToString(valTok))
	if !ok {
		return KindNone, newErr(ReasonBadValue, "", "not a number")
	}
	if noValue(m, v) {
		return KindMetric, nil
	}
	if !finite(v) {
		return KindNone, newErr(ReasonBadValue, "", "NaN or infinite")
	}
	m.Value = v
	return KindMetric, nil
}

// promTailOK checks, without decoding labels, that what follows a metric
// name at b[i:] is an optional label set, a number, and an optional integer
// timestamp. It is the cheap check for samples of metrics skewlens ignores.
func promTailOK(b []byte, i int) bool {
	if j := skipSpTab(b, i); j < len(b) && b[j] == '{' {
		i = j
		inQuote := false
		for i++; i < len(b); i++ {
			c := b[i]
			switch {
			case inQuote && c == '\\':
				i++
			case c == '"':
				inQuote = !inQuote
			case !inQuote && c == '}':
				goto closed
			}
		}
		return false
	closed:
		i++
	}
	if i >= len(b) || (b[i] != ' ' && b[i] != '\t') {
		return false
	}
	i = skipSpTab(b, i)
	vs := i
	for i < len(b) && b[i] != ' ' && b[i] != '\t' {
		i++
	}
	if _, ok := parseFloat(bytesToString(b[vs:i])); !ok {
		return false
	}
	if i = skipSpTab(b, i); i == len(b) {
		return true
	}
	ts := i
	for i < len(b) && b[i] != ' ' && b[i] != '\t' {
		i++
	}
	if skipSpTab(b, i) != len(b) {
		return false
	}
	_, ok := parseInt(bytesToString(b[ts:i]))
	return ok
}
