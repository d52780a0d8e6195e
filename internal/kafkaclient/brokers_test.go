package kafkaclient

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/internal/testenv"
)

// freeAddr returns a loopback address nothing listens on (yet).
func freeAddr(t *testing.T) (string, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), port
}

// TestWaitBrokers: a broker that comes up during the wait is found, with
// a log line per retry; one that never comes gives, once the wait is
// over, an error that names the addresses, the wait and what to check.
func TestWaitBrokers(t *testing.T) {
	policy := retry.Policy{MaxRetries: retry.Unlimited, MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond}
	tests := []struct {
		name    string
		startIn time.Duration // when the broker starts; 0: never
		wait    time.Duration
	}{
		{"broker starts late", 700 * time.Millisecond, 20 * time.Second},
		{"no broker ever", 0, 800 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr, port := freeAddr(t)
			var logs testenv.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			started := make(chan struct{})
			if tt.startIn > 0 {
				timer := time.AfterFunc(tt.startIn, func() {
					defer close(started)
					c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port))
					if err != nil {
						t.Errorf("kfake: %v", err)
						return
					}
					t.Cleanup(c.Close)
				})
				t.Cleanup(func() { timer.Stop() })
			}
			ctx, cancel := context.WithTimeout(context.Background(), tt.wait)
			defer cancel()
			begin := time.Now()
			err := WaitBrokers(ctx, AdminConfig{Brokers: []string{addr}, Retry: policy, Log: log})
			took := time.Since(begin)
			retries := strings.Count(logs.String(), `msg="waiting for Kafka brokers"`)
			if retries == 0 || !strings.Contains(logs.String(), "attempt=1 ") || !strings.Contains(logs.String(), "next_in=") {
				t.Errorf("no retry logged with its attempt and next wait:\n%s", logs.String())
			}
			if tt.startIn > 0 {
				<-started
				if err != nil {
					t.Fatalf("WaitBrokers: %v\n%s", err, logs.String())
				}
				if took < tt.startIn {
					t.Errorf("returned after %s, before the broker started (%s)", took, tt.startIn)
				}
				if !strings.Contains(logs.String(), `msg="Kafka brokers answer"`) {
					t.Errorf("no line when the brokers answered:\n%s", logs.String())
				}
				return
			}
			var ue *BrokersUnreachableError
			if !errors.As(err, &ue) {
				t.Fatalf("error %v (%T), want a *BrokersUnreachableError", err, err)
			}
			if took > tt.wait+2*time.Second {
				t.Errorf("gave up after %s, want about the %s wait", took, tt.wait)
			}
			msg := err.Error()
			for _, want := range []string{addr, "no Kafka broker answered", "attempts", "check that the brokers run"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
			if strings.Contains(msg, "not a client facing error") {
				t.Errorf("error %q passes kafka-go's cryptic text on", msg)
			}
			t.Logf("error: %v", err)
			// The deadline ends a wait (as many attempts as retries) or an
			// attempt (one more).
			if ue.Attempts < 2 || (ue.Attempts != retries && ue.Attempts != retries+1) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%d attempts for %d logged retries, deadline %v", ue.Attempts, retries, errors.Is(err, context.DeadlineExceeded))
			}
		})
	}
}

// TestWaitBrokersStops: a cancelled wait (the process is stopping) is not
// reported as unreachable brokers, and no brokers at all, or an empty
// address, is permanent.
func TestWaitBrokersStops(t *testing.T) {
	addr, _ := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	err := WaitBrokers(ctx, AdminConfig{Brokers: []string{addr}})
	var ue *BrokersUnreachableError
	if err == nil || errors.As(err, &ue) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled wait: %v, want the cancellation", err)
	}
	if err := WaitBrokers(context.Background(), AdminConfig{}); !retry.IsPermanent(err) {
		t.Errorf("no brokers: %v, want a permanent error", err)
	}
	if err := WaitBrokers(context.Background(), AdminConfig{Brokers: []string{addr, ""}}); !retry.IsPermanent(err) {
		t.Errorf("an empty address: %v, want a permanent error", err)
	}
}
