package decode

import (
	"math"

	"github.com/skewlens/skewlens/skew"
)

// Flink's readings for "no value yet", by metric, as its own gauges
// report them (Flink 1.20 and 2.x; checked against flink-runtime's
// DefaultCheckpointStatsTracker and TaskIOMetricGroup):
//
//   - lastCheckpointDuration and lastCheckpointSize: -1 until a checkpoint
//     of the job completes, and for the job's whole life with
//     checkpointing off;
//   - busyTimeMsPerSecond and accumulateBusyTimeMs: NaN while the task
//     does not measure busy time (as its task starts up, and for a legacy
//     source's task). Flink's Prometheus and InfluxDB reporters write it as
//     "NaN"; skewlens's own reporter leaves it out.
//
// The buffer-usage gauges report 0, not NaN, without buffers; the
// counters have no sentinel. Any other NaN or infinite value is a bad
// value, and a line with it is dead-lettered.
//
// Such a reading is decoded as a metric with skew.Metric.NoValue set and
// Value 0: it says the job and its subtask are alive, and what is not
// there yet (the engine tells "no checkpoint completed yet" in its
// findings), rather than a number to measure.
func isSentinel(name skew.MetricName, v float64) bool {
	switch name {
	case skew.LastCheckpointDuration, skew.LastCheckpointSize:
		return v == -1
	case skew.BusyTimeMsPerSecond, skew.AccumulateBusyTimeMs:
		return math.IsNaN(v)
	}
	return false
}

// noValue marks m as Flink's "no value yet" when v is its metric's
// sentinel, and reports whether it did.
func noValue(m *skew.Metric, v float64) bool {
	if !isSentinel(m.Name, v) {
		return false
	}
	m.Value, m.NoValue = 0, true
	return true
}
