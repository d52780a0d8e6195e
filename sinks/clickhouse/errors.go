package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/skewlens/skewlens/internal/retry"
)

// ErrClosed is returned (permanent: retry.IsPermanent) by calls on a
// closed Store.
var ErrClosed = errors.New("clickhouse store is closed")

// retryableCode reports whether a ClickHouse exception code is one that a
// later attempt can succeed after: overload, timeouts, network trouble,
// replicas catching up.
func retryableCode(code int32) bool {
	switch code {
	case 3, // UNEXPECTED_END_OF_FILE
		23,   // CANNOT_READ_FROM_ISTREAM
		24,   // CANNOT_WRITE_TO_OSTREAM
		32,   // ATTEMPT_TO_READ_AFTER_EOF
		159,  // TIMEOUT_EXCEEDED
		164,  // READONLY (replica temporarily read-only)
		202,  // TOO_MANY_SIMULTANEOUS_QUERIES
		203,  // NO_FREE_CONNECTION
		209,  // SOCKET_TIMEOUT
		210,  // NETWORK_ERROR
		236,  // ABORTED
		241,  // MEMORY_LIMIT_EXCEEDED
		242,  // TABLE_IS_READ_ONLY
		252,  // TOO_MANY_PARTS
		285,  // TOO_FEW_LIVE_REPLICAS
		319,  // UNKNOWN_STATUS_OF_INSERT
		394,  // QUERY_WAS_CANCELLED
		425,  // SYSTEM_ERROR
		439,  // CANNOT_SCHEDULE_TASK
		999,  // KEEPER_EXCEPTION
		1000: // POCO_EXCEPTION (network errors inside the server)
		return true
	}
	return false
}

// permanent reports whether no retry can fix err. Server exceptions are
// retryable only for the codes above; every other code (unknown table or
// column, type mismatch, syntax, authentication) is permanent, and so is
// a column conversion while appending (the data does not fit the table).
// Everything else (network errors, EOFs, timeouts, unknown errors) is
// retryable: a transient failure wrongly called permanent would stop the
// pipeline, while a permanent one wrongly retried only costs the retries.
func permanent(err error) bool {
	if retry.IsPermanent(err) {
		return true
	}
	var ex *ch.Exception
	if errors.As(err, &ex) {
		return !retryableCode(ex.Code)
	}
	var opErr *ch.OpError
	return errors.As(err, &opErr)
}

// classify returns err, which op caused, in the shared error vocabulary,
// once: retry.Permanent when no retry can fix it, otherwise wrapped with
// op as a plain (retryable) error. Once ctx has ended nothing is called
// permanent: the caller gave up, the store did not fail. nil stays nil.
// It counts the error in the errors metric by class (the labels keep
// their names: retryable, fatal, canceled).
func (s *Store) classify(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	switch {
	case ctx.Err() != nil && !retry.IsPermanent(err):
		s.m.insertErrors.WithLabelValues("canceled").Inc()
		return fmt.Errorf("clickhouse: %s: %w", op, err)
	case permanent(err):
		s.m.insertErrors.WithLabelValues("fatal").Inc()
		return retry.Permanent("clickhouse: "+op, err)
	}
	s.m.insertErrors.WithLabelValues("retryable").Inc()
	return fmt.Errorf("clickhouse: %s: %w", op, err)
}

// retry runs fn, an operation the Store is the only caller of (a step of
// Migrate), with the configured policy: the one retry loop the Store
// owns. Each retry is logged and counted by label in the retries metric.
func (s *Store) retry(ctx context.Context, op, label string, fn func(context.Context) error) error {
	notify := func(attempt int, wait time.Duration, err error) {
		s.log.Warn("clickhouse: retrying", "op", op, "attempt", attempt, "wait", wait, "err", err)
		s.m.retries.WithLabelValues(label).Inc()
	}
	return retry.Do(ctx, s.cfg.Retry, notify, func(ctx context.Context) error {
		return s.classify(ctx, op, fn(ctx))
	})
}

// permanentErr marks err, which op caused, as permanent (retry.Permanent)
// without classifying it: for errors the Store itself finds (bad input,
// a closed Store), which no retry can fix by definition.
func permanentErr(op string, err error) error {
	return retry.Permanent("clickhouse: "+op, err)
}
