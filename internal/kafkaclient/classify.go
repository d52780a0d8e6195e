package kafkaclient

import (
	"context"
	"errors"
	"io"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/retry"
)

// Retryable reports whether a later attempt of the request that failed
// with err can succeed.
//
// Kafka error codes are retryable when kafka-go calls them temporary
// (leader moves, a coordinator loading or moving, an unknown topic while
// a new one propagates, request timeouts) and, for consumer groups, the
// codes of a rebalance in progress, BrokerNotAvailable, which
// kafka-go's client reports when it cannot reach a broker (one
// restarting), and Unknown (UNKNOWN_SERVER_ERROR), which a broker answers
// to offset lookups while it restarts or a new topic's partitions are
// being set up, and which says nothing permanent; every other code (authorization,
// invalid topic or configuration, message too large) is not. A batch
// (kafka.WriteErrors) is retryable when each of its failures is. A
// message too large for the writer and a closed writer or reader
// (io.ErrClosedPipe) are not retryable, nor is a cancelled context: the
// caller's end is not the server's trouble.
//
// Everything else is retryable: broken and refused connections and EOFs
// (a broker restart), timeouts of one request, and errors this function
// does not know. A transient failure wrongly called permanent would stop
// the pipeline, while a permanent one wrongly retried only costs the
// retries, which callers bound (retry.Policy).
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
