package clickhouse

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/skewlens/skewlens/internal/promreg"
)

// metrics are the Store's Prometheus metrics.
type metrics struct {
	insertSeconds *prometheus.HistogramVec // by table
	rowsInserted  *prometheus.CounterVec   // by table
	insertErrors  *prometheus.CounterVec   // by class: retryable, fatal (permanent), canceled
	retries       *prometheus.CounterVec   // by label of the one loop the Store owns: "migrate"
}

// newMetrics registers the Store's metrics with reg (nil: none) and
// returns them with the function that unregisters them, for a New that
// fails after registering (a Connector retries New on one registry).
func newMetrics(reg prometheus.Registerer) (*metrics, func(), error) {
	m := &metrics{
		insertSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "skewlens", Subsystem: "clickhouse",
			Name:    "insert_duration_seconds",
			Help:    "Time of one successful batch insert, by table.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}, []string{"table"}),
		rowsInserted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "skewlens", Subsystem: "clickhouse",
			Name: "rows_inserted_total",
			Help: "Rows inserted, by table (replays count again).",
		}, []string{"table"}),
		insertErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "skewlens", Subsystem: "clickhouse",
			Name: "errors_total",
			Help: "Failed inserts, reads and migration steps, by class (retryable, fatal: permanent, canceled).",
		}, []string{"class"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "skewlens", Subsystem: "clickhouse",
			Name: "retries_total",
			Help: "Retries the store makes itself after retryable errors: \"migrate\" for schema changes (callers retry the other operations and count their own).",
		}, []string{"table"}),
	}
	unreg, err := promreg.Register(reg, "clickhouse store", m.insertSeconds, m.rowsInserted, m.insertErrors, m.retries)
	if err != nil {
		return nil, nil, err
	}
	return m, unreg, nil
}
