package clickhouse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skewlens/skewlens/internal/retry"
)

func TestClassify(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	bg := context.Background()
	tests := []struct {
		name          string
		ctx           context.Context
		err           error
		wantPermanent bool
		wantLabel     string
	}{
		{"unknown table", bg, fmt.Errorf("x: %w", &ch.Exception{Code: 60}), true, "fatal"},
		{"no such column", bg, &ch.Exception{Code: 16}, true, "fatal"},
		{"syntax", bg, &ch.Exception{Code: 62}, true, "fatal"},
		{"wrong password", bg, &ch.Exception{Code: 516}, true, "fatal"},
		{"too many parts", bg, &ch.Exception{Code: 252}, false, "retryable"},
		{"timeout exceeded", bg, &ch.Exception{Code: 159}, false, "retryable"},
		{"too many queries", bg, &ch.Exception{Code: 202}, false, "retryable"},
		{"memory limit", bg, &ch.Exception{Code: 241}, false, "retryable"},
		{"op error", bg, &ch.OpError{Op: "Append", ColumnName: "a", Err: errors.New("bad")}, true, "fatal"},
		{"permanent wrapped", bg, fmt.Errorf("w: %w", retry.Permanent("x", io.EOF)), true, "fatal"},
		{"eof", bg, io.EOF, false, "retryable"},
		{"unexpected eof", bg, fmt.Errorf("read: %w", io.ErrUnexpectedEOF), false, "retryable"},
		{"refused", bg, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, false, "retryable"},
		{"reset", bg, fmt.Errorf("x: %w", syscall.ECONNRESET), false, "retryable"},
		{"acquire timeout", bg, ch.ErrAcquireConnTimeout, false, "retryable"},
		{"per-attempt deadline", bg, context.DeadlineExceeded, false, "retryable"},
		{"unknown", bg, errors.New("something odd"), false, "retryable"},
		{"caller canceled", canceled, &ch.Exception{Code: 60}, false, "canceled"},
	}
	for _, tt := range tests {
		s := testSink(t, Config{})
		got := s.classify(tt.ctx, "op", tt.err)
		if retry.IsPermanent(got) != tt.wantPermanent {
			t.Errorf("%s: classify = %v, permanent %v, want %v", tt.name, got, retry.IsPermanent(got), tt.wantPermanent)
		}
		if !errors.Is(got, tt.err) {
			t.Errorf("%s: classify = %v does not wrap %v", tt.name, got, tt.err)
		}
		if n := testutil.ToFloat64(s.m.insertErrors.WithLabelValues(tt.wantLabel)); n != 1 {
			t.Errorf("%s: errors{class=%q} = %v, want 1", tt.name, tt.wantLabel, n)
		}
	}
	if err := testSink(t, Config{}).classify(bg, "op", nil); err != nil {
		t.Errorf("classify(nil) = %v", err)
	}
}

// testSink returns a Store without a connection, for retry tests.
func testSink(t *testing.T, cfg Config) *Store {
	t.Helper()
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	m, _, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return &Store{cfg: cfg, log: slog.New(slog.DiscardHandler), m: m, lastInsert: map[string]time.Time{}}
}

func TestRetry(t *testing.T) {
	retryable := &ch.Exception{Code: 252, Message: "too many parts"}
	unknownTable := &ch.Exception{Code: 60, Message: "unknown table"}
	tests := []struct {
		name          string
		maxRetries    int
		errs          []error // returned by successive attempts; nil = success
		wantCalls     int
		wantPermanent bool
		wantErr       bool
		wantRetries   float64
	}{
		{name: "first try", maxRetries: 3, errs: []error{nil}, wantCalls: 1},
		{name: "retry then succeed", maxRetries: 3, errs: []error{retryable, io.EOF, nil}, wantCalls: 3, wantRetries: 2},
		{name: "permanent stops", maxRetries: 3, errs: []error{retryable, unknownTable}, wantCalls: 2, wantPermanent: true, wantErr: true, wantRetries: 1},
		{name: "gives up", maxRetries: 2, errs: []error{retryable, retryable, retryable, nil}, wantCalls: 3, wantErr: true, wantRetries: 2},
		{name: "retries disabled", maxRetries: 0, errs: []error{retryable, nil}, wantCalls: 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSink(t, Config{Retry: retry.Policy{MaxRetries: tt.maxRetries, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}})
			calls := 0
			err := s.retry(context.Background(), "op", "tbl", func(context.Context) error {
				e := tt.errs[calls]
				calls++
				return e
			})
			if calls != tt.wantCalls {
				t.Errorf("calls = %d, want %d", calls, tt.wantCalls)
			}
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got := retry.IsPermanent(err); got != tt.wantPermanent {
				t.Errorf("retry.IsPermanent = %v, want %v (err %v)", got, tt.wantPermanent, err)
			}
			if got := testutil.ToFloat64(s.m.retries.WithLabelValues("tbl")); got != tt.wantRetries {
				t.Errorf("retries metric = %v, want %v", got, tt.wantRetries)
			}
		})
	}
}

func TestRetryHonoursContext(t *testing.T) {
	s := testSink(t, Config{Retry: retry.Policy{MaxRetries: 100, MinBackoff: time.Hour, MaxBackoff: time.Hour}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := s.retry(ctx, "op", "tbl", func(context.Context) error { return io.EOF })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("retry ignored the context for %s", time.Since(start))
	}
	if retry.IsPermanent(err) {
		t.Errorf("a canceled retry is not permanent: %v", err)
	}
}

// TestRetryPolicyJitter checks the waits of the Config's policy: each
// between half and all of its step, doubling from MinBackoff to
// MaxBackoff; the default number of retries for a zero policy, and none
// for MaxRetries 0 in a policy that is set.
func TestRetryPolicyJitter(t *testing.T) {
	cfg := Config{Retry: retry.Policy{MaxRetries: retry.Setup().MaxRetries, MinBackoff: 100 * time.Millisecond, MaxBackoff: 400 * time.Millisecond}}.withDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		b := retry.Backoff{Policy: cfg.Retry}
		for _, step := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 400 * time.Millisecond} {
			if got := b.Next(); got < step/2 || got > step {
				t.Fatalf("wait %s, outside [%s, %s]", got, step/2, step)
			}
		}
	}
	if p := (Config{Retry: retry.Policy{MaxRetries: 0, MinBackoff: time.Second}}).withDefaults().Retry; p.MaxRetries != 0 || p.MaxBackoff != retry.Setup().MaxBackoff {
		t.Errorf("MaxRetries 0: policy %+v, want 0 retries and the default max backoff", p)
	}
	if p := (Config{}).withDefaults().Retry; p.MaxRetries != retry.Setup().MaxRetries {
		t.Errorf("default policy retries %d times, want %d", p.MaxRetries, retry.Setup().MaxRetries)
	}
}

func TestPermanentErrorMessage(t *testing.T) {
	inner := errors.New("boom")
	err := permanentErr("insert findings", inner)
	if !strings.Contains(err.Error(), "insert findings") || !errors.Is(err, inner) || !retry.IsPermanent(err) {
		t.Errorf("permanent error = %q", err)
	}
}
