package decode

import (
	"bytes"

	"github.com/skewlens/skewlens/skew"
)

// tagCache remembers the last Influx tag set or Prometheus label set that
// decoded cleanly, so that the next line carrying the same bytes (the
// usual case: a reporter writes a subtask's metrics together) is not
// parsed again: one bytes.Equal, then the variables are sliced out of the
// current line at the offsets recorded the first time.
//
// What keeps the result that of a parse: the set is delimited so that its
// end does not depend on what follows (for Influx, the caller checks the
// ' ' after it); the Influx tag-key prediction (influxTagKeys) never
// changes a result, so it may be left as it is; sets with escaped
// variable values are not kept, since those values live in d.scratch.
// set is a copy owned by the Decoder; the strings handed out alias the
// current line, as a parse's would. See docs/architecture.md, Design
// notes: the tag-set cache.
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
