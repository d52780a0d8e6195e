package decode

import (
	"math"
)

// Mapping a scanned JSON object onto a key sample: a fast path for the
// usual layout and a general one for everything else.

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
	s.TS = keySampleMillis(int64(ts.mant))
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

// keySampleMillis converts a key sample's ts to epoch milliseconds,
// telling the unit apart by magnitude as toMillis does for InfluxDB
// lines: [1e9, 1e11) is seconds (2001-09-09 to the year 5138; as
// milliseconds it would be January 1970, and every sample late), [1e11,
// 1e14) milliseconds, [1e14, 1e17) microseconds, and from 1e17 on
// nanoseconds. Unlike toMillis it keeps values below 1e9 as
// milliseconds: seconds that small (before 2001) are no producer's clock,
// whereas small millisecond clocks are what tests and hand-written
// replays use. The result of a conversion is in the millisecond range,
// so converting twice changes nothing.
func keySampleMillis(ts int64) int64 {
	switch {
	case ts < 1e9:
		return ts
	case ts < 1e11:
		return ts * 1000
	case ts < 1e14:
		return ts
	case ts < 1e17:
		return ts / 1000
	default:
		return ts / 1e6
	}
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
	s.TS = keySampleMillis(ts)

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
