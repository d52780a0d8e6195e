package kafkasrc

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"
)

// Backoff bounds for retried operations.
const (
	backoffMin = 50 * time.Millisecond
	backoffMax = 5 * time.Second
)

// backoff yields exponentially growing delays, backoffMin doubling up to
// backoffMax. The zero value is ready to use.
type backoff struct{ next time.Duration }

func (b *backoff) delay() time.Duration {
	if b.next == 0 {
		b.next = backoffMin
	}
	d := b.next
	b.next = min(2*b.next, backoffMax)
	return d
}

// sleep waits d or until ctx is done, returning ctx's error in that case.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// transient reports whether err is worth retrying: broken or refused
// connections (a broker restart), timeouts of a single request, and the
// Kafka error codes that say "try again" (leader moves, coordinator
// loading or moving, rebalances). A cancelled caller context is not
// transient; the callers check it first.
func transient(err error) bool {
	if err == nil {
		return false
	}
	var kerr kafka.Error
	if errors.As(err, &kerr) {
		switch kerr {
		case kafka.RebalanceInProgress, kafka.IllegalGeneration, kafka.UnknownMemberId,
			kafka.NotCoordinatorForGroup, kafka.GroupCoordinatorNotAvailable,
			kafka.GroupLoadInProgress, kafka.RequestTimedOut, kafka.NetworkException:
			return true
		}
		return kerr.Temporary()
	}
	var werrs kafka.WriteErrors
	if errors.As(err, &werrs) {
		for _, e := range werrs {
			if e != nil && !transient(e) {
				return false
			}
		}
		return true
	}
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed), errors.Is(err, context.DeadlineExceeded):
		return true
	}
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		return true
	}
	var operr *net.OpError
	return errors.As(err, &operr) // dial and read failures of any kind
}
