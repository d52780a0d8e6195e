package incidentsink

import "github.com/prometheus/client_golang/prometheus"

// metrics are the IncidentObserver's Prometheus metrics.
type metrics struct {
	pending prometheus.Gauge
	changes *prometheus.CounterVec // by kind: opened, updated, closed
	open    prometheus.GaugeFunc
	refused prometheus.CounterFunc
	// refusedJobs counts the jobs whose stored incidents Resume refused.
	refusedJobs prometheus.Counter
}

// newMetrics reads the tracker's counts at each scrape, under the
// IncidentObserver's lock (a scrape waits for a Write in progress).
func newMetrics(s *IncidentObserver) *metrics {
	read := func(f func() float64) func() float64 {
		return func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return f()
		}
	}
	// opts names the metric skewlens_incidents_<name>.
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "skewlens", Subsystem: "incidents", Name: name, Help: help}
	}
	return &metrics{
		pending: prometheus.NewGauge(prometheus.GaugeOpts(opts("pending_changes", "Incident changes waiting to be stored."))),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts(opts("changes_total",
			"Incident changes stored, by kind (opened, updated, closed).")), []string{"kind"}),
		open: prometheus.NewGaugeFunc(prometheus.GaugeOpts(opts("open", "Incidents open now.")),
			read(func() float64 { return float64(s.tr.OpenCount()) })),
		refused: prometheus.NewCounterFunc(prometheus.CounterOpts(opts("refused_total",
			"Findings of new conditions ignored because the most incidents were open (overflow policy of incident.Config.MaxOpen).")),
			read(func() float64 { return float64(s.tr.Refused()) })),
		refusedJobs: prometheus.NewCounter(prometheus.CounterOpts(opts("state_refused_jobs_total",
			"Jobs whose stored open incidents could not be restored (they did not decode or validate: another version, corruption); they restarted without them."))),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.pending, m.changes, m.open, m.refused, m.refusedJobs}
}
