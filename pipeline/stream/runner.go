package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/pipeline/decode"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// Source yields Kafka messages and commits them. Fetch blocks until a
// message arrives or ctx is done; Commit commits each partition up to and
// including the offset of the message given for it.
type Source interface {
	Fetch(ctx context.Context) (kafka.Message, error)
	Commit(ctx context.Context, msgs ...kafka.Message) error
}

// Sink stores findings. Write returns nil only once every finding is
// durably stored; version orders rewrites of the same rows after a replay.
type Sink interface {
	Write(ctx context.Context, version uint64, fs []skew.Finding) error
}

// DeadLetters keeps records that cannot be decoded, with the reason.
// Send returns once the record is stored.
type DeadLetters interface {
	Send(ctx context.Context, msg kafka.Message, reason, detail string) error
}

// Advancer is implemented by sinks that act on event time passing even
// when no findings come (plans cool down and expire, alerts resolve). If
// the Sink implements it, Advance is called with the end of the last
// closed window each time windows close, after their findings are written
// and before the offsets are committed.
type Advancer interface {
	Advance(ctx context.Context, now time.Time) error
}

// StateStore keeps the engine's cross-window state (see
// skew.Engine.Snapshot). SaveState returns nil only once the state is
// durably stored; later versions replace earlier ones.
type StateStore interface {
	SaveState(ctx context.Context, group string, version uint64, states []skew.JobState) error
}

// Config configures a Runner.
type Config struct {
	// QueueCapacity bounds the messages fetched but not yet processed
	// (default 4096, handed over in batches of up to 256). When it is full
	// the fetcher waits: the overflow policy is back-pressure on Kafka,
	// never dropping.
	QueueCapacity int
	// FlushInterval is how often pending findings are written and offsets
	// committed (default 1s: about one insert per second per table).
	FlushInterval time.Duration
	// MaxPending writes findings at once when this many are pending
	// (default 50000), bounding memory while ClickHouse is slow.
	MaxPending int
	// Partitions lists the partitions of the consumed topics
	// (kafkasrc.Backlog). Each holds the watermark back from the start
	// until it delivers a message, or for the stage's
	// WatermarkConfig.StartupGrace (of deliveries by others) if it does
	// not: it is empty, or another instance of the group reads it. Without
	// it, the partition whose reader starts first would move the watermark
	// past the records of the others, which kafka-go starts reading a
	// moment later, and make them late.
	Partitions []kafka.Partition
	// Backlog lists the partitions that hold unread records at startup
	// (kafkasrc.Backlog too). They hold the watermark for up to the
	// WatermarkConfig.IdleTimeout instead: a restart after a crash drains
	// them partition by partition.
	Backlog []kafka.Partition
	// Group names the consumer group whose engine state is saved (with a
	// StateStore; default "skewlens").
	Group string
	// FinalFlushTimeout bounds the last write and commit when Run ends
	// (default 30s): with the sink away, what is not written then is read
	// again after a restart.
	FinalFlushTimeout time.Duration
}

// Validate fills defaults and checks values.
func (c *Config) Validate() error {
	if c.QueueCapacity == 0 {
		c.QueueCapacity = 4096
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = time.Second
	}
	if c.MaxPending == 0 {
		c.MaxPending = 50000
	}
	if c.Group == "" {
		c.Group = "skewlens"
	}
	if c.FinalFlushTimeout == 0 {
		c.FinalFlushTimeout = 30 * time.Second
	}
	var errs []error
	if c.QueueCapacity < 1 {
		errs = append(errs, fmt.Errorf("queue capacity %d: must be positive", c.QueueCapacity))
	}
	if c.FlushInterval < 0 {
		errs = append(errs, fmt.Errorf("flush interval %s: must not be negative", c.FlushInterval))
	}
	if c.MaxPending < 1 {
		errs = append(errs, fmt.Errorf("max pending %d: must be positive", c.MaxPending))
	}
	return errors.Join(errs...)
}

// Runner is the pipeline actor. Run it once; Stop is safe to call any
// number of times, from any goroutine.
type Runner struct {
	cfg   Config
	src   Source
	sink  Sink
	state StateStore // nil: the engine's state is not saved
	dead  DeadLetters
	stage *window.Stage
	log   *slog.Logger
	m     *metrics
	now   func() time.Time

	dec    *decode.Decoder
	ledger *ledger
	// wms holds each partition's highest event time and when it last
	// delivered: the stage's watermark comes from it.
	wms     *window.Watermarks
	pending []skew.Finding
	onFind  func(*skew.Finding)
	// savedUpTo is the watermark window whose engine state was last saved.
	savedUpTo int64
	states    []skew.JobState

	lastWrite time.Time // when pending findings were last written

	stopOnce sync.Once
	stop     chan struct{}

	// Progress counters, readable from any goroutine.
	messages, written atomic.Int64
}

// Progress returns the messages processed and findings written so far. It
// is safe to call from any goroutine.
func (r *Runner) Progress() (messages, findings int64) {
	return r.messages.Load(), r.written.Load()
}

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
	pending                                       prometheus.Gauge
	writeRetries                                  prometheus.Counter
	stateSaves                                    prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
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
		pending:   prometheus.NewGauge(prometheus.GaugeOpts{Name: "skewlens_pending_findings", Help: "Findings waiting for the next write."}),
		writeRetries: prometheus.NewCounter(prometheus.CounterOpts{Name: "skewlens_write_retries_total",
			Help: "Retried writes of findings or engine state (the sink was unavailable; consumption pauses meanwhile)."}),
		stateSaves: prometheus.NewCounter(prometheus.CounterOpts{Name: "skewlens_engine_state_saves_total",
			Help: "Saves of the engine's cross-window state, each after the findings of the windows that changed it."}),
	}
	m.outcomeSample, m.outcomeMetric = m.lines.WithLabelValues("sample"), m.lines.WithLabelValues("metric")
	m.outcomeSkipped, m.outcomeLate = m.lines.WithLabelValues("skipped"), m.lines.WithLabelValues("late")
	m.outcomeReplayed, m.outcomeRejected = m.lines.WithLabelValues("replayed"), m.lines.WithLabelValues("rejected")
	m.byTopic = map[string]prometheus.Counter{}
	if reg != nil {
		reg.MustRegister(m.messages, m.lines, m.findings, m.queue, m.flush, m.commits, m.watermark, m.pending, m.writeRetries, m.stateSaves)
	}
	return m
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

// New returns a Runner that feeds stage, which must be partitioned
// (window.NewPartitioned): the runner marks each message's event times on
// its Watermarks by partition. Offsets are held by the stage's windows, so
// the window length comes from there. state may be nil: then a restarted
// runner starts the engine's cross-window history afresh.
func New(cfg Config, src Source, stage *window.Stage, sink Sink, state StateStore, dead DeadLetters, log *slog.Logger, reg prometheus.Registerer) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !stage.Partitioned() {
		return nil, errors.New("stream: the window stage must be partitioned (window.NewPartitioned)")
	}
	return &Runner{
		cfg: cfg, src: src, sink: sink, state: state, dead: dead, stage: stage, log: log,
		m: newMetrics(reg), now: time.Now, dec: decode.NewDecoder(decode.FormatAuto), ledger: newLedger(),
		wms:       stage.Watermarks(),
		stop:      make(chan struct{}),
		savedUpTo: math.MinInt64,
	}, nil
}

// OnFinding sets a callback that sees each finding once it is written (for
// the terminal view). Call before Run.
func (r *Runner) OnFinding(f func(*skew.Finding)) { r.onFind = f }

// Stop asks Run to finish: it writes pending findings, commits what is
// safe, and returns. Open windows are not written: their messages are not
// committed, so they are read again and completed after a restart.
func (r *Runner) Stop() { r.stopOnce.Do(func() { close(r.stop) }) }

// Run consumes until ctx is done, Stop is called, the source ends with
// io.EOF, or a fatal error occurs. A fetch error is returned only after
// every message fetched before it has been processed.
func (r *Runner) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Listed partitions wait from the first message of any partition on
	// (see process): joining the consumer group takes seconds, and their
	// grace must not run out before anything could be delivered.
	for _, p := range r.cfg.Partitions {
		r.wms.Expect(window.Partition{Topic: p.Topic, ID: p.ID}, false)
	}
	for _, p := range r.cfg.Backlog {
		r.wms.Expect(window.Partition{Topic: p.Topic, ID: p.ID}, true)
	}
	// Messages cross from the fetcher to the actor in batches: a channel
	// operation per message costs more than decoding it. The queue holds
	// QueueCapacity messages in all.
	queue := make(chan []kafka.Message, max(1, r.cfg.QueueCapacity/batchMax))
	fetchErr := make(chan error, 1)
	go r.fetch(ctx, queue, fetchErr)
	tick := time.NewTicker(r.cfg.FlushInterval)
	defer tick.Stop()
	for {
		select {
		case batch, ok := <-queue:
			if !ok {
				// The fetcher has stopped, and everything it fetched has been
				// processed. A source that ends (io.EOF) is a finished replay.
				select {
				case err := <-fetchErr:
					if errors.Is(err, io.EOF) {
						return r.finalFlush(ctx)
					}
					return err
				default:
					return r.finalFlush(ctx)
				}
			}
			r.m.queue.Set(float64(len(queue) * batchMax))
			for _, msg := range batch {
				if err := r.process(ctx, msg); err != nil {
					return err
				}
			}
			// Findings appear when the watermark closes windows. Write them
			// now if the last write is at least a flush interval old, so a
			// window's findings are not held back by the ticker; otherwise
			// the ticker writes them. Writing on every close would stall the
			// actor on the sink's pacing (one insert per second per table).
			if len(r.pending) >= r.cfg.MaxPending ||
				len(r.pending) > 0 && r.now().Sub(r.lastWrite) >= r.cfg.FlushInterval {
				if err := r.flush(ctx); err != nil {
					return err
				}
			}
		case <-tick.C:
			r.advance() // partitions that went idle stop holding it back
			if err := r.flush(ctx); err != nil {
				return err
			}
		case <-r.stop:
			cancel()
			return r.finalFlush(ctx)
		case <-ctx.Done():
			return r.finalFlush(ctx)
		}
	}
}

// batchMax and batchWait bound one hand-off from the fetcher: a batch is
// sent when it has batchMax messages or batchWait after its first one, so
// batching adds at most batchWait of latency.
const (
	batchMax  = 256
	batchWait = 5 * time.Millisecond
)

// fetch runs in its own goroutine, fetching batches into queue until ctx
// ends or the source fails; then it closes queue, after reporting the error
// on errc. A full queue blocks it: back-pressure, never dropping.
func (r *Runner) fetch(ctx context.Context, queue chan<- []kafka.Message, errc chan<- error) {
	defer close(queue)
	send := func(batch []kafka.Message) bool {
		if len(batch) == 0 {
			return true
		}
		select {
		case queue <- batch:
			return true
		case <-ctx.Done():
			return false
		}
	}
	fail := func(batch []kafka.Message, err error) {
		if send(batch) && ctx.Err() == nil {
			errc <- fmt.Errorf("fetch: %w", err)
		}
	}
	for {
		msg, err := r.src.Fetch(ctx) // wait as long as it takes for the first
		if err != nil {
			fail(nil, err)
			return
		}
		batch := make([]kafka.Message, 1, batchMax)
		batch[0] = msg
		bctx, bcancel := context.WithTimeout(ctx, batchWait)
		for len(batch) < batchMax {
			msg, err := r.src.Fetch(bctx)
			if err != nil {
				if bctx.Err() != nil && ctx.Err() == nil {
					break // the batch's time is up
				}
				bcancel()
				fail(batch, err)
				return
			}
			batch = append(batch, msg)
		}
		bcancel()
		if !send(batch) {
			return
		}
	}
}

// process decodes one message (one or more lines) into the window stage.
func (r *Runner) process(ctx context.Context, msg kafka.Message) error {
	r.m.message(msg.Topic).Inc()
	r.messages.Add(1)
	k := partKey{msg.Topic, msg.Partition}
	wp := window.Partition{Topic: msg.Topic, ID: msg.Partition}
	r.ledger.consumed(k, msg.Offset)
	r.dec.DefaultTS = msg.Time.UnixMilli()
	rest := msg.Value
	for len(rest) > 0 {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		kind, err := r.dec.Decode(line)
		if err != nil {
			reason, _ := decode.ReasonOf(err)
			r.m.lines.WithLabelValues(reason.String()).Inc()
			if derr := r.dead.Send(ctx, msg, reason.String(), err.Error()); derr != nil {
				return fmt.Errorf("dead-letter offset %d of %s/%d: %w", msg.Offset, msg.Topic, msg.Partition, derr)
			}
			continue
		}
		var ts int64
		var v skew.Verdict
		switch kind {
		case decode.KindKeySample:
			ts = r.dec.Sample.TS
			r.pending, v = r.stage.Sample(&r.dec.Sample, r.pending)
		case decode.KindMetric:
			ts = r.dec.Metric.TS
			r.pending, v = r.stage.Metric(&r.dec.Metric, r.pending)
		default:
			r.m.outcomeSkipped.Inc()
			continue
		}
		switch {
		case v == skew.Late:
			r.m.outcomeLate.Inc()
			continue
		case v == skew.Replayed:
			// Written before a restart; holds no window, so its offset may
			// be committed.
			r.m.outcomeReplayed.Inc()
			continue
		case v != skew.Accepted:
			r.m.outcomeRejected.Inc()
			continue
		case kind == decode.KindKeySample:
			r.m.outcomeSample.Inc()
		default:
			r.m.outcomeMetric.Inc()
		}
		r.ledger.hold(k, r.stage.WindowStart(ts), msg.Offset)
		r.wms.Observe(wp, ts)
	}
	r.wms.Delivered(wp)
	r.advance()
	r.m.pending.Set(float64(len(r.pending)))
	return nil
}

// advance moves the watermark to the lowest event time over the active
// partitions, minus the stage's delay (see window.Watermarks). Only
// accepted events count: a late, replayed or rejected one holds no window.
func (r *Runner) advance() {
	r.pending = r.stage.Advance(r.pending)
}

// finalFlush is the flush when Run ends: it outlives ctx (the caller's
// cancellation is what ended Run) but not FinalFlushTimeout.
func (r *Runner) finalFlush(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.FinalFlushTimeout)
	defer cancel()
	return r.flush(ctx)
}

// flush writes pending findings, then commits every offset that no open
// window holds any more.
//
// The actor consumes nothing meanwhile, so no partition can deliver: the
// time in a flush (writing, retrying, committing across a broker restart)
// counts toward no partition's idleness.
func (r *Runner) flush(ctx context.Context) error {
	r.wms.Pause()
	defer r.wms.Resume()
	start := r.now()
	if len(r.pending) > 0 {
		write := func(ctx context.Context) error {
			return r.sink.Write(ctx, uint64(r.now().UnixNano()), r.pending)
		}
		if err := r.retry(ctx, fmt.Sprintf("write %d findings", len(r.pending)), write); err != nil {
			return err
		}
		r.lastWrite = r.now()
		r.written.Add(int64(len(r.pending)))
		for i := range r.pending {
			f := &r.pending[i]
			r.m.findings.WithLabelValues(f.Kind).Inc()
			if r.onFind != nil {
				r.onFind(f)
			}
		}
		clear(r.pending)
		r.pending = r.pending[:0]
		r.m.pending.Set(0)
	}
	// Windows before the watermark's window are closed and now written.
	wm := r.stage.Watermark()
	r.m.watermark.Set(float64(wm))
	closedUpTo := r.stage.WindowStart(wm)
	if wm == math.MinInt64 {
		closedUpTo = wm
	}
	// The engine's state changes only when windows close. Save it after
	// their findings and before the offsets they free are committed:
	// a restart then resumes from a state that matches the committed
	// offsets (see skew.Engine.Snapshot).
	if closedUpTo > r.savedUpTo {
		if r.state != nil {
			r.states = r.stage.Snapshot(r.states[:0])
			if len(r.states) > 0 {
				save := func(ctx context.Context) error {
					return r.state.SaveState(ctx, r.cfg.Group, uint64(r.now().UnixNano()), r.states)
				}
				if err := r.retry(ctx, fmt.Sprintf("save engine state of %d jobs", len(r.states)), save); err != nil {
					return err
				}
				r.m.stateSaves.Inc()
			}
		}
		if adv, ok := r.sink.(Advancer); ok {
			advance := func(ctx context.Context) error { return adv.Advance(ctx, time.UnixMilli(closedUpTo)) }
			if err := r.retry(ctx, "advance the sink's event time", advance); err != nil {
				return err
			}
		}
		r.savedUpTo = closedUpTo
	}
	r.ledger.release(closedUpTo)
	cps := r.ledger.pending()
	if len(cps) > 0 {
		msgs := make([]kafka.Message, len(cps))
		for i, cp := range cps {
			// kafka-go commits the offset after the message given.
			msgs[i] = kafka.Message{Topic: cp.topic, Partition: cp.partition, Offset: cp.next - 1}
		}
		if err := r.src.Commit(ctx, msgs...); err != nil {
			return fmt.Errorf("commit offsets: %w", err)
		}
		r.ledger.committed(cps)
		r.m.commits.Inc()
	}
	r.m.flush.Observe(r.now().Sub(start).Seconds())
	return nil
}

// fatal is implemented by sink errors that a retry cannot fix.
type fatal interface{ Fatal() bool }

// retry runs one write to the sink (findings or engine state), retrying
// errors that are not fatal with exponential backoff (100 ms doubling to
// 30 s) for as long as it takes: while it waits, nothing is consumed (the
// fetch queue fills and the fetcher blocks), so memory stays bounded and
// nothing is lost. A fatal error, ctx ending, or Stop ends the wait with an
// error; the offsets are then not committed and are read again after a
// restart. Each attempt writes a new version: a later write replaces.
func (r *Runner) retry(ctx context.Context, what string, fn func(context.Context) error) error {
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		var f fatal
		if errors.As(err, &f) && f.Fatal() {
			return fmt.Errorf("%s: %w", what, err)
		}
		r.m.writeRetries.Inc()
		if r.log != nil {
			r.log.Warn("writing to the sink failed; consumption paused, retrying", "what", what, "attempt", attempt, "in", wait, "err", err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (gave up: %v)", what, err, ctx.Err())
		case <-r.stop:
			return fmt.Errorf("%s: %w (gave up: stopping)", what, err)
		}
		wait = min(2*wait, 30*time.Second)
	}
}
