package alertdeliver

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/internal/promreg"
	"github.com/skewlens/skewlens/skew/alert"
)

// fanoutMetrics are a Fanout's metrics, by notifier.
type fanoutMetrics struct {
	notifications *prometheus.CounterVec   // notifier, result: sent, failed
	dropped       *prometheus.CounterVec   // notifier, reason: overflow, fatal (permanent), retries, stopped
	queued        *prometheus.GaugeVec     // notifier
	latency       *prometheus.HistogramVec // notifier
	retries       *prometheus.CounterVec   // notifier
}

func newFanoutMetrics(reg prometheus.Registerer) (*fanoutMetrics, error) {
	m := &fanoutMetrics{
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skewlens_alert_notifications_total",
			Help: "Alerts handed to a notifier, by notifier and result (sent, failed; a failed alert stays queued unless the error is permanent).",
		}, []string{"notifier", "result"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skewlens_alert_queue_dropped_total",
			Help: "Alerts dropped undelivered, by notifier and reason (overflow: the queue was full and this was the oldest; fatal: the notifier refused it, a permanent error; retries: its retries were used up; stopped: still queued at shutdown).",
		}, []string{"notifier", "reason"}),
		queued: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "skewlens_alert_queue_length",
			Help: "Alerts waiting for a notifier.",
		}, []string{"notifier"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "skewlens_alert_notify_seconds",
			Help:    "Time of one Notify call, by notifier.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10), // 1 ms .. 262 s
		}, []string{"notifier"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skewlens_alert_retries_total",
			Help: "Notify calls retried after a retryable failure, by notifier.",
		}, []string{"notifier"}),
	}
	if _, err := promreg.Register(reg, "alert fanout", m.notifications, m.dropped, m.queued, m.latency, m.retries); err != nil {
		return nil, err
	}
	return m, nil
}

// init makes a notifier's series exist from the start, so that rate()
// and absent() work before the first alert.
func (m *fanoutMetrics) init(name string) {
	for _, r := range []string{"sent", "failed"} {
		m.notifications.WithLabelValues(name, r)
	}
	for _, r := range []string{"overflow", "fatal", "retries", "stopped"} {
		m.dropped.WithLabelValues(name, r)
	}
	m.queued.WithLabelValues(name)
	m.retries.WithLabelValues(name)
}

// alerterMetrics are an Alerter's metrics.
type alerterMetrics struct {
	firing      prometheus.Gauge
	pending     prometheus.Gauge
	transitions *prometheus.CounterVec // to: pending, firing, renotify, resolved, discarded
	refusedJobs prometheus.Counter
}

func newAlerterMetrics(reg prometheus.Registerer) (*alerterMetrics, error) {
	m := &alerterMetrics{
		firing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skewlens_alerts_firing",
			Help: "Alerts firing now.",
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skewlens_alerts_pending",
			Help: "Alerts whose incidents are open but have not lasted long enough to fire yet.",
		}),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skewlens_alert_transitions_total",
			Help: "Alert state transitions, by the state entered (pending, firing, renotify, resolved, discarded: a pending alert whose incidents closed before it fired).",
		}, []string{"to"}),
		refusedJobs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skewlens_alerts_state_refused_jobs_total",
			Help: "Jobs whose saved alert state could not be restored (another version, corruption): they restarted without their alerts' history.",
		}),
	}
	for _, k := range []alert.EventKind{alert.EventPending, alert.EventFiring, alert.EventRenotify, alert.EventResolved, alert.EventDiscarded} {
		m.transitions.WithLabelValues(string(k))
	}
	if _, err := promreg.Register(reg, "alerter", m.firing, m.pending, m.transitions, m.refusedJobs); err != nil {
		return nil, err
	}
	return m, nil
}
