package planpub

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skewlens/skewlens/pipeline/kafkaclient"
	"github.com/skewlens/skewlens/pipeline/retry"
)

// ErrClosed is returned (marked retry.Permanent) by calls on a closed
// Publisher.
var ErrClosed = errors.New("planpub: publisher is closed")

// fatal marks err, which op caused, as one no retry can fix, in this
// package's words ("planpub: op: fatal: err").
func fatal(op string, err error) error { return retry.Permanent("planpub: "+op, err) }

// errorClass names how an error is handled; it is also the metric label.
type errorClass string

const (
	classRetryable errorClass = "retryable"
	classFatal     errorClass = "fatal"
	classCanceled  errorClass = "canceled"
)

// classify returns the metric label of a failed attempt: canceled once
// ctx is done, else what kafkaclient.Retryable says (unknown errors are
// retryable, bounded by MaxRetries).
func classify(ctx context.Context, err error) errorClass {
	switch {
	case ctx.Err() != nil:
		return classCanceled
	case kafkaclient.Retryable(err):
		return classRetryable
	}
	return classFatal
}

// policy is the retry policy of Config: a negative MaxRetries means no
// retries here, where retry.Policy would read it as unlimited.
func (p *Publisher) policy() retry.Policy {
	return retry.Policy{MaxRetries: max(p.cfg.MaxRetries, 0), MinBackoff: p.cfg.MinBackoff, MaxBackoff: p.cfg.MaxBackoff}
}

// retry runs fn with retry.Do as Config says, counting each failed
// attempt by class and each retry. The Publisher is its own caller (the
// plans actor calls Publish once per batch of changes), so this is the
// one place its operations are retried. fn may keep state between
// attempts (Publish keeps the messages still to send). Errors no retry
// can fix are returned marked permanent.
func (p *Publisher) retry(ctx context.Context, op string, fn func(context.Context) error) error {
	err := retry.Do(ctx, p.policy(), func(attempt int, wait time.Duration, err error) {
		p.log.Warn("planpub: retrying", "op", op, "attempt", attempt, "wait", wait, "err", err)
		p.m.retries.Inc()
	}, func(ctx context.Context) error {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		class := classify(ctx, err)
		p.m.failures.WithLabelValues(string(class)).Inc()
		if class == classFatal {
			return fatal(op, err)
		}
		return err
	})
	if err == nil || retry.IsPermanent(err) {
		return err
	}
	return fmt.Errorf("planpub: %s: %w", op, err)
}
