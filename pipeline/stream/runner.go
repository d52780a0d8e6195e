package stream

import (
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

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/pipeline/decode"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// Source yields Kafka messages and commits them. Fetch blocks until a
// message arrives or ctx is done; Commit commits each partition up to and
// including the offset of the message given for it.
type Source interface {
	Fetch(ctx context.Context) (Message, error)
	Commit(ctx context.Context, msgs ...Message) error
}

// Sink stores findings: the store's role (the ClickHouse Writer), where
// the Observers' role is to see findings once they are stored (see
// SinkChain). Write returns nil only once every finding is durably
// stored; version orders rewrites of the same rows after a replay.
type Sink interface {
	Write(ctx context.Context, version uint64, fs []skew.Finding) error
}

// DeadLetters keeps records that cannot be decoded, with the reason.
// Send returns once the record is stored.
type DeadLetters interface {
	Send(ctx context.Context, msg Message, reason, detail string) error
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

// Runner is the pipeline actor. Run it once; Stop is safe to call any
// number of times, from any goroutine.
type Runner struct {
	cfg    Config
	src    Source
	sink   Sink
	state  StateStore // nil: the engine's state is not saved
	dead   DeadLetters
	feeder *window.Feeder
	log    *slog.Logger
	m      *metrics
	now    func() time.Time

	dec    *decode.Decoder
	ledger *ledger
	// wms holds each partition's highest event time and when it last
	// delivered: the feeder's watermark comes from it.
	wms     *window.Watermarks
	pending []skew.Finding
	onFind  func(*skew.Finding)
	// savedUpTo is the watermark window whose engine state was last
	// handed to the writer.
	savedUpTo int64
	lastWrite time.Time // when pending findings were last handed to the writer
	// readFailures is the source's count of read failures as last seen
	// (see ReadFailures).
	readFailures uint64
	stall        stallWatch

	// The writer goroutine (writer.go) and what the actor knows of it:
	// jobs waiting for it (one at most: the writer is one job behind), a
	// result per job done, the jobs handed and not reported done, the
	// findings handed to it in all, and its context, which outlives Run's
	// but not the drain (see Config.DrainTimeout).
	jobs       chan *flushJob
	jobsClosed bool
	results    chan error
	inflight   int
	handed     int64
	wctx       context.Context
	wcancel    context.CancelCauseFunc

	// The consumer group (with a GroupSource, else events is nil): its
	// assignments and revocations, the generation being processed, and
	// whether it was revoked (fenced: nothing of it is written any more);
	// gctx is the writer's context for the generation's jobs, cancelled
	// (with ErrGenerationEnded) when it is fenced.
	events   <-chan Rebalance
	gen      int64
	fenced   bool
	assigned bool
	gctx     context.Context
	gcancel  context.CancelCauseFunc
	runCtx   context.Context // Run's, for the loads of an assignment met in flush

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

// New returns a Runner that feeds feeder, which must be partitioned
// (window.NewPartitioned): the runner marks each message's event times on
// its Watermarks by partition. Offsets are held by the feeder's windows, so
// the window length comes from there. state may be nil: then a restarted
// runner starts the engine's cross-window history afresh. A nil log
// discards.
func New(cfg Config, src Source, feeder *window.Feeder, sink Sink, state StateStore, dead DeadLetters, log *slog.Logger, reg prometheus.Registerer) (*Runner, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !feeder.Partitioned() {
		return nil, errors.New("stream: the window feeder must be partitioned (window.NewPartitioned)")
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{
		cfg: cfg, src: src, sink: sink, state: state, dead: dead, feeder: feeder, log: log,
		m: m, now: time.Now, dec: decode.NewDecoder(decode.FormatAuto), ledger: newLedger(),
		wms:       feeder.Watermarks(),
		stop:      make(chan struct{}),
		savedUpTo: math.MinInt64,
		stall:     stallWatch{after: stallWindows * time.Duration(feeder.WindowMs()) * time.Millisecond},
	}, nil
}

// OnFinding sets a callback that sees each finding once it is written (for
// the terminal view). Call before Run.
func (r *Runner) OnFinding(f func(*skew.Finding)) { r.onFind = f }

// Stop asks Run to finish: it drains (writes the findings of the windows
// that closed, saves the engine state, commits what is safe; bounded by
// Config.DrainTimeout) and returns. Open windows are not written: their
// messages are not committed, so they are read again and completed after
// a restart. Stop does not wait for Run.
func (r *Runner) Stop() { r.stopOnce.Do(func() { close(r.stop) }) }

// Run consumes until ctx is done, Stop is called, the source ends with
// io.EOF, or a permanent error occurs. A fetch error is returned only after
// every message fetched before it has been processed.
//
// When ctx ends or Stop is called, Run drains: what is due is written and
// committed on a context of its own, which the caller's cancellation does
// not end but Config.DrainTimeout does. Run returns nil once the drain is
// done, or an error (after logging how many findings were not written:
// their offsets are not committed, so a restart reads them again).
func (r *Runner) Run(ctx context.Context) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Stop ends ctx at once, whatever the actor is doing (it may be
	// waiting to hand the writer a job while the sink is away): the
	// fetcher stops, and the drain's time starts.
	go func() {
		select {
		case <-r.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
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
	if gs, ok := r.src.(GroupSource); ok {
		r.events = gs.Rebalances() // before the first Fetch: see GroupSource
	}
	queue := make(chan []Message, max(1, r.cfg.QueueCapacity/batchMax))
	// spare holds processed batches for the fetcher to fill again; when
	// it is full, a batch is left to the collector.
	spare := make(chan []Message, cap(queue)+1)
	fetchErr := make(chan error, 1)
	go r.fetch(ctx, queue, spare, fetchErr)
	// Writes, state saves and commits run on the writer goroutine, so that
	// decoding and windowing go on while ClickHouse takes an insert. Its
	// context outlives ctx, for the drain, which ends it DrainTimeout
	// after ctx ended.
	r.wctx, r.wcancel = context.WithCancelCause(context.WithoutCancel(ctx))
	r.gctx, r.gcancel = context.WithCancelCause(r.wctx)
	r.runCtx = ctx
	var drainTimer atomic.Pointer[time.Timer]
	unwatch := context.AfterFunc(ctx, func() {
		drainTimer.Store(time.AfterFunc(r.cfg.DrainTimeout, func() {
			r.wcancel(fmt.Errorf("drain timeout %s passed", r.cfg.DrainTimeout))
		}))
	})
	// Runs last: by then the writer has finished, so the counts are final.
	defer func() {
		if n := r.handed - r.written.Load() + int64(len(r.pending)); err != nil && n > 0 {
			r.log.Error("findings not written; their offsets are not committed, so a restart reads them again",
				"findings", n, "err", err)
		}
	}()
	// results holds every result the actor may not have taken yet: it
	// takes those there are before each hand-off; then at most two jobs
	// are unreported (one being done, one waiting), and the one handed
	// makes three, so the writer never blocks on results.
	r.jobs, r.results = make(chan *flushJob, 1), make(chan error, 3)
	finished := make(chan struct{})
	go r.writer(r.wctx, finished)
	defer func() {
		r.closeJobs()
		r.wcancel(errors.New("runner returned"))
		<-finished
		unwatch()
		if t := drainTimer.Load(); t != nil {
			t.Stop()
		}
	}()
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
						return r.finalFlush()
					}
					return err
				default:
					return r.finalFlush()
				}
			}
			if ctx.Err() != nil {
				// Stopping: the batch is not processed, so its offsets are
				// not committed and a restart reads it again.
				return r.finalFlush()
			}
			r.m.queue.Set(float64(len(queue) * batchMax))
			for _, msg := range batch {
				if ok, err := r.accept(ctx, &msg); err != nil {
					if ctx.Err() != nil {
						return r.finalFlush()
					}
					return err
				} else if !ok {
					continue
				}
				if err := r.process(ctx, msg); err != nil {
					if ctx.Err() != nil {
						return r.finalFlush() // process holds the message's offset back
					}
					return err
				}
			}
			clear(batch) // holds no message's bytes while it waits
			select {
			case spare <- batch[:0]:
			default:
			}
			// Findings appear when the watermark closes windows. Write them
			// now if the last write is at least a flush interval old, so a
			// window's findings are not held back by the ticker; otherwise
			// the ticker writes them. Writing on every close would stall the
			// actor on the sink's pacing (one insert per second per table).
			if len(r.pending) >= r.cfg.MaxPending ||
				len(r.pending) > 0 && r.now().Sub(r.lastWrite) >= r.cfg.FlushInterval {
				if err := r.flush(); err != nil {
					return err
				}
			}
		case err := <-r.results:
			if err := r.done(err); err != nil {
				return err
			}
		case ev := <-r.events:
			if err := r.rebalance(ctx, ev); err != nil {
				if ctx.Err() != nil {
					return r.finalFlush()
				}
				return err
			}
		case <-tick.C:
			r.advance() // partitions that went idle stop holding it back
			r.quiet()   // with all of them idle, jobs still end
			r.m.stopped.written(nil, time.Now())
			if err := r.flush(); err != nil {
				return err
			}
		case <-ctx.Done(): // the caller's cancellation, or Stop
			return r.finalFlush()
		}
	}
}

// closeJobs tells the writer that no job follows.
func (r *Runner) closeJobs() {
	if !r.jobsClosed {
		r.jobsClosed = true
		close(r.jobs)
	}
}

// retry runs one write to the sink (findings or engine state) with
// retry.Do, retrying errors that are not permanent (retry.IsPermanent)
// with jittered exponential backoff (Config.Retry)
// for as long as it takes: while it waits, nothing is consumed (the fetch
// queue fills and the fetcher blocks), so memory stays bounded and nothing
// is lost. The runner is the one layer that retries a write: the sink
// makes one attempt and classifies. Stopping does not end the retries:
// the drain goes on retrying what is due until ctx (the writer's) ends,
// DrainTimeout after the stop. A permanent error or ctx ending ends them
// with an error; the offsets are then not committed and are read again
// after a restart. Each attempt writes a new version: a later write
// replaces. A write that succeeds after failures logs "recovered"
// (retry.Watch).
func (r *Runner) retry(ctx context.Context, what string, fn func(context.Context) error) error {
	err := retry.DoWatched(ctx, r.cfg.Retry, retry.Watch{Log: r.log, Op: what, Notify: func(attempt int, wait time.Duration, err error) {
		r.m.writeRetries.Inc()
		r.log.Warn("writing to the sink failed; consumption paused, retrying", "what", what, "attempt", attempt, "in", wait, "err", err)
	}}, fn)
	switch {
	case err == nil:
		return nil
	case !retry.IsPermanent(err) && ctx.Err() != nil:
		return fmt.Errorf("%s: %w (%w)", what, err, context.Cause(ctx))
	}
	return fmt.Errorf("%s: %w", what, err)
}
