package kafkaclient

import (
	"context"
	"errors"
	"io"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/retry"
)

// Retryable reports whether a later attempt of the request that failed
// with err can succeed. Not retryable: nil; an error marked
// retry.Permanent; a kafka.Error that kafka-go does not call temporary,
// except the codes of a consumer-group rebalance (RebalanceInProgress,
// IllegalGeneration, UnknownMemberId), BrokerNotAvailable and Unknown; a
// kafka.WriteErrors with such a failure; kafka.MessageTooLargeError;
// io.ErrClosedPipe (a closed writer or reader); context.Canceled (the
// caller's end is not the server's trouble). Everything else is
// retryable, errors this function does not know included: a transient
// failure wrongly called permanent would stop the pipeline, while a
// permanent one wrongly retried only costs the retries, which callers
// bound (retry.Policy). See docs/architecture.md, Design notes: which
// Kafka errors are retried.
func Retryable(err error) bool {
	if err == nil || retry.IsPermanent(err) {
		return false
	}
	var werrs kafka.WriteErrors
	if errors.As(err, &werrs) {
		for _, e := range werrs {
			if e != nil && !Retryable(e) {
				return false
			}
		}
		return true
	}
	var kerr kafka.Error
	if errors.As(err, &kerr) {
		switch kerr {
		case kafka.RebalanceInProgress, kafka.IllegalGeneration, kafka.UnknownMemberId,
			kafka.BrokerNotAvailable, kafka.Unknown:
			return true
		}
		return kerr.Temporary()
	}
	var tooLarge kafka.MessageTooLargeError
	switch {
	case errors.As(err, &tooLarge),
		errors.Is(err, io.ErrClosedPipe),
		errors.Is(err, context.Canceled):
		return false
	}
	return true
}

// Classify returns nil for nil, err marked with retry.Permanent (op says
// what failed) when Retryable says no retry can fix it, and err itself
// otherwise, so that retry.Do stops at once on the first and retries the
// second.
func Classify(op string, err error) error {
	if err == nil || Retryable(err) || errors.Is(err, context.Canceled) {
		return err
	}
	return retry.Permanent(op, err)
}
