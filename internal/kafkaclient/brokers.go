package kafkaclient

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/retry"
)

// BrokersUnreachableError is WaitBrokers' error when no broker answered
// before its context ended: it says what was tried (the addresses, for
// how long, how often) and what to check, in words, since kafka-go's
// own error for a broker that cannot be reached ("[8] Broker Not
// Available: not a client facing error ...") says neither.
type BrokersUnreachableError struct {
	// Brokers are the bootstrap addresses tried.
	Brokers []string
	// Waited is how long WaitBrokers tried; Attempts how often.
	Waited   time.Duration
	Attempts int
	// Err is the last attempt's error.
	Err error
	// ctxErr is why the waiting ended (context.DeadlineExceeded).
	ctxErr error
}

func (e *BrokersUnreachableError) Error() string {
	return fmt.Sprintf("no Kafka broker answered at %s in %s (%d attempts; last: %s): check that the brokers run, "+
		"that these are their addresses, reachable from this host (firewall, DNS), and that the addresses the "+
		"brokers advertise (advertised.listeners) are reachable too", strings.Join(e.Brokers, ", "), e.Waited.Round(100*time.Millisecond), e.Attempts, describe(e.Err))
}

// Unwrap returns the last attempt's error and why the waiting ended, for
// errors.Is and errors.As.
func (e *BrokersUnreachableError) Unwrap() []error { return []error{e.Err, e.ctxErr} }

// describe words err for a person: kafka-go reports an address it cannot
// connect to as BrokerNotAvailable, whose text blames nothing in
// particular.
func describe(err error) string {
	if errors.Is(err, kafka.BrokerNotAvailable) {
		return "could not connect to any of them (Kafka error 8, broker not available)"
	}
	return err.Error()
}

// WaitBrokers waits until one of c.Brokers answers a metadata request
// that names at least one broker of the cluster, for a process that
// starts before its brokers (a reboot, a compose file, a systemd unit
// ordered loosely). It retries as c.Retry says and, before each wait,
// logs "waiting for Kafka brokers" with the attempt and the next wait
// to c.Log (when set), so a slow start is visible. It blocks until a
// broker answers, a permanent error (an authorization failure, say), or
// ctx's end; the caller bounds the wait with ctx. When ctx ends first
// the error is a *BrokersUnreachableError that wraps the last
// attempt's error and ctx's.
func WaitBrokers(ctx context.Context, c AdminConfig) error {
	if len(c.Brokers) == 0 {
		return retry.Permanent("wait for brokers", errors.New("no brokers"))
	}
	for _, b := range c.Brokers {
		if err := CheckBroker(b); err != nil {
			return retry.Permanent("wait for brokers", fmt.Errorf("broker %w", err))
		}
	}
	cl, policy, done := c.client()
	defer done()
	start := time.Now()
	attempts := 0
	var last error
	notify := func(attempt int, wait time.Duration, err error) {
		if c.Log != nil {
			c.Log.Warn("waiting for Kafka brokers", "brokers", c.Brokers, "attempt", attempt, "next_in", wait.Round(time.Millisecond), "err", describe(err))
		}
	}
	err := retry.Do(ctx, policy, notify, func(ctx context.Context) error {
		attempts++
		last = brokersAnswer(ctx, cl)
		return last
	})
	switch {
	case err == nil:
		if attempts > 1 && c.Log != nil {
			c.Log.Info("Kafka brokers answer", "brokers", c.Brokers, "attempts", attempts, "after", time.Since(start).Round(time.Millisecond))
		}
		return nil
	case retry.IsPermanent(err) || !errors.Is(ctx.Err(), context.DeadlineExceeded):
		// A refusal no wait fixes, or the process is stopping (an
		// interrupt): there is nothing to check.
		return fmt.Errorf("wait for Kafka brokers %v: %w", c.Brokers, err)
	}
	if last == nil || errors.Is(last, ctx.Err()) {
		// The time ran out during an attempt: it had no answer.
		last = errors.New("no answer in time")
	}
	return &BrokersUnreachableError{Brokers: c.Brokers, Waited: time.Since(start), Attempts: attempts, Err: last, ctxErr: ctx.Err()}
}

// brokersAnswer makes one metadata request (no topics: only the
// brokers) and checks that it names a broker.
func brokersAnswer(ctx context.Context, cl *kafka.Client) error {
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{}})
	if err != nil {
		return Classify("metadata", err)
	}
	if len(md.Brokers) == 0 {
		return fmt.Errorf("metadata names no broker: %w", kafka.BrokerNotAvailable)
	}
	return nil
}
