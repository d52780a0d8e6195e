package decode

import (
	"github.com/skewlens/skewlens/skew"
)

// Mapping a scanned JSON object onto a metric observation, from the
// top-level and tags fields Flink's reporters write.

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
		v, err := d.jsonValue(b, vs)
		if err != nil {
			return KindNone, err
		}
		if noValue(m, v) {
			return KindMetric, nil
		}
		if err := checkFinite(v); err != nil {
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
	v, err := d.jsonValue(b, sp)
	if err != nil {
		return KindNone, err
	}
	if noValue(m, v) {
		return KindMetric, nil
	}
	if err := checkFinite(v); err != nil {
		return KindNone, err
	}
	m.Value = v
	return KindMetric, nil
}

// jsonNum reads a finite number given as a JSON number or numeric string.
func (d *Decoder) jsonNum(b []byte, sp *jspan) (float64, *Error) {
	v, err := d.jsonValue(b, sp)
	if err == nil {
		err = checkFinite(v)
	}
	return v, err
}

// jsonValue reads a number given as a JSON number or numeric string
// ("NaN" and "Inf" included, for the sentinel table).
func (d *Decoder) jsonValue(b []byte, sp *jspan) (float64, *Error) {
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
	if !ok {
		return 0, newErr(ReasonBadValue, "value", "must be a finite number")
	}
	return v, nil
}

func checkFinite(v float64) *Error {
	if !finite(v) {
		return newErr(ReasonBadValue, "value", "must be a finite number")
	}
	return nil
}
