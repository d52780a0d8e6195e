package stream

import (
	"time"

	"github.com/skewlens/skewlens/skew"
)

// ReadFailures is implemented by Sources that retry failed reads by
// themselves (kafkasrc: a broker away), so that Fetch only waits:
// ReadFailures counts the failures so far, and is safe to call from any
// goroutine. The runner takes a change of the count for a sign that the
// input may be unreadable, which no silence may be mistaken for: the
// quiet that ends jobs starts over (window.Watermarks.Doubt). The rule:
// docs/architecture.md, "The end of a job's run".
type ReadFailures interface {
	ReadFailures() uint64
}

// quiet runs on the actor's tick: it notes read failures of the source
// since the last tick, then lets a quiet input end the jobs that stopped
// (window.Feeder.AdvanceQuiet): with nothing reporting, the event-time
// watermark stands still, and without this the last jobs to report would
// never end. Time the writer holds the watermarks' pause does not count
// as quiet.
func (r *Runner) quiet() {
	if rf, ok := r.src.(ReadFailures); ok {
		if n := rf.ReadFailures(); n != r.readFailures {
			r.readFailures = n
			r.wms.Doubt()
		}
	}
	n := len(r.pending)
	var ended bool
	r.pending, ended = r.feeder.AdvanceQuiet(r.pending)
	if !ended {
		return
	}
	var ids []string
	for i := n; i < len(r.pending); i++ {
		if f := &r.pending[i]; f.Kind == skew.KindJobEnd {
			ids = append(ids, f.JobID)
		}
	}
	maxTS, quiet, _ := r.wms.Quiet()
	r.log.Info("no partition delivered an event time for a while: jobs silent for --job-end-after ended on wall time",
		"quiet_for", quiet.Round(time.Second), "last_event_time", time.UnixMilli(maxTS).UTC().Format(time.RFC3339),
		"ended", ids, "watermark", time.UnixMilli(r.feeder.Watermark()).UTC().Format(time.RFC3339))
	r.m.pending.Set(float64(len(r.pending)))
}
