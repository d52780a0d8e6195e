package serve

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/skewlens/skewlens/internal/promreg"
)

// metrics are the Server's Prometheus metrics.
type metrics struct {
	requests      *prometheus.CounterVec   // by route, code
	duration      *prometheus.HistogramVec // by route
	snapshots     *prometheus.CounterVec   // by result: hit, shared, refreshed, failed, stale
	storeErrors   *prometheus.CounterVec   // by op
	storeRetries  *prometheus.CounterVec   // by op
	rejected      *prometheus.CounterVec   // by reason: busy, unauthenticated, forbidden
	changes       *prometheus.CounterVec   // by method, action
	queriesActive prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "skewlens", Subsystem: "serve", Name: "requests_total",
			Help: "HTTP requests answered, by route pattern and status code.",
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "skewlens", Subsystem: "serve", Name: "request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 3, 10),
		}, []string{"route"}),
		snapshots: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "skewlens", Subsystem: "serve", Name: "snapshot_total",
			Help: "Plan snapshot lookups, by result: hit (cached), shared (waited for a refresh), refreshed, failed, stale (answered from the last good snapshot while the store is unavailable).",
		}, []string{"result"}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "skewlens", Subsystem: "serve", Name: "store_errors_total",
			Help: "Failed store calls, by operation.",
		}, []string{"op"}),
		storeRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "skewlens", Subsystem: "serve", Name: "store_retries_total",
			Help: "Store calls retried after a retryable error, by operation.",
		}, []string{"op"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "skewlens", Subsystem: "serve", Name: "rejected_total",
			Help: "Requests refused before any work, by reason: busy (MaxConcurrentQueries), unauthenticated, forbidden (no tokens configured).",
		}, []string{"reason"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "skewlens", Subsystem: "serve", Name: "override_changes_total",
			Help: "Overrides stored (POST) or deleted (DELETE), by method and action.",
		}, []string{"method", "action"}),
		queriesActive: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "skewlens", Subsystem: "serve", Name: "queries_in_flight",
			Help: "Store calls in flight for findings, audit and writes (bounded by MaxConcurrentQueries).",
		}),
	}
	if _, err := promreg.Register(reg, "skewlens API server", m.requests, m.duration, m.snapshots, m.storeErrors, m.storeRetries,
		m.rejected, m.changes, m.queriesActive); err != nil {
		return nil, err
	}
	return m, nil
}
