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
)

func TestClassify(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	bg := context.Background()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want errorClass
	}{
		{"unknown table", bg, fmt.Errorf("x: %w", &ch.Exception{Code: 60}), classFatal},
		{"no such column", bg, &ch.Exception{Code: 16}, classFatal},
		{"syntax", bg, &ch.Exception{Code: 62}, classFatal},
		{"wrong password", bg, &ch.Exception{Code: 516}, classFatal},
		{"too many parts", bg, &ch.Exception{Code: 252}, classRetryable},
		{"timeout exceeded", bg, &ch.Exception{Code: 159}, classRetryable},
		{"too many queries", bg, &ch.Exception{Code: 202}, classRetryable},
		{"memory limit", bg, &ch.Exception{Code: 241}, classRetryable},
		{"op error", bg, &ch.OpError{Op: "Append", ColumnName: "a", Err: errors.New("bad")}, classFatal},
		{"fatal wrapped", bg, fmt.Errorf("w: %w", &FatalError{Op: "x", Err: io.EOF}), classFatal},
		{"eof", bg, io.EOF, classRetryable},
		{"unexpected eof", bg, fmt.Errorf("read: %w", io.ErrUnexpectedEOF), classRetryable},
		{"refused", bg, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, classRetryable},
		{"reset", bg, fmt.Errorf("x: %w", syscall.ECONNRESET), classRetryable},
		{"acquire timeout", bg, ch.ErrAcquireConnTimeout, classRetryable},
		{"per-attempt deadline", bg, context.DeadlineExceeded, classRetryable},
		{"unknown", bg, errors.New("something odd"), classRetryable},
		{"caller canceled", canceled, &ch.Exception{Code: 60}, classCanceled},
	}
	for _, tt := range tests {
		if got := classify(tt.ctx, tt.err); got != tt.want {
			t.Errorf("%s: classify = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// testSink returns a Sink without a connection, for retry tests.
func testSink(t *testing.T, cfg Config) *Store {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return &Store{cfg: cfg, log: slog.New(slog.DiscardHandler), m: m, lastInsert: map[string]time.Time{}}
}

func TestRetry(t *testing.T) {
	retryable := &ch.Exception{Code: 252, Message: "too many parts"}
	fatal := &ch.Exception{Code: 60, Message: "unknown table"}
	tests := []struct {
		name        string
		maxRetries  int
		errs        []error // returned by successive attempts; nil = success
		wantCalls   int
		wantFatal   bool
		wantErr     bool
		wantRetries float64
	}{
		{name: "first try", maxRetries: 3, errs: []error{nil}, wantCalls: 1},
		{name: "retry then succeed", maxRetries: 3, errs: []error{retryable, io.EOF, nil}, wantCalls: 3, wantRetries: 2},
		{name: "fatal stops", maxRetries: 3, errs: []error{retryable, fatal}, wantCalls: 2, wantFatal: true, wantErr: true, wantRetries: 1},
		{name: "gives up", maxRetries: 2, errs: []error{retryable, retryable, retryable, nil}, wantCalls: 3, wantErr: true, wantRetries: 2},
		{name: "retries disabled", maxRetries: -1, errs: []error{retryable, nil}, wantCalls: 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSink(t, Config{MaxRetries: tt.maxRetries, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond})
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
			var fe *FatalError
			if got := errors.As(err, &fe); got != tt.wantFatal {
				t.Errorf("errors.As(FatalError) = %v, want %v (err %v)", got, tt.wantFatal, err)
			}
			if got := testutil.ToFloat64(s.m.retries.WithLabelValues("tbl")); got != tt.wantRetries {
				t.Errorf("retries metric = %v, want %v", got, tt.wantRetries)
			}
		})
	}
}

func TestRetryHonoursContext(t *testing.T) {
	s := testSink(t, Config{MaxRetries: 100, MinBackoff: time.Hour, MaxBackoff: time.Hour})
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
	var fe *FatalError
	if errors.As(err, &fe) {
		t.Errorf("a canceled retry is not fatal: %v", err)
	}
}

func TestJitter(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 2, 100 * time.Millisecond, 10 * time.Second} {
		for range 50 {
			got := jitter(d)
			if got < d/2 || got > d {
				t.Fatalf("jitter(%s) = %s, outside [%s, %s]", d, got, d/2, d)
			}
		}
	}
}

func TestFatalErrorMessage(t *testing.T) {
	err := &FatalError{Op: "insert findings", Err: errors.New("boom")}
	if !strings.Contains(err.Error(), "insert findings") || !errors.Is(err, err.Err) {
		t.Errorf("FatalError = %q", err)
	}
}
