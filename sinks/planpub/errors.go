package planpub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/segmentio/kafka-go"
)

// ErrClosed is returned (inside a *FatalError) by calls on a closed
// Publisher.
var ErrClosed = errors.New("planpub: publisher is closed")

// FatalError is an error that retrying cannot fix: a change that cannot
// be published, a plans topic that is not compacted, an authorization or
// configuration error, a closed Publisher. Test for it with errors.As, or
// for any error with a Fatal() bool method.
type FatalError struct {
	// Op says what failed, e.g. "publish 3 changes" or "ensure topic".
	Op  string
	Err error
}

func (e *FatalError) Error() string { return fmt.Sprintf("planpub: %s: fatal: %v", e.Op, e.Err) }

// Unwrap returns the underlying error.
func (e *FatalError) Unwrap() error { return e.Err }

// Fatal reports that a retry cannot fix the error.
func (e *FatalError) Fatal() bool { return true }

// errorClass names how an error is handled; it is also the metric label.
type errorClass string

const (
	classRetryable errorClass = "retryable"
	classFatal     errorClass = "fatal"
	classCanceled  errorClass = "canceled"
)

// classify says whether err is worth retrying. Once ctx is done nothing
// is. Kafka error codes are retryable when kafka-go calls them temporary
// (unknown topic or partition while a new topic propagates, leader moves,
// timeouts, not enough replicas) and fatal otherwise (authorization,
// invalid topic or configuration, a message too large). Everything else
// (EOF on a connection a broker restart broke, refused connections,
// network timeouts, unknown errors) is retried, bounded by MaxRetries:
// a transient error wrongly called fatal would stop the pipeline, a fatal
// one wrongly retried only costs the retries.
func classify(ctx context.Context, err error) errorClass {
	if ctx.Err() != nil {
		return classCanceled
	}
	var fe interface{ Fatal() bool }
	if errors.As(err, &fe) && fe.Fatal() {
		return classFatal
	}
	var werrs kafka.WriteErrors
	if errors.As(err, &werrs) {
		for _, e := range werrs {
			if e != nil && classify(ctx, e) == classFatal {
				return classFatal
			}
		}
		return classRetryable
	}
	var kerr kafka.Error
	if errors.As(err, &kerr) {
		if kerr.Temporary() {
			return classRetryable
		}
		return classFatal
	}
	var tooLarge kafka.MessageTooLargeError
	if errors.As(err, &tooLarge) || errors.Is(err, io.ErrClosedPipe) {
		return classFatal
	}
	return classRetryable
}

// retry runs fn until it succeeds, fails fatally, ctx ends or MaxRetries
// retries are used up, waiting a jittered, exponentially growing backoff
// between attempts. fn may keep state between attempts (Publish keeps
// the messages still to send).
func (p *Publisher) retry(ctx context.Context, op string, fn func(context.Context) error) error {
	backoff := p.cfg.MinBackoff
	for attempt := 0; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		class := classify(ctx, err)
		p.m.failures.WithLabelValues(string(class)).Inc()
		switch class {
		case classCanceled:
			return fmt.Errorf("planpub: %s: %w (last error: %v)", op, ctx.Err(), err)
		case classFatal:
			var fe *FatalError
			if errors.As(err, &fe) {
				return err
			}
			return &FatalError{Op: op, Err: err}
		}
		if p.cfg.MaxRetries < 0 || attempt >= p.cfg.MaxRetries {
			return fmt.Errorf("planpub: %s: giving up after %d attempts: %w", op, attempt+1, err)
		}
		wait := jitter(backoff)
		p.log.Warn("planpub: retrying", "op", op, "attempt", attempt+1, "wait", wait, "err", err)
		p.m.retries.Inc()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("planpub: %s: %w (last error: %v)", op, ctx.Err(), err)
		case <-t.C:
		}
		backoff = min(backoff*2, p.cfg.MaxBackoff)
	}
}

// jitter returns a duration between d/2 and d.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}
