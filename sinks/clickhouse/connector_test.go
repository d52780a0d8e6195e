package clickhouse

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew/plans"
)

// TestConnectorWhileDown: with no server at the address, a Connector's
// calls fail at once with a retryable *NotConnectedError whose reason for
// GET /readyz names no address, Run keeps trying (a warning per attempt,
// metrics registered and unregistered on one registry each time) until
// its context ends, and after Close the calls fail permanently.
func TestConnectorWhileDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	c, err := NewConnector(Config{Addr: addr, DialTimeout: 200 * time.Millisecond,
		Retry: retry.Policy{MaxRetries: 2, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}},
		slog.New(slog.NewTextHandler(&logs, nil)), reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	runErr := c.Run(ctx)
	if runErr == nil || !errors.Is(runErr, context.DeadlineExceeded) {
		t.Errorf("Run = %v, want it to try until the context ends", runErr)
	}
	// MaxRetries 2 bounds the store's other callers, not the connection.
	if n := strings.Count(logs.String(), `msg="ClickHouse not available yet; retrying"`); n <= 2 {
		t.Errorf("%d retries logged, want more than Retry.MaxRetries:\n%s", n, logs.String())
	}
	if c.Store() != nil {
		t.Error("Store() is not nil before any connection")
	}
	calls := map[string]func() error{
		"ping": func() error { return c.Ping(context.Background()) },
		"plans": func() error {
			_, err := c.CurrentPlans(context.Background(), time.Now())
			return err
		},
		"findings": func() error {
			_, err := c.Findings(context.Background(), servestore.FindingsQuery{})
			return err
		},
		"put": func() error {
			return c.PutOverride(context.Background(), plans.Override{JobID: "j", TaskName: "T", Action: plans.ActionPin}, servestore.AuditEntry{})
		},
	}
	for name, call := range calls {
		begin := time.Now()
		err := call()
		var nc *NotConnectedError
		var nr servestore.NotReadyError
		if !errors.As(err, &nc) || !errors.As(err, &nr) || retry.IsPermanent(err) {
			t.Errorf("%s: %v, want a retryable *NotConnectedError", name, err)
			continue
		}
		if time.Since(begin) > 50*time.Millisecond {
			t.Errorf("%s waited %s for a store that is not connected", name, time.Since(begin))
		}
		if nc.Attempts < 3 || !strings.Contains(err.Error(), addr) {
			t.Errorf("%s: %v: want the attempts and the address", name, err)
		}
		if r := nr.NotReadyReason(); strings.Contains(r, addr) || !strings.Contains(r, "not connected to ClickHouse yet") {
			t.Errorf("%s: reason %q", name, r)
		}
	}
	if mfs, err := reg.Gather(); err != nil || len(mfs) != 0 {
		t.Errorf("metrics left registered by failed attempts: %d families, %v", len(mfs), err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(context.Background()); !retry.IsPermanent(err) || !errors.Is(err, ErrClosed) {
		t.Errorf("Ping after Close: %v, want permanent ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
