package decode

import (
	"errors"
	"strconv"
	"strings"
)

// Reason classifies why a line was rejected. Its String form is stable
// snake_case: it is used as a metric label value and in stderr counts, so
// existing names must never change. New reasons are appended at the end.
type Reason uint8

// The rejection reasons. The zero value ReasonUnknown is never produced by
// this package; it exists so that a zero Error is recognisably unset.
const (
	ReasonUnknown Reason = iota
	// ReasonInvalidJSON: a line that starts with '{' (or any line when JSON
	// is forced) is not one well-formed JSON object, has trailing bytes
	// after the object, or nests deeper than MaxJSONDepth.
	ReasonInvalidJSON
	// ReasonMissingField: a required field, tag or label is absent or null.
	ReasonMissingField
	// ReasonBadField: a field is present but has the wrong type or an
	// out-of-range value (empty job_id, subtask_index >= parallelism, ...).
	ReasonBadField
	// ReasonBadTimestamp: the timestamp is not an integral non-negative
	// number that fits in int64 epoch milliseconds.
	ReasonBadTimestamp
	// ReasonBadValue: a known metric has no usable numeric value, or the
	// value is NaN or infinite.
	ReasonBadValue
	// ReasonBadLine: an InfluxDB or Prometheus line that cannot be parsed.
	ReasonBadLine
	// ReasonMissingTimestamp: a metric line has no timestamp and
	// Decoder.DefaultTS is not set.
	ReasonMissingTimestamp
	// ReasonLineTooLong: reported by LineReader for a line longer than its
	// limit; the line was skipped.
	ReasonLineTooLong

	numReasons
)

var reasonNames = [numReasons]string{
	"unknown",
	"invalid_json",
	"missing_field",
	"bad_field",
	"bad_timestamp",
	"bad_value",
	"bad_line",
	"missing_timestamp",
	"line_too_long",
}

// NumReasons is one more than the largest Reason; Reasons are 0..NumReasons-1.
const NumReasons = int(numReasons)

// String returns the stable snake_case name of r.
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "reason_" + strconv.Itoa(int(r))
}

// Error is the error returned for every rejected line. Field names the
// offending JSON field, tag or label when there is one. Msg is a short
// constant detail; it never contains bytes of the input line, so an Error
// stays valid after the line is gone.
type Error struct {
	Reason Reason
	Field  string
	Msg    string
}

// Error formats e as e.g. `missing field "job_id"` or
// `bad field "weight": must be finite and > 0`.
func (e *Error) Error() string {
	var s string
	switch e.Reason {
	case ReasonInvalidJSON:
		s = "invalid JSON"
	case ReasonMissingField:
		s = "missing field"
	case ReasonBadField:
		s = "bad field"
	case ReasonBadTimestamp:
		s = "bad timestamp"
	case ReasonBadValue:
		s = "bad value"
	case ReasonBadLine:
		s = "bad line"
	case ReasonMissingTimestamp:
		s = "missing timestamp"
	case ReasonLineTooLong:
		s = "line too long"
	default:
		s = e.Reason.String()
	}
	if e.Field != "" {
		s += " " + strconv.Quote(e.Field)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	return s
}

// Is makes errors.Is(err, &Error{Reason: r}) match any *Error with reason
// r; a non-empty Field in the target must match too.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return t.Reason == e.Reason && (t.Field == "" || t.Field == e.Field)
}

// ReasonOf returns the Reason of err if err is (or wraps) an *Error.
func ReasonOf(err error) (Reason, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason, true
	}
	return ReasonUnknown, false
}

func newErr(r Reason, field, msg string) *Error {
	return &Error{Reason: r, Field: field, Msg: msg}
}

// Counts counts rejected lines per Reason. The zero value is ready to use.
// It is not safe for concurrent use.
type Counts struct {
	n [numReasons]uint64
}

// Add counts one line rejected for reason r. Out-of-range reasons are
// counted as ReasonUnknown.
func (c *Counts) Add(r Reason) {
	if r >= numReasons {
		r = ReasonUnknown
	}
	c.n[r]++
}

// AddErr, Get and Reset are used only by tests today (the pipeline counts
// with Add and reads with Total and Each); they complete the counter's API.

// AddErr counts err by its Reason if it is an *Error (anything else is
// counted as ReasonUnknown). A nil err is not counted.
func (c *Counts) AddErr(err error) {
	if err == nil {
		return
	}
	r, _ := ReasonOf(err)
	c.Add(r)
}

// Get returns the count for reason r.
func (c *Counts) Get(r Reason) uint64 {
	if r >= numReasons {
		return 0
	}
	return c.n[r]
}

// Total returns the sum over all reasons.
func (c *Counts) Total() uint64 {
	var t uint64
	for _, v := range c.n {
		t += v
	}
	return t
}

// Reset sets all counts to zero.
func (c *Counts) Reset() { c.n = [numReasons]uint64{} }

// Each calls fn for every reason with a non-zero count, in Reason order.
func (c *Counts) Each(fn func(r Reason, n uint64)) {
	for r, v := range c.n {
		if v != 0 {
			fn(Reason(r), v)
		}
	}
}

// String returns the non-zero counts as "reason=count" pairs separated by
// single spaces, in Reason order, e.g. "invalid_json=3 missing_field=1".
// It returns "" when every count is zero.
func (c *Counts) String() string {
	var b strings.Builder
	c.Each(func(r Reason, n uint64) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(r.String())
		b.WriteByte('=')
		b.WriteString(strconv.FormatUint(n, 10))
	})
	return b.String()
}
