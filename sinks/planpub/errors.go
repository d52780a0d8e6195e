package planpub

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/retry"
)

// ErrClosed is returned (marked retry.Permanent) by calls on a closed
// Publisher.
var ErrClosed = errors.New("planpub: publisher is closed")

// permanent marks err, which op caused, as one no retry can fix, in this
// package's words ("planpub: op: fatal: err").
func permanent(op string, err error) error { return retry.Permanent("planpub: "+op, err) }

// errorClass names how an error is handled; it is also the metric label,
// whose value for a permanent error is "fatal", the word dashboards match.
type errorClass string

const (
	classRetryable errorClass = "retryable"
	classPermanent errorClass = "fatal"
	classCanceled  errorClass = "canceled"
)

// classify returns the metric label of a failed attempt: canceled once
// ctx is done, else what kafkaclient.Retryable says (unknown errors are
// retryable, bounded by Config.Retry).
func classify(ctx context.Context, err error) errorClass {
	switch {
	case ctx.Err() != nil:
		return classCanceled
	case kafkaclient.Retryable(err):
		return classRetryable
	}
	return classPermanent
}

// failed counts a failed attempt of op by class and returns its error:
// marked permanent when no retry can fix it, else wrapped with op.
func (p *Publisher) failed(ctx context.Context, op string, err error) error {
	class := classify(ctx, err)
	p.m.failures.WithLabelValues(string(class)).Inc()
	if class == classPermanent {
		return permanent(op, err)
	}
	return fmt.Errorf("planpub: %s: %w", op, err)
}

// retry runs fn with retry.Do as Config says, counting each failed
// attempt by class and each retry. It serves the operations the
// Publisher is the only caller of, at start-up: EnsureTopic and Load.
// Errors no retry can fix are returned marked permanent.
func (p *Publisher) retry(ctx context.Context, op string, fn func(context.Context) error) error {
	err := retry.Do(ctx, p.cfg.Retry, func(attempt int, wait time.Duration, err error) {
		p.log.Warn("planpub: retrying", "op", op, "attempt", attempt, "wait", wait, "err", err)
		p.m.retries.Inc()
	}, func(ctx context.Context) error {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if class := classify(ctx, err); class != classPermanent {
			p.m.failures.WithLabelValues(string(class)).Inc()
			return err
		}
		return p.failed(ctx, op, err)
	})
	if err == nil || retry.IsPermanent(err) {
		return err
	}
	return fmt.Errorf("planpub: %s: %w", op, err)
}
