package stream

import "slices"

// partKey names one partition of one topic.
type partKey struct {
	topic     string
	partition int
}

// ledger decides which offsets are safe to commit. An offset is safe once
// every window its message contributed to has been closed and written:
// committing it earlier would lose that contribution after a crash, since
// the message would not be read again.
//
// For each partition it keeps the lowest offset held by each open window
// and the highest offset consumed; the safe commit point is the lowest
// held offset, or one past the highest consumed when nothing is held.
// Memory is bounded by partitions × open windows.
type ledger struct {
	parts map[partKey]*partLedger
}

type partLedger struct {
	held          map[int64]int64 // window start -> lowest offset in it
	next          int64           // one past the highest offset consumed
	committedNext int64           // the last offset committed (next to read)
}

func newLedger() *ledger { return &ledger{parts: map[partKey]*partLedger{}} }

func (l *ledger) part(k partKey) *partLedger {
	p := l.parts[k]
	if p == nil {
		p = &partLedger{held: map[int64]int64{}, next: -1, committedNext: -1}
		l.parts[k] = p
	}
	return p
}

// consumed records that offset was read; it holds nothing yet.
func (l *ledger) consumed(k partKey, offset int64) {
	p := l.part(k)
	if p.committedNext < 0 {
		// The group's position is where consumption started.
		p.committedNext = offset
	}
	p.next = max(p.next, offset+1)
}

// hold records that offset contributed to the window starting at ws.
func (l *ledger) hold(k partKey, ws, offset int64) {
	p := l.part(k)
	if o, ok := p.held[ws]; !ok || offset < o {
		p.held[ws] = offset
	}
}

// release forgets windows that start before closedUpTo: they are closed
// and (the caller guarantees) written.
func (l *ledger) release(closedUpTo int64) {
	for _, p := range l.parts {
		for ws := range p.held {
			if ws < closedUpTo {
				delete(p.held, ws)
			}
		}
	}
}

// commitPoint is one partition's safe next offset to read.
type commitPoint struct {
	partKey
	next int64
}

// pending returns the partitions whose safe commit point moved past what
// was last committed, in a fixed order.
func (l *ledger) pending() []commitPoint {
	var out []commitPoint
	for k, p := range l.parts {
		safe := p.next
		for _, o := range p.held {
			safe = min(safe, o)
		}
		if safe > p.committedNext && safe >= 0 {
			out = append(out, commitPoint{k, safe})
		}
	}
	slices.SortFunc(out, func(a, b commitPoint) int {
		if a.topic != b.topic {
			if a.topic < b.topic {
				return -1
			}
			return 1
		}
		return a.partition - b.partition
	})
	return out
}

// committed records that the commit points were committed.
func (l *ledger) committed(cps []commitPoint) {
	for _, cp := range cps {
		p := l.part(cp.partKey)
		p.committedNext = max(p.committedNext, cp.next)
	}
}
