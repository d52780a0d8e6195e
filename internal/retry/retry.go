package retry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Unlimited as Policy.MaxRetries retries until the operation succeeds,
// fails permanently, or the context ends.
const Unlimited = -1

// Policy bounds the retries of one operation. Start from a preset
// (Pipeline, Setup, Request, Delivery).
type Policy struct {
	// MaxRetries is how often a retryable failure is retried after the
	// first attempt: 0 tries once, Unlimited (any negative value) retries
	// until the context ends.
	MaxRetries int
	// MinBackoff is the wait before the first retry; each next wait
	// doubles, up to MaxBackoff. Every wait is jittered to between half
	// and all of its step, so that clients that failed together do not
	// retry together.
	MinBackoff time.Duration
	MaxBackoff time.Duration
}

// OrDefault returns p with its zero fields taken from d, for a component
// Config whose zero fields mean their defaults. The zero Policy is d
// itself. In any other policy MaxRetries is kept as it is, since 0 there
// means "no retries": to never retry, set MaxRetries 0 in a policy that
// is not zero, e.g. a copy of d (a zero MinBackoff or MaxBackoff is then
// d's).
func (p Policy) OrDefault(d Policy) Policy {
	if p == (Policy{}) {
		return d
	}
	if p.MinBackoff == 0 {
		p.MinBackoff = d.MinBackoff
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = d.MaxBackoff
	}
	return p
}

// Validate reports a policy Do cannot follow. It does not fill in
// defaults: start from a preset.
func (p Policy) Validate() error {
	switch {
	case p.MinBackoff <= 0 || p.MaxBackoff <= 0:
		return fmt.Errorf("retry backoff %s..%s: must be positive", p.MinBackoff, p.MaxBackoff)
	case p.MinBackoff > p.MaxBackoff:
		return fmt.Errorf("retry backoff %s..%s: min exceeds max", p.MinBackoff, p.MaxBackoff)
	}
	return nil
}

// Notify is called by Do before each wait with the attempt that failed
// (from 1), the wait ahead and the attempt's error, to log or count the
// retry. It runs on Do's goroutine and must not block.
type Notify func(attempt int, wait time.Duration, err error)

// Do calls op until it returns nil, returns a permanent error, p's
// retries are used up, or ctx ends, waiting a jittered, exponentially
// growing backoff between attempts. notify may be nil.
//
// A permanent error is returned as it is. Otherwise the error wraps op's
// last error with the number of attempts, or with ctx's error when the
// context ended; IsPermanent and errors.Is see through both. op may keep
// state between attempts (the messages still to send, say).
func Do(ctx context.Context, p Policy, notify Notify, op func(context.Context) error) error {
	return DoWatched(ctx, p, Watch{Notify: notify}, op)
}

// Watch is what DoWatched reports of an operation's retries. The zero
// Watch reports nothing.
type Watch struct {
	// Notify is called before each wait, as Do's notify.
	Notify Notify
	// Log, when set, gets one INFO line "recovered" when the operation
	// succeeds after failed attempts: Op, the attempts (the success
	// included), how long it was failing (from the first failure to the
	// success) and the last error. It is the counterpart of the warnings
	// a Notify logs, so that a log that says a server failed also says
	// when it came back; it is written here, once, for every operation
	// retried with a Log.
	Log *slog.Logger
	// Op names the operation in that line ("write 12 findings").
	Op string
}

// DoWatched is Do with w's reports: Notify before each wait, and the
// "recovered" line on Log.
func DoWatched(ctx context.Context, p Policy, w Watch, op func(context.Context) error) error {
	b := Backoff{Policy: p}
	var failedAt time.Time // of the first failure
	var last error
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		switch {
		case err == nil:
			if attempt > 1 && w.Log != nil {
				w.Log.Info("recovered", "op", w.Op, "attempts", attempt,
					"failing_for", time.Since(failedAt).Round(time.Millisecond), "last_err", last)
			}
			return nil
		case IsPermanent(err):
			return err
		case ctx.Err() != nil:
			return fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case p.MaxRetries >= 0 && attempt > p.MaxRetries:
			return fmt.Errorf("giving up after %d attempts: %w", attempt, err)
		}
		if attempt == 1 {
			failedAt = time.Now()
		}
		last = err
		wait := b.Next()
		if w.Notify != nil {
			w.Notify(attempt, wait, err)
		}
		if werr := Sleep(ctx, wait); werr != nil {
			return fmt.Errorf("%w (gave up: %w)", err, werr)
		}
	}
}

// Backoff yields the waits of Policy, the ones Do takes; it is exported
// so that a component can show (and test) the waits of its policy, not
// for loops of its own: Do is the one retry loop. It is not safe for
// concurrent use.
//
// It is written here rather than taken from github.com/cenkalti/backoff/v5:
// all it needs is a doubling step, a cap and a jitter (a dozen lines),
// while backoff/v5's Retry brings its own permanent-error type,
// elapsed-time limit and notify signature, which would have to be mapped
// onto Policy and PermanentError at every call.
type Backoff struct {
	Policy Policy
	next   time.Duration
}

// Next returns the wait before the next retry and doubles the step.
func (b *Backoff) Next() time.Duration {
	if b.next <= 0 {
		b.next = b.Policy.MinBackoff
	}
	step := b.next
	b.next = min(2*b.next, b.Policy.MaxBackoff)
	return jitter(step)
}

// Reset starts the waits again from MinBackoff, after a success.
func (b *Backoff) Reset() { b.next = 0 }

// Sleep waits d, or until ctx ends and then returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
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

// PermanentError marks an error that no retry can fix: bad data, a schema
// or configuration mismatch, a refused authorization, a closed component.
// Create it with Permanent and test for it with IsPermanent.
type PermanentError struct {
	// Op says what failed, e.g. "insert hot_keys" or "publish 3 changes".
	Op  string
	Err error
}

// Error reads "op: fatal: err". The word in code and prose is
// "permanent"; error texts and metric label values keep "fatal", which
// log searches, dashboards and alert rules match.
func (e *PermanentError) Error() string {
	if e.Op == "" {
		return "fatal: " + e.Err.Error()
	}
	return e.Op + ": fatal: " + e.Err.Error()
}

// Unwrap returns the underlying error.
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent marks err, which op caused, as one no retry can fix. It
// returns nil for a nil err and err itself when it is already permanent.
func Permanent(op string, err error) error {
	if err == nil || IsPermanent(err) {
		return err
	}
	return &PermanentError{Op: op, Err: err}
}

// IsPermanent reports whether err, or an error it wraps, is permanent.
func IsPermanent(err error) bool {
	var pe *PermanentError
	return errors.As(err, &pe)
}
