package stream

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/internal/promreg"
	"github.com/skewlens/skewlens/skew"
)

type metrics struct {
	messages *prometheus.CounterVec
	lines    *prometheus.CounterVec
	// The per-record outcomes and per-topic message counters, resolved
	// once: a label lookup per record cost more than decoding it.
	outcomeSample, outcomeMetric, outcomeSkipped  prometheus.Counter
	outcomeLate, outcomeReplayed, outcomeRejected prometheus.Counter
	byTopic                                       map[string]prometheus.Counter
	findings                                      *prometheus.CounterVec
	queue                                         prometheus.Gauge
	flush                                         prometheus.Histogram
	commits                                       prometheus.Counter
	watermark                                     prometheus.Gauge
	watermarkStalled                              prometheus.Gauge
	pending                                       prometheus.Gauge
	writeRetries                                  prometheus.Counter
	stateSaves                                    prometheus.Counter
	// The engine's jobs (skew.Config.MaxJobs bounds them) and the events
	// it refused at that bound; refusedSeen is the engine's count last
	// added (the actor's only).
	engineJobs  prometheus.Gauge
	refusedJobs prometheus.Counter
	refusedSeen uint64
	// refusedStates counts the saved job states that did not restore.
	refusedStates prometheus.Counter
	// Consumer-group rebalances (GroupSource): the generation processed,
	// and what a revocation dropped.
	generation                                    prometheus.Gauge
	revokedFindings, revokedMessages, revokedJobs prometheus.Counter
	// jobLastSeen has a series per job in the last saved engine state;
	// jobsExported names them, so that a job the engine forgot loses its
	// series. Only the writer goroutine touches jobsExported.
	jobLastSeen  *prometheus.GaugeVec
	jobsExported map[string]bool
	// stopped has a series per run that ended as stopped, for a while.
	stopped *stoppedJobs
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "skewlens_messages_total", Help: "Kafka messages processed, by topic."}, []string{"topic"}),
		lines: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "skewlens_records_total",
			Help: "Records by outcome: sample, metric, skipped, late, rejected, or a decode error reason (dead-lettered)."}, []string{"outcome"}),
		findings: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "skewlens_findings_written_total", Help: "Findings written to the sink, by kind."}, []string{"kind"}),
		queue:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "skewlens_fetch_queue_length", Help: "Messages fetched and waiting to be processed (bounded by the queue capacity)."}),
		flush: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "skewlens_flush_seconds", Help: "Time to write pending findings and commit offsets.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		commits:   prometheus.NewCounter(prometheus.CounterOpts{Name: "skewlens_offset_commits_total", Help: "Offset commits after the sink acknowledged."}),
		watermark: prometheus.NewGauge(prometheus.GaugeOpts{Name: "skewlens_watermark_ms", Help: "Current event-time watermark, epoch ms."}),
		watermarkStalled: prometheus.NewGauge(prometheus.GaugeOpts{Name: "skewlens_watermark_stalled_seconds",
			Help: "How long the watermark has stood still while messages kept arriving (0 while it moves, or while nothing arrives)."}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{Name: "skewlens_pending_findings", Help: "Findings waiting for the next write."}),
		writeRetries: prometheus.NewCounter(prometheus.CounterOpts{Name: "skewlens_write_retries_total",
			Help: "Retried writes of findings or engine state (the sink was unavailable; consumption pauses meanwhile)."}),
		stateSaves: prometheus.NewCounter(prometheus.CounterOpts{Name: "skewlens_engine_state_saves_total",
			Help: "Saves of the engine's cross-window state, each after the findings of the windows that changed it."}),
		// Event time, not wall time: a backlog read after a restart or a
		// slow consumer does not make a job look silent, and the alert
		// compares it with skewlens_watermark_ms.
		jobLastSeen: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "skewlens_job_last_seen_window_seconds",
			Help: "Start (event time, epoch seconds) of the last window in which the job reported a metric or key sample, as of the last engine state save; the series goes when the engine forgets the job."}, []string{"job_id"}),
		jobsExported: map[string]bool{},
		stopped:      newStoppedJobs(),
		engineJobs: prometheus.NewGauge(prometheus.GaugeOpts{Name: "skewlens_engine_jobs",
			Help: "Jobs (runs, by job id) the engine tracks; --max-jobs bounds them and a run's end frees its place."}),
		refusedJobs: prometheus.NewCounter(prometheus.CounterOpts{Name: "skewlens_engine_refused_job_events_total",
			Help: "Events rejected because the engine tracked --max-jobs jobs and theirs was not one of them."}),
		refusedStates: prometheus.NewCounter(prometheus.CounterOpts{Name: "skewlens_engine_state_refused_jobs_total",
			Help: "Saved engine states of jobs that could not be restored (corrupt, of another version or window length): each such job started afresh, without its history."}),
		generation: prometheus.NewGauge(prometheus.GaugeOpts{Name: "skewlens_group_generation",
			Help: "The consumer-group generation whose partitions are processed (0: none yet, or not a consumer group)."}),
		revokedFindings: prometheus.NewCounter(prometheus.CounterOpts{Name: "skewlens_revoked_findings_total",
			Help: "Findings dropped unwritten because their partitions were revoked (their next owner writes them)."}),
		revokedMessages: prometheus.NewCounter(prometheus.CounterOpts{Name: "skewlens_revoked_messages_total",
			Help: "Messages fetched in a generation that had ended, not processed (their partitions' owner reads them again)."}),
		revokedJobs: prometheus.NewCounter(prometheus.CounterOpts{Name: "skewlens_revoked_writes_total",
			Help: "Writer jobs (findings, state, commit) of a revoked generation that were abandoned unfinished."}),
	}
	m.outcomeSample, m.outcomeMetric = m.lines.WithLabelValues("sample"), m.lines.WithLabelValues("metric")
	m.outcomeSkipped, m.outcomeLate = m.lines.WithLabelValues("skipped"), m.lines.WithLabelValues("late")
	m.outcomeReplayed, m.outcomeRejected = m.lines.WithLabelValues("replayed"), m.lines.WithLabelValues("rejected")
	m.byTopic = map[string]prometheus.Counter{}
	if _, err := promreg.Register(reg, "stream runner", m.messages, m.lines, m.findings, m.queue, m.flush, m.commits, m.watermark, m.watermarkStalled, m.pending, m.writeRetries, m.stateSaves, m.jobLastSeen, m.stopped.gauge,
		m.engineJobs, m.refusedJobs, m.refusedStates, m.generation, m.revokedFindings, m.revokedMessages, m.revokedJobs); err != nil {
		return nil, err
	}
	return m, nil
}

// message returns the messages counter of a topic. Only the runner's
// goroutine calls it.
func (m *metrics) message(topic string) prometheus.Counter {
	c := m.byTopic[topic]
	if c == nil {
		c = m.messages.WithLabelValues(topic)
		m.byTopic[topic] = c
	}
	return c
}

// savedJobs sets each saved job's last-seen gauge and removes the series
// of the jobs the engine no longer holds (ended, or gone for its
// HistoryWindows: a tombstone, or absent). Only the writer goroutine
// calls it, after the state is saved.
func (m *metrics) savedJobs(states []skew.JobState) {
	seen := make(map[string]bool, len(states))
	for i := range states {
		s := &states[i]
		if s.Ended {
			continue
		}
		seen[s.JobID] = true
		m.jobLastSeen.WithLabelValues(s.JobID).Set(float64(s.LastSeen) / 1000)
	}
	for id := range m.jobsExported {
		if !seen[id] {
			m.jobLastSeen.DeleteLabelValues(id)
		}
	}
	m.jobsExported = seen
}

// engine updates the engine's job count and refusals; the actor calls it.
func (m *metrics) engine(jobs int, refused uint64) {
	m.engineJobs.Set(float64(jobs))
	if refused < m.refusedSeen {
		m.refusedSeen = 0 // a new engine (Feeder.Reset) counts from zero
	}
	m.refusedJobs.Add(float64(refused - m.refusedSeen))
	m.refusedSeen = refused
}
