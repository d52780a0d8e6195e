package planpub

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the Publisher's Prometheus metrics.
type metrics struct {
	plans      prometheus.Counter
	tombstones prometheus.Counter
	lineage    prometheus.Counter
	failures   *prometheus.CounterVec // by class: retryable, fatal (permanent), canceled
	retries    prometheus.Counter
	seconds    prometheus.Histogram
}

func newMetrics() *metrics {
	// opts names the metric skewlens_planpub_<name>.
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "skewlens", Subsystem: "planpub", Name: name, Help: help}
	}
	return &metrics{
		plans:      prometheus.NewCounter(prometheus.CounterOpts(opts("plans_published_total", "Plan versions acknowledged by the plans topic."))),
		tombstones: prometheus.NewCounter(prometheus.CounterOpts(opts("tombstones_published_total", "Retirements (tombstones) acknowledged by the plans topic."))),
		lineage: prometheus.NewCounter(prometheus.CounterOpts(opts("lineage_published_total",
			"Lineage messages (a job name's newest plan of a task, or its tombstone) acknowledged by the plans topic."))),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts(opts("failures_total",
			"Failed publish and ensure-topic attempts, by class (retryable, fatal, canceled).")), []string{"class"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts(opts("retries_total", "Retries after retryable errors."))),
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "skewlens", Subsystem: "planpub", Name: "publish_duration_seconds",
			Help:    "Time of one successful Publish call, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.plans, m.tombstones, m.lineage, m.failures, m.retries, m.seconds}
}
