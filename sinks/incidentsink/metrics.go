package incidentsink

import "github.com/prometheus/client_golang/prometheus"

// metrics are the Sink's Prometheus metrics.
type metrics struct {
	pending prometheus.Gauge
	changes *prometheus.CounterVec // by kind: opened, updated, closed
	open    prometheus.GaugeFunc
	refused prometheus.CounterFunc
}

// newMetrics reads the tracker's counts at each scrape, under the Sink's
// lock (a scrape waits for a Write in progress).
func newMetrics(s *Sink) *metrics {
	read := func(f func() float64) func() float64 {
		return func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return f()
		}
	}
	return &metrics{
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "skewlens", Subsystem: "incidents", Name: "pending_changes",
			Help: "Incident changes waiting to be stored.",
		}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "skewlens", Subsystem: "incidents", Name: "changes_total",
			Help: "Incident changes stored, by kind (opened, updated, closed).",
		}, []string{"kind"}),
		open: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "skewlens", Subsystem: "incidents", Name: "open",
			Help: "Incidents open now.",
		}, read(func() float64 { return float64(s.tr.OpenCount()) })),
		refused: prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: "skewlens", Subsystem: "incidents", Name: "refused_total",
			Help: "Findings of new conditions ignored because the most incidents were open (overflow policy of incident.Config.MaxOpen).",
		}, read(func() float64 { return float64(s.tr.Refused()) })),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.pending, m.changes, m.open, m.refused}
}
