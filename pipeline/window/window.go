package window

import (
	"errors"
	"math"

	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/skew"
)

// Config configures a Feeder. Its tags declare each setting once
// (internal/knob).
type Config struct {
	// OutOfOrderMs: Flink reporters send every subtask's metrics at nearly
	// the same instant, so a few seconds is plenty for one stream; raise
	// it when merging streams with lag.
	OutOfOrderMs      int64 `name:"out-of-orderness" type:"ms" default:"5s" range:"[1ms,]" help:"How late an event may arrive behind the newest one and still count."`
	AllowedLatenessMs int64 `name:"allowed-lateness" type:"ms" default:"0s" range:"[0s,]" help:"Extra time a window stays open for late events."`
}

// DefaultConfig returns the defaults the tags declare.
func DefaultConfig() Config { return knob.Defaults[Config]() }

// withDefaults returns c with a zero OutOfOrderMs set to its default: New
// and NewPartitioned apply it, as the Config literals of callers rely on.
func (c Config) withDefaults() Config {
	knob.FillZero(&c)
	return c
}

// Validate reports every invalid field. It changes nothing.
func (c Config) Validate() error { return knob.Check(c) }

// Counts are the Feeder's event counters.
type Counts struct {
	Samples  uint64 // key samples accepted
	Metrics  uint64 // metrics accepted
	Late     uint64 // events for windows already closed
	Rejected uint64 // events the engine could not place
	// Replayed counts events of windows closed and written before the
	// engine was restored: read again after a restart, and not counted
	// twice.
	Replayed uint64
}

// Feeder feeds one engine: it adds events to the engine's windows and
// closes them as the watermark passes. Its watermark always comes from a
// Watermarks: the lowest event time over its active partitions, minus
// Delay. It is not safe for concurrent use.
type Feeder struct {
	cfg Config
	eng *skew.Engine
	wms *Watermarks
	// single: the feeder marks every event's time itself, on the one
	// partition of its own Watermarks (see New).
	single bool
	wm     int64
	counts Counts
}

// New returns a Feeder that feeds eng from one ordered input (files merged
// by event time): Sample and Metric mark each event's time, whatever the
// verdict, on a Watermarks of one partition without a clock, and move the
// watermark with it.
func New(cfg Config, eng *skew.Engine) (*Feeder, error) {
	wms, err := NewWatermarks(WatermarkConfig{}, nil)
	if err != nil {
		return nil, err
	}
	s, err := NewPartitioned(cfg, eng, wms)
	if err != nil {
		return nil, err
	}
	s.single = true
	return s, nil
}

// NewPartitioned returns a Feeder that feeds eng from several partitions
// whose event times wms tracks. Sample and Metric only add events: the
// caller, who knows each event's partition, marks it on wms (Observe,
// Delivered, Pause) and calls Advance to move the watermark.
func NewPartitioned(cfg Config, eng *skew.Engine, wms *Watermarks) (*Feeder, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if wms == nil {
		return nil, errors.New("window: nil watermarks")
	}
	return &Feeder{cfg: cfg, eng: eng, wms: wms, wm: math.MinInt64}, nil
}

// Watermarks returns the Watermarks the feeder's watermark comes from.
func (s *Feeder) Watermarks() *Watermarks { return s.wms }

// Partitioned reports whether the feeder was made by NewPartitioned: its
// caller marks event times on Watermarks.
func (s *Feeder) Partitioned() bool { return !s.single }

// Counts returns the counters so far.
func (s *Feeder) Counts() Counts { return s.counts }

// Jobs returns the number of jobs the engine tracks.
func (s *Feeder) Jobs() int { return s.eng.Jobs() }

// RefusedJobs returns how many events the engine refused at
// skew.Config.MaxJobs.
func (s *Feeder) RefusedJobs() uint64 { return s.eng.RefusedJobs() }

// Watermark returns the current watermark (math.MinInt64 before any event).
func (s *Feeder) Watermark() int64 { return s.wm }

func (s *Feeder) count(v skew.Verdict, accepted *uint64) skew.Verdict {
	switch v {
	case skew.Accepted:
		*accepted++
	case skew.Late:
		s.counts.Late++
	case skew.Replayed:
		s.counts.Replayed++
	default:
		s.counts.Rejected++
	}
	return v
}

// Sample adds a key sample and advances the watermark; findings of
// windows it closes are appended to dst. The verdict says whether the
// sample was accepted, late or rejected.
func (s *Feeder) Sample(k *skew.KeySample, dst []skew.Finding) ([]skew.Finding, skew.Verdict) {
	v := s.count(s.eng.AddSample(k), &s.counts.Samples)
	return s.observe(k.TS, dst), v
}

// Metric adds a metric and advances the watermark, like Sample.
func (s *Feeder) Metric(m *skew.Metric, dst []skew.Finding) ([]skew.Finding, skew.Verdict) {
	v := s.count(s.eng.AddMetric(m), &s.counts.Metrics)
	return s.observe(m.TS, dst), v
}

// WindowStart returns the start of the engine's window that holds event
// time ts.
func (s *Feeder) WindowStart(ts int64) int64 { return s.eng.WindowStart(ts) }

// WindowMs returns the length of the windows.
func (s *Feeder) WindowMs() int64 { return s.eng.WindowMs() }

// observe advances the watermark after an event of a single-input feeder.
// The event is added first, so an event that itself moves the watermark
// is never late.
func (s *Feeder) observe(ts int64, dst []skew.Finding) []skew.Finding {
	if !s.single || !s.wms.Observe(Partition{}, ts) {
		return dst
	}
	return s.Advance(dst)
}

// Advance moves the watermark to the Watermarks' low mark minus Delay, if
// that is later, closing the windows it passes; their findings are
// appended to dst. With partitions, call it after each message and now
// and then without one: partitions going idle move it too.
func (s *Feeder) Advance(dst []skew.Finding) []skew.Finding {
	low, ok := s.wms.Low()
	if !ok {
		return dst
	}
	if wm := low - s.Delay(); wm > s.wm {
		s.wm = wm
		dst = s.eng.Advance(wm, dst)
	}
	return dst
}

// AdvanceQuiet ends the jobs that stopped while the whole input is quiet
// (Watermarks.Quiet): the processing-time watermark, the highest event
// time delivered plus the wall time quiet since, goes to
// skew.Engine.AdvanceQuiet, which closes a job's open windows and ends
// it once JobEndAfterMs of it have passed. The watermark moves to the end
// of the window the last job ended in. It reports whether a job ended.
// Call it after Advance, now and then (the runner does on its tick). The
// rule: docs/architecture.md, "The end of a job's run".
func (s *Feeder) AdvanceQuiet(dst []skew.Finding) ([]skew.Finding, bool) {
	maxTS, quiet, ok := s.wms.Quiet()
	if !ok {
		return dst, false
	}
	dst, to := s.eng.AdvanceQuiet(maxTS+quiet.Milliseconds(), dst)
	if to == math.MinInt64 {
		return dst, false
	}
	s.wm = max(s.wm, to)
	return dst, true
}

// Delay is how far the watermark trails the event time it is derived
// from: the out-of-orderness plus the allowed lateness.
func (s *Feeder) Delay() int64 { return s.cfg.OutOfOrderMs + s.cfg.AllowedLatenessMs }

// Snapshot appends the engine's cross-window state (see skew.Engine.Snapshot).
func (s *Feeder) Snapshot(dst []skew.JobState) []skew.JobState { return s.eng.Snapshot(dst) }

// Restore loads saved job states into the engine (see
// skew.Engine.Restore, which returns the states it refused): call it
// before the first event, or after Reset.
func (s *Feeder) Restore(states []skew.JobState) ([]skew.RefusedJob, error) {
	return s.eng.Restore(states)
}

// Reset drops everything but the counters: the open windows and the
// engine's state (skew.Engine.Reset), the watermark and the partitions of
// its Watermarks (Watermarks.Reset). The feeder is then as new, for a
// pipeline whose partitions were revoked: it restores the saved state
// and reads again from the committed offsets.
func (s *Feeder) Reset() {
	s.eng.Reset()
	s.wms.Reset()
	s.wm = math.MinInt64
}

// Flush closes every open window.
func (s *Feeder) Flush(dst []skew.Finding) []skew.Finding { return s.eng.Flush(dst) }
