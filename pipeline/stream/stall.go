package stream

import (
	"time"
)

// stallWindows is how many windows' worth of wall time the watermark may
// stand still while messages arrive before the runner says which
// partition holds it: long enough for a quiet minute of a job's reports,
// short enough that the person on call learns it before the findings
// are minutes late.
const stallWindows = 3

// stallWatch tells when the watermark stands still while messages keep
// arriving: one partition then holds it (a partition whose records
// carry no event time, or lag far behind the others). Only the actor
// uses it.
type stallWatch struct {
	after   time.Duration
	last    int64     // the watermark as last seen
	movedAt time.Time // when it last moved, or the first check
	msgs    int64     // messages processed by then
	started bool
	warned  bool // the stall was logged
}

// check records the watermark wm and the messages processed so far at
// now, and returns how long the watermark has stood still while messages
// arrived (0 when it moved, or when none arrived since), and whether that
// has just passed the limit (warn once per stall).
func (s *stallWatch) check(now time.Time, wm, msgs int64) (stalled time.Duration, warn bool) {
	if !s.started || wm != s.last {
		s.started, s.last, s.movedAt, s.msgs, s.warned = true, wm, now, msgs, false
		return 0, false
	}
	if msgs == s.msgs {
		return 0, false
	}
	stalled = now.Sub(s.movedAt)
	if stalled >= s.after && !s.warned {
		s.warned = true
		return stalled, true
	}
	return stalled, false
}
