package alertdeliver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/skew/alert"
)

// FanoutConfig configures a Fanout. Its tags declare each setting once
// (internal/knob); NewFanout also reads a zero field as its default.
type FanoutConfig struct {
	// QueueCapacity bounds the alerts waiting for one notifier. Overflow
	// policy: the oldest waiting alert is dropped
	// (skewlens_alert_queue_dropped_total{reason="overflow"}); a newer
	// state of an alert already waiting replaces it and takes no room.
	QueueCapacity int `kong:"-" default:"1024" range:"[1,]"`
	// MaxBatch is the most alerts one Notify call carries.
	MaxBatch int `kong:"-" default:"100" range:"[1,]"`
	// NotifyTimeout bounds one Notify call (one attempt: notifiers do not
	// retry).
	NotifyTimeout time.Duration `kong:"-" default:"30s" range:"(0s,]"`
	// Retry is how a failed Notify call is retried (retry.Do: exponential,
	// jittered backoff). The failed alerts stay queued between attempts,
	// so an outage of a notifier loses nothing but what overflows; once
	// Retry.MaxRetries retries of a batch have failed, its alerts are
	// dropped (reason="retries"). Default retry.Delivery() (until delivered
	// or Stop's drain ends). A zero Policy means the default; in any
	// other, MaxRetries is taken as it is (0: one attempt) and a zero
	// backoff field is its default.
	Retry retry.Policy `kong:"-" default:"delivery"`
	// DrainTimeout is how long Stop lets the queues drain.
	DrainTimeout time.Duration `kong:"-" default:"5s" range:"(0s,]"`
}

// DefaultFanoutConfig returns the defaults the tags declare, and the
// default retry policy. Callers start from it and override what they
// configure.
func DefaultFanoutConfig() FanoutConfig { return knob.Defaults[FanoutConfig]() }

// withDefaults returns c with every zero field set to its default (Retry
// as retry.Policy.OrDefault says). NewFanout applies it, so a zero field
// means its default.
func (c FanoutConfig) withDefaults() FanoutConfig {
	knob.FillZero(&c)
	c.Retry = c.Retry.OrDefault(DefaultFanoutConfig().Retry)
	return c
}

// Validate reports every invalid field. It changes nothing: zero fields
// are invalid here, NewFanout fills them in first.
func (c FanoutConfig) Validate() error {
	errs := []error{knob.Check(c)}
	if err := c.Retry.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("alert fanout config: %w", err)
	}
	return nil
}

// Fanout delivers alerts to several notifiers, each from its own bounded
// queue and goroutine. Send never blocks on a notifier. A Fanout is safe
// for concurrent use.
type Fanout struct {
	cfg     FanoutConfig
	log     *slog.Logger
	m       *fanoutMetrics
	workers []*worker

	stopOnce sync.Once
	stopping chan struct{}      // closed by Stop: drain, then exit
	ctx      context.Context    // cancelled DrainTimeout after Stop
	cancel   context.CancelFunc //
	wg       sync.WaitGroup
}

// worker is one notifier's queue and goroutine.
type worker struct {
	name   string
	n      Notifier
	mu     sync.Mutex
	q      *queue
	wake   chan struct{} // capacity 1: "the queue has something"
	closed bool          // no more Sends (Stop)
}

// NewFanout starts one delivery goroutine per target. It takes ownership
// of the notifiers: Stop closes those that implement io.Closer.
func NewFanout(cfg FanoutConfig, targets []Target, log *slog.Logger, reg prometheus.Registerer) (*Fanout, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	seen := make(map[string]bool, len(targets))
	for _, t := range targets {
		if t.Name == "" || t.Notifier == nil {
			return nil, fmt.Errorf("alert fanout: target %q: needs a name and a notifier", t.Name)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("alert fanout: target %q: duplicate name", t.Name)
		}
		seen[t.Name] = true
	}
	m, err := newFanoutMetrics(reg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &Fanout{cfg: cfg, log: log, m: m, stopping: make(chan struct{}), ctx: ctx, cancel: cancel}
	for _, t := range targets {
		w := &worker{name: t.Name, n: t.Notifier, q: newQueue(cfg.QueueCapacity), wake: make(chan struct{}, 1)}
		m.init(t.Name)
		f.workers = append(f.workers, w)
	}
	for _, w := range f.workers {
		f.wg.Add(1)
		go f.run(w)
	}
	return f, nil
}

// Send queues alerts for every notifier and returns at once. After Stop,
// alerts are dropped (reason "stopped").
func (f *Fanout) Send(alerts []alert.Alert) {
	if len(alerts) == 0 {
		return
	}
	for _, w := range f.workers {
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			f.m.dropped.WithLabelValues(w.name, "stopped").Add(float64(len(alerts)))
			continue
		}
		dropped := 0
		for _, a := range alerts {
			dropped += w.q.push(a)
		}
		n := w.q.len()
		w.mu.Unlock()
		f.m.queued.WithLabelValues(w.name).Set(float64(n))
		if dropped > 0 {
			f.m.dropped.WithLabelValues(w.name, "overflow").Add(float64(dropped))
			f.log.Warn("alert queue full; dropped the oldest alerts", "notifier", w.name, "dropped", dropped)
		}
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// QueueLen returns the number of alerts waiting for the named notifier.
func (f *Fanout) QueueLen(name string) int {
	for _, w := range f.workers {
		if w.name == name {
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.q.len()
		}
	}
	return 0
}

// Stop stops accepting alerts, lets the queues drain for DrainTimeout,
// drops what is left, and closes the notifiers. It blocks until the
// delivery goroutines have exited and is safe to call more than once.
func (f *Fanout) Stop() {
	f.stopOnce.Do(func() {
		for _, w := range f.workers {
			w.mu.Lock()
			w.closed = true
			w.mu.Unlock()
		}
		close(f.stopping)
		t := time.AfterFunc(f.cfg.DrainTimeout, f.cancel)
		f.wg.Wait()
		t.Stop()
		f.cancel()
		for _, w := range f.workers {
			if c, ok := w.n.(io.Closer); ok {
				if err := c.Close(); err != nil {
					f.log.Warn("closing alert notifier", "notifier", w.name, "err", err)
				}
			}
		}
	})
}

// run delivers one notifier's queue until Stop. It is the one layer that
// retries a delivery: before each wait of retry.Do the failed batch goes
// back to the front of the queue, and the next attempt takes the queue
// again, with whatever arrived meanwhile. A batch whose retries are used
// up (Retry.MaxRetries) is not put back but dropped.
func (f *Fanout) run(w *worker) {
	defer f.wg.Done()
	for {
		w.mu.Lock()
		empty := w.q.len() == 0
		w.mu.Unlock()
		if empty {
			select {
			case <-w.wake:
				continue
			case <-f.stopping:
				// Stop closed the queue before closing stopping, so
				// an empty queue now stays empty.
				w.mu.Lock()
				empty := w.q.len() == 0
				w.mu.Unlock()
				if empty {
					return
				}
				continue
			}
		}
		var batch []alert.Alert
		requeued := false // whether batch is back in the queue
		err := retry.Do(f.ctx, f.cfg.Retry, func(_ int, wait time.Duration, err error) {
			// A retry follows: the batch waits for it in the queue.
			w.mu.Lock()
			dropped := w.q.requeue(batch)
			w.mu.Unlock()
			requeued = true
			if dropped > 0 {
				f.m.dropped.WithLabelValues(w.name, "overflow").Add(float64(dropped))
			}
			f.m.retries.WithLabelValues(w.name).Inc()
			f.log.Warn("alert notifier failed; will retry", "notifier", w.name, "alerts", len(batch), "in", wait, "err", err)
		}, func(ctx context.Context) error {
			w.mu.Lock()
			batch = w.q.take(f.cfg.MaxBatch)
			n := w.q.len()
			w.mu.Unlock()
			requeued = false
			f.m.queued.WithLabelValues(w.name).Set(float64(n))
			if len(batch) == 0 {
				return nil
			}
			return f.deliver(ctx, w, batch)
		})
		switch {
		case err == nil:
		case retry.IsPermanent(err):
			f.m.dropped.WithLabelValues(w.name, "fatal").Add(float64(len(batch)))
			f.log.Error("alert notifier refused alerts; dropped", "notifier", w.name, "alerts", len(batch), "err", err)
		case f.ctx.Err() == nil: // the batch's retries are used up
			f.m.dropped.WithLabelValues(w.name, "retries").Add(float64(len(batch)))
			f.log.Error("alert notifier kept failing; dropped alerts", "notifier", w.name, "alerts", len(batch), "err", err)
		default: // f.ctx ended: draining is over
			w.mu.Lock()
			left := w.q.clear()
			w.mu.Unlock()
			if !requeued {
				left += len(batch)
			}
			f.m.queued.WithLabelValues(w.name).Set(0)
			f.m.dropped.WithLabelValues(w.name, "stopped").Add(float64(left))
			f.log.Warn("alert notifier: stopped with undelivered alerts", "notifier", w.name, "dropped", left, "err", err)
			return
		}
	}
}

// deliver makes one Notify call and counts its outcome.
func (f *Fanout) deliver(ctx context.Context, w *worker, batch []alert.Alert) error {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.NotifyTimeout)
	defer cancel()
	start := time.Now()
	err := w.n.Notify(ctx, batch)
	f.m.latency.WithLabelValues(w.name).Observe(time.Since(start).Seconds())
	if err != nil {
		f.m.notifications.WithLabelValues(w.name, "failed").Add(float64(len(batch)))
		return err
	}
	f.m.notifications.WithLabelValues(w.name, "sent").Add(float64(len(batch)))
	return nil
}
