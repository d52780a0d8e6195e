package decode

import (
	"bytes"

	"github.com/skewlens/skewlens/skew"
)

// tagCache remembers the last Influx tag set or Prometheus label set that
// decoded cleanly, so that the next line carrying the same bytes is not
// parsed again.
//
// Why: a reporter writes all the metrics of one subtask together, so
// consecutive lines of a metrics fleet differ in name, value and
// timestamp but carry a byte-identical tag or label set (host, job id,
// task name, attempt id, ...: about two thirds of a Flink line). No
// library parses these formats faster than the hand-written scanners
// here, and those still look at every byte and branch on every
// separator; comparing the set with the previous one is a single
// bytes.Equal (a memequal that compares many bytes per instruction),
// after which the variables are sliced out of the current line at the
// offsets recorded the first time.
//
// Exactness: parsing a set is a function of its bytes alone. The set is
// delimited so that its end does not depend on what follows (Prometheus:
// '{' through the matching '}'; Influx: the ',' after the measurement
// through the last tag value, which the caller checks is followed by the
// ' ' that ended it before). The one other input, the Influx tag-key
// prediction (influxTagKeys), saves work but never changes a result, so
// it may be left as it is. So the variables, their "seen" bits and the
// position after the set are those a parse would give. Only
// sets without escaped variable values are kept, because those values
// live in d.scratch, which the next line overwrites.
//
// Lifetime: set is a copy owned by the Decoder (it grows to the longest
// set seen and is reused); nothing refers to the earlier line's bytes.
// The strings handed out alias the current line, as a parse's would.
type tagCache struct {
	format Format // FormatInflux or FormatPrometheus; anything else: empty
	set    []byte
	seen   uint16
	// vals[v] is where the value of variable v lies, relative to the
	// start of the set, when seen has bit v.
	vals [varSubtask + 1]struct{ s, e int32 }
}

// match reports whether b[i:] begins with the cached set of format f.
func (c *tagCache) match(f Format, b []byte, i int) bool {
	return c.format == f && len(c.set) > 0 && len(b)-i >= len(c.set) && bytes.Equal(b[i:i+len(c.set)], c.set)
}

// apply sets the cached variables on m from the set copy at b[i:] and
// returns the seen bits and the subtask_index text, as the parse does.
func (c *tagCache) apply(m *skew.Metric, b []byte, i int) (seen uint16, sub string) {
	for v := varHost; v <= varSubtask; v++ {
		if c.seen&(1<<v) == 0 {
			continue
		}
		r := c.vals[v]
		s := bytesToString(b[i+int(r.s) : i+int(r.e)])
		if v == varSubtask {
			sub = s
		} else {
			setVar(m, v, s)
		}
	}
	return c.seen, sub
}

// tagRecorder collects, during a parse of a set starting at start, what
// tagCache needs; ok turns false when the set cannot be cached.
type tagRecorder struct {
	start int
	ok    bool
	vals  [varSubtask + 1]struct{ s, e int32 }
}

func (r *tagRecorder) record(v varID, vs, ve int, esc bool) {
	if esc {
		r.ok = false
		return
	}
	r.vals[v].s, r.vals[v].e = int32(vs-r.start), int32(ve-r.start)
}

// store makes b[r.start:end] of format f the cached set, with the
// variables seen in it.
func (c *tagCache) store(f Format, r *tagRecorder, b []byte, end int, seen uint16) {
	if !r.ok {
		c.format = FormatAuto
		return
	}
	c.format = f
	c.set = append(c.set[:0], b[r.start:end]...)
	c.seen = seen
	c.vals = r.vals
}
