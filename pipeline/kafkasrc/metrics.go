package kafkasrc

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

// sourceMetrics are a Source's metrics. The per-topic children are made
// once in New for the configured topics, so the hot path does no label
// lookups.
type sourceMetrics struct {
	consumed      *prometheus.CounterVec // topic
	lag           *prometheus.GaugeVec   // topic
	fetchErrors   *prometheus.CounterVec // kind: transient, fatal
	commits       *prometheus.CounterVec // result: ok, error
	commitRetries prometheus.Counter
	commitLatency prometheus.Histogram
	reader        *readerCollector

	consumedBy map[string]prometheus.Counter
	lagBy      map[string]prometheus.Gauge
}

func newSourceMetrics(topics []string, r *kafka.Reader) *sourceMetrics {
	m := &sourceMetrics{
		consumed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skewlens_kafka_consumed_records_total",
			Help: "Records returned by Source.Fetch, by topic.",
		}, []string{"topic"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "skewlens_kafka_consumer_lag",
			Help: "Records behind the partitions' high watermarks at the last fetch, summed over the topic's partitions read so far.",
		}, []string{"topic"}),
		fetchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skewlens_kafka_fetch_errors_total",
			Help: "Errors returned by kafka-go's FetchMessage; transient ones are retried with backoff.",
		}, []string{"kind"}),
		commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skewlens_kafka_commits_total",
			Help: "Source.Commit calls, by result.",
		}, []string{"result"}),
		commitRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skewlens_kafka_commit_retries_total",
			Help: "Commit attempts retried after a transient error.",
		}),
		commitLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "skewlens_kafka_commit_seconds",
			Help:    "Time Source.Commit took, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10), // 0.5 ms .. 131 s
		}),
		reader:     newReaderCollector(r),
		consumedBy: make(map[string]prometheus.Counter, len(topics)),
		lagBy:      make(map[string]prometheus.Gauge, len(topics)),
	}
	for _, t := range topics {
		m.consumedBy[t] = m.consumed.WithLabelValues(t)
		m.lagBy[t] = m.lag.WithLabelValues(t)
	}
	for _, k := range []string{"transient", "fatal"} {
		m.fetchErrors.WithLabelValues(k)
	}
	for _, k := range []string{"ok", "error"} {
		m.commits.WithLabelValues(k)
	}
	return m
}

func (m *sourceMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.consumed, m.lag, m.fetchErrors, m.commits, m.commitRetries, m.commitLatency, m.reader}
}

// readerCollector exports kafka-go's own reader statistics at scrape
// time. Reader.Stats resets its counters on every call, so this collector
// must be its only caller; it accumulates the deltas.
type readerCollector struct {
	r                                          *kafka.Reader
	errorsD, rebalancesD, dialsD, qLenD, qCapD *prometheus.Desc

	mu         sync.Mutex
	errors     int64
	rebalances int64
	dials      int64
}

func newReaderCollector(r *kafka.Reader) *readerCollector {
	return &readerCollector{
		r: r,
		errorsD: prometheus.NewDesc("skewlens_kafka_reader_internal_errors_total",
			"Errors kafka-go's reader met and retried by itself (connections, group membership).", nil, nil),
		rebalancesD: prometheus.NewDesc("skewlens_kafka_reader_rebalances_total",
			"Consumer group rebalances the reader went through.", nil, nil),
		dialsD: prometheus.NewDesc("skewlens_kafka_reader_dials_total",
			"Connections the reader opened.", nil, nil),
		qLenD: prometheus.NewDesc("skewlens_kafka_reader_queue_length",
			"Fetched records waiting in kafka-go's bounded queue (capacity QueueCapacity; when full the fetchers block).", nil, nil),
		qCapD: prometheus.NewDesc("skewlens_kafka_reader_queue_capacity",
			"Capacity of kafka-go's queue of fetched records.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *readerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.errorsD
	ch <- c.rebalancesD
	ch <- c.dialsD
	ch <- c.qLenD
	ch <- c.qCapD
}

// Collect implements prometheus.Collector.
func (c *readerCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	st := c.r.Stats()
	c.errors += st.Errors
	c.rebalances += st.Rebalances
	c.dials += st.Dials
	errs, reb, dials := c.errors, c.rebalances, c.dials
	c.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(c.errorsD, prometheus.CounterValue, float64(errs))
	ch <- prometheus.MustNewConstMetric(c.rebalancesD, prometheus.CounterValue, float64(reb))
	ch <- prometheus.MustNewConstMetric(c.dialsD, prometheus.CounterValue, float64(dials))
	ch <- prometheus.MustNewConstMetric(c.qLenD, prometheus.GaugeValue, float64(st.QueueLength))
	ch <- prometheus.MustNewConstMetric(c.qCapD, prometheus.GaugeValue, float64(st.QueueCapacity))
}

// deadLetterMetrics are a DeadLetters' metrics.
type deadLetterMetrics struct {
	sent     *prometheus.CounterVec // reason
	failed   *prometheus.CounterVec // reason
	retries  prometheus.Counter
	inFlight prometheus.Gauge
}

func newDeadLetterMetrics() *deadLetterMetrics {
	return &deadLetterMetrics{
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skewlens_kafka_dead_lettered_records_total",
			Help: "Records written to the dead-letter topic and acknowledged, by reason.",
		}, []string{"reason"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skewlens_kafka_dead_letter_failures_total",
			Help: "Dead letters that could not be written, by reason.",
		}, []string{"reason"}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skewlens_kafka_dead_letter_retries_total",
			Help: "Dead-letter writes retried after a transient error.",
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "skewlens_kafka_dead_letters_in_flight",
			Help: "Dead letters being written (bounded by DeadLetterInFlight; further senders wait).",
		}),
	}
}

func (m *deadLetterMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.sent, m.failed, m.retries, m.inFlight}
}
