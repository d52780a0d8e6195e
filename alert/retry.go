package alert

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// RetryPolicy bounds the retries of one delivery. The zero value of every
// field means its default, given in the field's comment; Validate fills
// them in.
type RetryPolicy struct {
	// MaxRetries is how often a retryable failure is retried. Default 5;
	// a negative value disables retries.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the exponential backoff between
	// attempts: the first wait is MinBackoff, each next one doubles, up to
	// MaxBackoff, and each is jittered between half and all of its step.
	// Defaults 100ms and 5s.
	MinBackoff time.Duration
	MaxBackoff time.Duration
}

// Retry policy defaults.
const (
	DefaultMaxRetries = 5
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = 5 * time.Second
)

// Validate fills in the defaults of p and checks it.
func (p *RetryPolicy) Validate() error {
	if p.MaxRetries == 0 {
		p.MaxRetries = DefaultMaxRetries
	}
	if p.MinBackoff == 0 {
		p.MinBackoff = DefaultMinBackoff
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = DefaultMaxBackoff
	}
	if p.MinBackoff < 0 || p.MaxBackoff < 0 {
		return fmt.Errorf("backoff %s..%s: must be positive", p.MinBackoff, p.MaxBackoff)
	}
	if p.MinBackoff > p.MaxBackoff {
		return fmt.Errorf("backoff %s..%s: min exceeds max", p.MinBackoff, p.MaxBackoff)
	}
	return nil
}

// Retry calls fn until it succeeds, returns a fatal error (IsFatal), ctx
// ends, or p.MaxRetries retries are used up, waiting an exponential,
// jittered backoff between attempts. onRetry, when not nil, is called
// before each wait. The error returned is fn's last one, wrapped with the
// attempt count or the context's error; IsFatal still sees through it.
func Retry(ctx context.Context, p RetryPolicy, onRetry func(attempt int, wait time.Duration, err error), fn func(context.Context) error) error {
	backoff := p.MinBackoff
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if IsFatal(err) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		}
		if p.MaxRetries < 0 || attempt > p.MaxRetries {
			return fmt.Errorf("giving up after %d attempts: %w", attempt, err)
		}
		wait := jitter(backoff)
		if onRetry != nil {
			onRetry(attempt, wait, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up: %w)", err, ctx.Err())
		case <-t.C:
		}
		backoff = min(backoff*2, p.MaxBackoff)
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
