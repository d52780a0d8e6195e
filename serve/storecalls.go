package serve

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/sinks/servestore"
)

// acquire takes one of the MaxConcurrentQueries slots, or answers 503
// with Retry-After and returns false when all are taken.
func (s *Server) acquire(w http.ResponseWriter) (func(), bool) {
	select {
	case s.queries <- struct{}{}:
		s.m.queriesActive.Inc()
		return func() {
			<-s.queries
			s.m.queriesActive.Dec()
		}, true
	default:
		s.m.rejected.WithLabelValues("busy").Inc()
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "too many requests in flight; retry later")
		return nil, false
	}
}

// call runs one store operation, retrying retryable errors with
// Config.Retry until the policy or ctx (the request's StoreTimeout) ends:
// the Server is the one layer that retries store calls. When ctx ends
// while it waits to retry, the store's last error is returned, so the
// answer says what the store said (unavailable: 503) rather than that it
// did not answer in time (504, for a call the deadline cut short).
func (s *Server) call(ctx context.Context, op string, fn func(context.Context) error) error {
	var last error
	notify := func(attempt int, wait time.Duration, err error) {
		s.m.storeRetries.WithLabelValues(op).Inc()
		s.log.Debug("skewlens API: retrying a store call", "op", op, "attempt", attempt, "wait", wait, "err", err)
	}
	err := retry.Do(ctx, s.cfg.Retry, notify, func(ctx context.Context) error {
		last = fn(ctx)
		return last
	})
	if err != nil && last != nil && ctx.Err() != nil && !errors.Is(last, ctx.Err()) {
		return last
	}
	return err
}

// storeError answers a failed store call: 504 when it timed out, 500 when
// retrying cannot help (retry.IsPermanent: schema mismatch, bad data),
// else 503 with Retry-After. Details go to the log, not the client.
func (s *Server) storeError(w http.ResponseWriter, op string, err error) {
	s.m.storeErrors.WithLabelValues(op).Inc()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		s.log.Warn("skewlens API: store call timed out", "op", op, "err", err)
		writeError(w, http.StatusGatewayTimeout, "the store did not answer in time")
	case retry.IsPermanent(err):
		s.log.Error("skewlens API: store call failed", "op", op, "err", err)
		writeError(w, http.StatusInternalServerError, "internal error (see the server log)")
	default:
		s.log.Warn("skewlens API: store call failed", "op", op, "err", err)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "the store is unavailable; retry later")
	}
}

// storeReady is the readiness check of GET /readyz: the store answers.
// Its error is the store's NotReadyError reason, or that it does not
// answer: never the store's own message, which may name addresses.
func (s *Server) storeReady(ctx context.Context) error {
	err := s.store.Ready.Ping(ctx)
	if err == nil {
		return nil
	}
	s.m.storeErrors.WithLabelValues("ping").Inc()
	s.log.Warn("skewlens API: store not ready", "err", err)
	var nr servestore.NotReadyError
	if errors.As(err, &nr) {
		return errors.New(nr.NotReadyReason())
	}
	return errors.New("the store does not answer")
}
