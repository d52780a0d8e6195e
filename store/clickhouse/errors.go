package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	ch "github.com/ClickHouse/clickhouse-go/v2"
)

// FatalError is an error that retrying cannot fix: bad data (a finding
// that cannot be stored), a schema mismatch, a syntax error, failed
// authentication. The caller should stop and alert rather than replay.
// Test for it with errors.As.
type FatalError struct {
	// Op says what failed, e.g. "insert hot_keys" or "map finding 3".
	Op  string
	Err error
}

func (e *FatalError) Error() string {
	return fmt.Sprintf("clickhouse sink: %s: fatal: %v", e.Op, e.Err)
}

// Unwrap returns the underlying error.
func (e *FatalError) Unwrap() error { return e.Err }

// Fatal marks the error as one a retry cannot fix, for callers that
// classify errors by behaviour (errors.As to interface{ Fatal() bool })
// without importing this package.
func (e *FatalError) Fatal() bool { return true }

// errorClass names how an error is handled; it is also the metric label.
type errorClass string

const (
	classRetryable errorClass = "retryable"
	classFatal     errorClass = "fatal"
	classCanceled  errorClass = "canceled"
)

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

// classify says whether err is worth retrying. ctx is the caller's
// context: once it is done, nothing is retried.
//
// Server exceptions are retryable only for the codes above; every other
// code (unknown table or column, type mismatch, syntax, authentication) is
// fatal. Network errors, EOFs and timeouts are retryable. Unknown errors
// are retried too, bounded by MaxRetries, because a transient failure
// wrongly called fatal would stop the pipeline while a fatal one wrongly
// retried only costs the retries.
func classify(ctx context.Context, err error) errorClass {
	if ctx.Err() != nil {
		return classCanceled
	}
	var fatal *FatalError
	if errors.As(err, &fatal) {
		return classFatal
	}
	var ex *ch.Exception
	if errors.As(err, &ex) {
		if retryableCode(ex.Code) {
			return classRetryable
		}
		return classFatal
	}
	var opErr *ch.OpError
	if errors.As(err, &opErr) {
		// Column conversion while appending: the data does not fit the
		// table.
		return classFatal
	}
	var netErr net.Error
	switch {
	case errors.As(err, &netErr),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, ch.ErrAcquireConnTimeout),
		errors.Is(err, ch.ErrConnectionClosed):
		return classRetryable
	}
	return classRetryable
}
