package window

import (
	"fmt"
	"time"

	"github.com/skewlens/skewlens/internal/knob"
)

// Partition names one input partition: a topic and a partition number for
// Kafka, or the zero value for an input that is one ordered stream.
type Partition struct {
	Topic string
	ID    int
}

// WatermarkConfig configures Watermarks. Its tags declare each setting
// once (internal/knob).
type WatermarkConfig struct {
	// IdleTimeout is how long a partition may deliver no event time, while
	// time runs, before it stops holding the watermark back; records it
	// delivers without one (skipped, late, rejected) do not keep it
	// active. The watermark is the lowest event time over the partitions
	// that delivered recently, minus the feeder's delay, as in Flink.
	IdleTimeout time.Duration `default:"15s" range:"(0s,]"`
	// StartupGrace is how long (of deliveries by other partitions) an
	// expected partition without backlog may take to deliver its first
	// message. Keep it short: the watermark stands still meanwhile, and
	// windows pile up. A partition with a backlog waits up to IdleTimeout
	// instead: a restart after a crash drains the backlog partition by
	// partition.
	StartupGrace time.Duration `default:"3s" range:"(0s,]"`
}

// DefaultWatermarkConfig returns the defaults the tags declare.
func DefaultWatermarkConfig() WatermarkConfig { return knob.Defaults[WatermarkConfig]() }

// withDefaults returns c with every zero field set to its default:
// NewWatermarks applies it.
func (c WatermarkConfig) withDefaults() WatermarkConfig {
	knob.FillZero(&c)
	return c
}

// Validate reports every invalid field; a zero one stands for its
// default. It changes nothing.
func (c WatermarkConfig) Validate() error { return knob.CheckFilled(c) }

// Watermarks tracks the event time of each input partition and combines
// them into one: the lowest highest-event-time over the active
// partitions, as Flink's watermarks with idleness, so that one partition
// racing ahead (a backlog draining) cannot make another's events late. A
// partition is active when it delivered an event time within IdleTimeout,
// measured on the clock minus the time paused (Pause to Resume), so that
// no partition turns idle while the owner consumes nothing. A partition
// announced with Expect holds the watermark where it is until it
// delivers, for its hold, counted from the first delivery of any
// partition; idleness counts from the end of the last hold at the
// earliest. The reasons: docs/architecture.md, Design notes: watermarks
// and idleness.
//
// Watermarks is not safe for concurrent use: one goroutine owns it.
type Watermarks struct {
	idle  time.Duration
	grace time.Duration
	clock func() time.Time // nil: no partition is ever idle or waiting

	parts   map[Partition]*partMark
	list    []*partMark // the same partitions, for iteration
	lastKey Partition   // the partition looked up last, and its entry
	last    *partMark

	started bool // a partition has delivered
	// doubt is when (on the paused clock) the input was last in doubt: the
	// source failed to read (Doubt); hasDoubt says it was.
	doubt    time.Time
	hasDoubt bool
	// Pauses: how many are open, since when, and their total so far.
	paused      int
	pausedAt    time.Time
	pausedTotal time.Duration
}

type partMark struct {
	p     Partition // its key in parts
	maxTS int64
	hasTS bool // an event set maxTS
	// seen is when the partition last delivered, on the paused clock
	// (see active); unset before its first delivery. event is when it
	// last delivered a message with an event time (observed is set from
	// Observe to the Delivered of that message).
	seen     time.Time
	hasSeen  bool
	event    time.Time
	hasEvent bool
	observed bool
	// waiting: an expected partition that has not delivered yet; it holds
	// the watermark for hold.
	waiting bool
	hold    time.Duration
}

// NewWatermarks returns Watermarks whose idleness follows clock. A nil
// clock means event time only: no partition is ever idle, and none waits
// (the replay of files, where all input is at hand).
func NewWatermarks(cfg WatermarkConfig, clock func() time.Time) (*Watermarks, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("watermarks: %w", err)
	}
	return &Watermarks{idle: cfg.IdleTimeout, grace: cfg.StartupGrace, clock: clock, parts: map[Partition]*partMark{}}, nil
}

func (w *Watermarks) part(p Partition) *partMark {
	if w.last != nil && w.lastKey == p {
		return w.last
	}
	m := w.parts[p]
	if m != nil {
		w.lastKey, w.last = p, m
	}
	return m
}

func (w *Watermarks) add(p Partition, m *partMark) {
	m.p = p
	if old := w.parts[p]; old != nil {
		*old = *m
		return
	}
	w.parts[p] = m
	w.list = append(w.list, m)
	w.lastKey, w.last = p, m
}

// active returns the clock's time minus the time paused: the time idleness
// is measured in. It stands still while paused.
func (w *Watermarks) active() time.Time {
	now := w.clock()
	if w.paused > 0 {
		now = w.pausedAt
	}
	return now.Add(-w.pausedTotal)
}

// Expect announces partition p, which holds the watermark where it is,
// from the first delivery of any partition on, until p delivers: for
// StartupGrace, as p may be empty or read by another consumer, or, when
// p has a backlog (unread records, known from the consumer lag), for
// IdleTimeout, since a backlog drains one partition after another.
// Expecting a partition again replaces what was known of it. Call before
// the first delivery.
func (w *Watermarks) Expect(p Partition, backlog bool) {
	hold := w.grace
	if backlog {
		hold = w.idle
	}
	w.add(p, &partMark{waiting: true, hold: hold})
}

// Reset forgets every partition, as if none had been expected or had
// delivered; the time paused so far is kept, and an open Pause stays
// open.
func (w *Watermarks) Reset() {
	clear(w.parts)
	w.list = w.list[:0]
	w.last, w.lastKey = nil, Partition{}
	w.started = false
	w.hasDoubt = false
}

// Observe records an event time of partition p and reports whether it
// raised p's highest event time (so the watermark may have moved).
func (w *Watermarks) Observe(p Partition, ts int64) bool {
	m := w.part(p)
	if m == nil {
		m = &partMark{}
		w.add(p, m)
	}
	m.observed = true
	if !m.hasTS || ts > m.maxTS {
		m.maxTS, m.hasTS = ts, true
		return true
	}
	return false
}

// Delivered records that partition p delivered a message, after Observe
// of each event time in it. Any message ends an expected partition's
// wait, since a partition of skipped or bad records has no event time to
// hold the watermark with; only one with an event time keeps the
// partition active. The first delivery of any partition starts the holds
// of the expected ones.
func (w *Watermarks) Delivered(p Partition) {
	if w.clock == nil {
		return
	}
	now := w.active()
	if !w.started {
		w.started = true
		for _, m := range w.list {
			m.seen, m.hasSeen = now, true
		}
	}
	if m := w.part(p); m != nil {
		m.seen, m.hasSeen, m.waiting = now, true, false
		if m.observed {
			m.event, m.hasEvent, m.observed = now, true, false
		}
	}
}

// Pause stops the time idleness is measured in until the matching Resume.
// Pauses may nest.
func (w *Watermarks) Pause() {
	if w.clock == nil {
		return
	}
	if w.paused == 0 {
		w.pausedAt = w.clock()
	}
	w.paused++
}

// Resume ends a Pause; without an open Pause it does nothing.
func (w *Watermarks) Resume() {
	if w.clock == nil || w.paused == 0 {
		return
	}
	w.paused--
	if w.paused == 0 {
		w.pausedTotal += w.clock().Sub(w.pausedAt)
	}
}

// Low returns the lowest highest-event-time over the active partitions
// that have one. ok is false when there is none, or while an expected
// partition still holds the watermark where it is.
func (w *Watermarks) Low() (low int64, ok bool) {
	m, waiting := w.holder()
	if m == nil || waiting {
		return 0, false
	}
	return m.maxTS, true
}

// Holder returns the partition the watermark stands at: an expected
// partition whose hold runs (waiting), else the active partition whose
// highest event time, maxTS, is the lowest. ok is false when there is
// none.
func (w *Watermarks) Holder() (p Partition, maxTS int64, waiting, ok bool) {
	m, waiting := w.holder()
	if m == nil {
		return Partition{}, 0, false, false
	}
	return m.p, m.maxTS, waiting, true
}

// holder returns the partition Low and Holder report: an expected one
// whose hold runs (waiting), else the active one with the lowest highest
// event time, else nil.
func (w *Watermarks) holder() (holder *partMark, waiting bool) {
	if w.clock == nil {
		for _, m := range w.list {
			if m.hasTS && (holder == nil || m.maxTS < holder.maxTS) {
				holder = m
			}
		}
		return holder, false
	}
	now := w.active()
	// heldUntil is when the last hold of an expected partition ran out.
	// Idleness counts from then at the earliest: while a partition holds
	// the watermark, the others' silence moves nothing, and a backlog
	// drained within the hold must still count once the hold ends, or
	// every partition would be idle at once and the watermark stuck for
	// good.
	var heldUntil time.Time
	for _, m := range w.list {
		if !m.hasSeen || !m.waiting {
			continue // holds nothing: nothing delivered yet, or no longer waiting
		}
		end := m.seen.Add(m.hold)
		if !now.After(end) {
			return m, true
		}
		if end.After(heldUntil) {
			heldUntil = end
		}
	}
	for _, m := range w.list {
		if !m.hasEvent || m.waiting || !m.hasTS {
			continue
		}
		since := m.event
		if heldUntil.After(since) {
			since = heldUntil
		}
		if now.Sub(since) > w.idle {
			continue
		}
		if holder == nil || m.maxTS < holder.maxTS {
			holder = m
		}
	}
	return holder, false
}

// Doubt records that the input may not have been readable just now: the
// source failed to read (a broker away). Quiet counts from the last doubt
// at the earliest, since silence that may be an outage is no sign that
// the jobs stopped.
func (w *Watermarks) Doubt() {
	if w.clock == nil {
		return
	}
	w.doubt, w.hasDoubt = w.active(), true
}

// Quiet reports whether the whole input is quiet: a partition delivered
// an event time, none has within IdleTimeout, none is waiting, and the
// input was not in doubt (Doubt) within IdleTimeout. It returns the
// highest event time any partition delivered, and how long, on the
// paused clock, it has been quiet: since the last event time delivered or
// the last doubt, whichever is later. Time paused (the owner consumed
// nothing) does not count, nor does time before Reset. Without a clock
// the input is never quiet.
//
// maxTS plus quiet is the processing-time watermark that ends the jobs
// that stopped when nothing else reports (skew.Engine.AdvanceQuiet); the
// rule: docs/architecture.md, "The end of a job's run".
func (w *Watermarks) Quiet() (maxTS int64, quiet time.Duration, ok bool) {
	if w.clock == nil || !w.started {
		return 0, 0, false
	}
	now := w.active()
	var last time.Time
	for _, m := range w.list {
		if m.waiting && m.hasSeen && !now.After(m.seen.Add(m.hold)) {
			return 0, 0, false // it holds the watermark: not quiet yet
		}
		if !m.hasEvent || !m.hasTS {
			continue
		}
		if !ok || m.maxTS > maxTS {
			maxTS = m.maxTS
		}
		if !ok || m.event.After(last) {
			last = m.event
		}
		ok = true
	}
	if !ok {
		return 0, 0, false
	}
	if w.hasDoubt && w.doubt.After(last) {
		last = w.doubt
	}
	quiet = now.Sub(last)
	if quiet <= w.idle {
		return 0, 0, false
	}
	return maxTS, quiet, true
}
