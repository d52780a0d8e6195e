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
	fetchErrors   *prometheus.CounterVec // kind: transient, fatal (permanent)
	commits       *prometheus.CounterVec // result: ok, error
	commitRetries prometheus.Counter
	commitLatency prometheus.Histogram
	rebalances    prometheus.Counter
	reader        *readerCollector

	consumedBy map[string]prometheus.Counter
	lagBy      map[string]prometheus.Gauge
}

func newSourceMetrics(topics []string, queue chan fetched) *sourceMetrics {
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
		rebalances: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "skewlens_kafka_reader_rebalances_total",
			Help: "Consumer group generations this member joined (one per rebalance).",
		}),
		reader:     newReaderCollector(queue),
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
	return []prometheus.Collector{m.consumed, m.lag, m.fetchErrors, m.commits, m.commitRetries, m.commitLatency, m.rebalances, m.reader}
}

// readerCollector exports the statistics of kafka-go's partition
// readers at scrape time, and the Source's queue. Reader.Stats resets its
// counters on every call, so this collector must be its only caller; it
// accumulates the deltas, and keeps them when a reader goes (its
// partition revoked).
type readerCollector struct {
	queue                         chan fetched
	errorsD, dialsD, qLenD, qCapD *prometheus.Desc

	mu      sync.Mutex
	readers map[*kafka.Reader]bool
	errors  int64
	dials   int64
}

func newReaderCollector(queue chan fetched) *readerCollector {
	return &readerCollector{
		queue:   queue,
		readers: map[*kafka.Reader]bool{},
		errorsD: prometheus.NewDesc("skewlens_kafka_reader_internal_errors_total",
			"Errors kafka-go's partition readers met and retried by themselves (connections, leaders).", nil, nil),
		dialsD: prometheus.NewDesc("skewlens_kafka_reader_dials_total",
			"Connections the partition readers opened.", nil, nil),
		qLenD: prometheus.NewDesc("skewlens_kafka_reader_queue_length",
			"Fetched records waiting in the source's bounded queue (capacity QueueCapacity; when full the readers block).", nil, nil),
		qCapD: prometheus.NewDesc("skewlens_kafka_reader_queue_capacity",
			"Capacity of the source's queue of fetched records.", nil, nil),
	}
}

func (c *readerCollector) add(r *kafka.Reader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readers[r] = true
}

// remove takes the reader's last statistics and forgets it.
func (c *readerCollector) remove(r *kafka.Reader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.take(r)
	delete(c.readers, r)
}

func (c *readerCollector) take(r *kafka.Reader) {
	st := r.Stats()
	c.errors += st.Errors
	c.dials += st.Dials
}

// Describe implements prometheus.Collector.
func (c *readerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.errorsD
	ch <- c.dialsD
	ch <- c.qLenD
	ch <- c.qCapD
}

// Collect implements prometheus.Collector.
func (c *readerCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	for r := range c.readers {
		c.take(r)
	}
	errs, dials := c.errors, c.dials
	c.mu.Unlock()
	ch <- prometheus.MustNewConstMetric(c.errorsD, prometheus.CounterValue, float64(errs))
	ch <- prometheus.MustNewConstMetric(c.dialsD, prometheus.CounterValue, float64(dials))
	ch <- prometheus.MustNewConstMetric(c.qLenD, prometheus.GaugeValue, float64(len(c.queue)))
	ch <- prometheus.MustNewConstMetric(c.qCapD, prometheus.GaugeValue, float64(cap(c.queue)))
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
