package alertdeliver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/skew/alert"
)

// recorder is a fake notifier: it records what it gets, can block until
// released, and fails with the errors queued in fail.
type recorder struct {
	mu      sync.Mutex
	got     []alert.Alert
	calls   int
	fail    []error       // returned by the next calls, in order
	block   chan struct{} // when not nil, Notify waits for it (or ctx)
	entered chan struct{} // receives one value per Notify call
	closed  int
}

func newRecorder() *recorder { return &recorder{entered: make(chan struct{}, 100)} }

func (r *recorder) Notify(ctx context.Context, alerts []alert.Alert) error {
	r.entered <- struct{}{}
	r.mu.Lock()
	block := r.block
	r.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if len(r.fail) > 0 {
		err := r.fail[0]
		r.fail = r.fail[1:]
		return err
	}
	r.got = append(r.got, alerts...)
	return nil
}

func (r *recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed++
	return nil
}

func (r *recorder) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, a := range r.got {
		out = append(out, a.ID+":"+a.Status)
	}
	return out
}

func mk(id, status string) alert.Alert { return alert.Alert{ID: id, Status: status} }

func fastFanout(t *testing.T, cfg FanoutConfig, reg prometheus.Registerer, targets ...Target) *Fanout {
	t.Helper()
	if cfg.Retry == (retry.Policy{}) {
		cfg.Retry = retry.Policy{MaxRetries: retry.Unlimited, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	}
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = 200 * time.Millisecond
	}
	f, err := NewFanout(cfg, targets, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	return f
}

func TestFanoutDeliversToEveryNotifier(t *testing.T) {
	a, b := newRecorder(), newRecorder()
	reg := prometheus.NewRegistry()
	f := fastFanout(t, FanoutConfig{}, reg, Target{"a", a}, Target{"b", b})
	f.Send([]alert.Alert{mk("x", alert.StatusFiring), mk("y", alert.StatusFiring)})
	f.Send([]alert.Alert{mk("x", alert.StatusResolved)})
	want := []string{"x:firing", "y:firing", "x:resolved"}
	for _, r := range []*recorder{a, b} {
		// x:resolved may have replaced x:firing while it waited.
		testenv.Eventually(t, 5*time.Second, "x resolved", func() bool { return slices.Contains(r.ids(), "x:resolved") })
		if got := r.ids(); !slices.Equal(got, want) && !slices.Equal(got, []string{"x:resolved", "y:firing"}) {
			t.Errorf("got %v, want %v", got, want)
		}
	}
	if n := testutil.ToFloat64(f.m.notifications.WithLabelValues("a", "sent")); n < 2 {
		t.Errorf("sent{a} = %v", n)
	}
}

func TestFanoutSlowNotifierDelaysNoOther(t *testing.T) {
	slow, fast := newRecorder(), newRecorder()
	slow.block = make(chan struct{})
	f := fastFanout(t, FanoutConfig{}, nil, Target{"slow", slow}, Target{"fast", fast})
	f.Send([]alert.Alert{mk("x", alert.StatusFiring)})
	testenv.Eventually(t, 5*time.Second, "fast delivery", func() bool { return len(fast.ids()) == 1 })
	if got := slow.ids(); len(got) != 0 {
		t.Errorf("slow notifier got %v while blocked", got)
	}
	close(slow.block)
	testenv.Eventually(t, 5*time.Second, "slow delivery", func() bool { return len(slow.ids()) == 1 })
}

func TestFanoutQueue(t *testing.T) {
	tests := []struct {
		name        string
		capacity    int
		send        [][]alert.Alert
		wantGot     []string // after the block is released (the first batch was in flight)
		wantDropped float64
	}{
		{
			name:     "overflow drops the oldest waiting alerts",
			capacity: 2,
			send:     [][]alert.Alert{{mk("a", alert.StatusFiring)}, {mk("b", alert.StatusFiring), mk("c", alert.StatusFiring), mk("d", alert.StatusFiring)}},
			wantGot:  []string{"a:firing", "c:firing", "d:firing"}, wantDropped: 1,
		},
		{
			name:     "a newer state replaces the waiting one without taking room",
			capacity: 2,
			send:     [][]alert.Alert{{mk("a", alert.StatusFiring)}, {mk("b", alert.StatusFiring), mk("c", alert.StatusFiring)}, {mk("b", alert.StatusResolved), mk("c", alert.StatusResolved)}},
			wantGot:  []string{"a:firing", "b:resolved", "c:resolved"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecorder()
			r.block = make(chan struct{})
			f := fastFanout(t, FanoutConfig{QueueCapacity: tt.capacity}, nil, Target{"r", r})
			f.Send(tt.send[0])
			<-r.entered // the first batch is in flight; the rest waits
			for _, s := range tt.send[1:] {
				f.Send(s)
			}
			close(r.block)
			testenv.Eventually(t, 5*time.Second, "delivery", func() bool { return len(r.ids()) == len(tt.wantGot) })
			f.Stop() // drains: whatever else would come has come
			if got := r.ids(); !slices.Equal(got, tt.wantGot) {
				t.Errorf("got %v, want %v", got, tt.wantGot)
			}
			if d := testutil.ToFloat64(f.m.dropped.WithLabelValues("r", "overflow")); d != tt.wantDropped {
				t.Errorf("dropped{overflow} = %v, want %v", d, tt.wantDropped)
			}
		})
	}
}

func TestFanoutFailures(t *testing.T) {
	retryable := &NotifyError{Notifier: "r", Op: "post", StatusCode: 503, Err: errors.New("unavailable")}
	permanent := retry.Permanent("", &NotifyError{Notifier: "r", Op: "post", StatusCode: 400, Err: errors.New("bad request")})
	tests := []struct {
		name        string
		fail        []error
		wantGot     []string
		wantFailed  float64
		wantDropped float64
	}{
		{name: "retryable errors keep the alerts queued until delivered", fail: []error{retryable, retryable},
			wantGot: []string{"x:firing"}, wantFailed: 2},
		{name: "a permanent error drops the batch", fail: []error{permanent},
			wantGot: nil, wantFailed: 1, wantDropped: 1},
		{name: "a wrapped permanent error is still permanent", fail: []error{fmt.Errorf("wrapped: %w", permanent)},
			wantGot: nil, wantFailed: 1, wantDropped: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecorder()
			r.fail = tt.fail
			f := fastFanout(t, FanoutConfig{}, nil, Target{"r", r})
			f.Send([]alert.Alert{mk("x", alert.StatusFiring)})
			testenv.Eventually(t, 5*time.Second, "all calls", func() bool {
				r.mu.Lock()
				defer r.mu.Unlock()
				return r.calls == len(tt.fail)+len(tt.wantGot) && f.QueueLen("r") == 0
			})
			f.Stop() // drains: whatever else would come has come
			if got := r.ids(); !slices.Equal(got, tt.wantGot) {
				t.Errorf("got %v, want %v", got, tt.wantGot)
			}
			if n := testutil.ToFloat64(f.m.notifications.WithLabelValues("r", "failed")); n != tt.wantFailed {
				t.Errorf("failed = %v, want %v", n, tt.wantFailed)
			}
			if n := testutil.ToFloat64(f.m.dropped.WithLabelValues("r", "fatal")); n != tt.wantDropped {
				t.Errorf("dropped{fatal} = %v, want %v", n, tt.wantDropped)
			}
			retryable := 0
			for _, err := range tt.fail {
				if !retry.IsPermanent(err) {
					retryable++
				}
			}
			if n := testutil.ToFloat64(f.m.retries.WithLabelValues("r")); n != float64(retryable) {
				t.Errorf("retries = %v, want %d", n, retryable)
			}
		})
	}
}

// TestFanoutRetriesUsedUp: with a bounded Retry.MaxRetries, a batch that
// keeps failing is dropped (reason "retries") once its retries are used
// up, and the notifier goes on with the next alerts.
func TestFanoutRetriesUsedUp(t *testing.T) {
	retryable := &NotifyError{Notifier: "r", Op: "post", StatusCode: 503, Err: errors.New("unavailable")}
	tests := []struct {
		name        string
		maxRetries  int
		wantCalls   int // for the first alert
		wantRetries float64
	}{
		{name: "two retries", maxRetries: 2, wantCalls: 3, wantRetries: 2},
		{name: "no retries", maxRetries: 0, wantCalls: 1, wantRetries: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRecorder()
			for range tt.wantCalls {
				r.fail = append(r.fail, retryable)
			}
			f := fastFanout(t, FanoutConfig{Retry: retry.Policy{MaxRetries: tt.maxRetries, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}}, nil, Target{"r", r})
			f.Send([]alert.Alert{mk("x", alert.StatusFiring)})
			testenv.Eventually(t, 5*time.Second, "x dropped", func() bool { return testutil.ToFloat64(f.m.dropped.WithLabelValues("r", "retries")) == 1 })
			f.Send([]alert.Alert{mk("y", alert.StatusFiring)})
			testenv.Eventually(t, 5*time.Second, "y delivered", func() bool { return len(r.ids()) == 1 })
			if got := r.ids(); !slices.Equal(got, []string{"y:firing"}) {
				t.Errorf("got %v, want only y", got)
			}
			r.mu.Lock()
			calls := r.calls
			r.mu.Unlock()
			if calls != tt.wantCalls+1 {
				t.Errorf("%d calls, want %d for x and 1 for y", calls, tt.wantCalls)
			}
			if n := testutil.ToFloat64(f.m.retries.WithLabelValues("r")); n != tt.wantRetries {
				t.Errorf("retries = %v, want %v", n, tt.wantRetries)
			}
			if n := f.QueueLen("r"); n != 0 {
				t.Errorf("%d alerts still queued", n)
			}
		})
	}
}

func TestFanoutConfigDefaults(t *testing.T) {
	if err := (FanoutConfig{}).Validate(); err == nil {
		t.Error("Validate accepted the zero FanoutConfig")
	}
	d := DefaultFanoutConfig()
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := (FanoutConfig{}).withDefaults(); got != d {
		t.Errorf("zero fields filled with %+v, want DefaultFanoutConfig %+v", got, d)
	}
	want := FanoutConfig{QueueCapacity: 1024, MaxBatch: 100, NotifyTimeout: 30 * time.Second,
		Retry: retry.Policy{MaxRetries: retry.Unlimited, MinBackoff: time.Second, MaxBackoff: 30 * time.Second}, DrainTimeout: 5 * time.Second}
	if d != want {
		t.Errorf("defaults:\n got %+v\nwant %+v", d, want)
	}
	// A policy that is set keeps its MaxRetries: 0 is one attempt.
	if got := (FanoutConfig{Retry: retry.Policy{MaxBackoff: time.Minute}}).withDefaults().Retry; got != (retry.Policy{MaxRetries: 0, MinBackoff: time.Second, MaxBackoff: time.Minute}) {
		t.Errorf("set policy filled to %+v", got)
	}
	if err := (Config{}).Validate(); err == nil {
		t.Error("Config.Validate accepted the zero Config")
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig invalid: %v", err)
	}
}

func TestFanoutStop(t *testing.T) {
	t.Run("drains, closes the notifiers once, is safe twice, drops later sends", func(t *testing.T) {
		r := newRecorder()
		r.block = make(chan struct{})
		f := fastFanout(t, FanoutConfig{DrainTimeout: 5 * time.Second}, nil, Target{"r", r})
		f.Send([]alert.Alert{mk("a", alert.StatusFiring)})
		<-r.entered
		f.Send([]alert.Alert{mk("b", alert.StatusFiring)})
		go func() { <-f.stopping; close(r.block) }() // released once Stop drains
		f.Stop()
		f.Stop()
		if got := r.ids(); !slices.Equal(got, []string{"a:firing", "b:firing"}) {
			t.Errorf("delivered %v before stopping, want both", got)
		}
		if r.closed != 1 {
			t.Errorf("closed %d times, want 1", r.closed)
		}
		f.Send([]alert.Alert{mk("c", alert.StatusFiring)})
		if d := testutil.ToFloat64(f.m.dropped.WithLabelValues("r", "stopped")); d != 1 {
			t.Errorf("dropped{stopped} = %v, want 1", d)
		}
	})
	t.Run("gives up after DrainTimeout when the notifier keeps failing", func(t *testing.T) {
		r := newRecorder()
		for range 1000 {
			r.fail = append(r.fail, errors.New("down"))
		}
		f := fastFanout(t, FanoutConfig{DrainTimeout: 100 * time.Millisecond}, nil, Target{"r", r})
		f.Send([]alert.Alert{mk("a", alert.StatusFiring), mk("b", alert.StatusFiring)})
		<-r.entered
		start := time.Now()
		f.Stop()
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Stop took %s", d)
		}
		if d := testutil.ToFloat64(f.m.dropped.WithLabelValues("r", "stopped")); d != 2 {
			t.Errorf("dropped{stopped} = %v, want 2", d)
		}
	})
}

func TestNewFanoutErrors(t *testing.T) {
	r := newRecorder()
	tests := []struct {
		name    string
		cfg     FanoutConfig
		targets []Target
	}{
		{"duplicate name", FanoutConfig{}, []Target{{"a", r}, {"a", r}}},
		{"no name", FanoutConfig{}, []Target{{"", r}}},
		{"no notifier", FanoutConfig{}, []Target{{"a", nil}}},
		{"negative capacity", FanoutConfig{QueueCapacity: -1}, nil},
		{"backoff inverted", FanoutConfig{Retry: retry.Policy{MaxRetries: retry.Unlimited, MinBackoff: time.Second, MaxBackoff: time.Millisecond}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if f, err := NewFanout(tt.cfg, tt.targets, nil, nil); err == nil {
				f.Stop()
				t.Fatal("no error")
			}
		})
	}
	reg := prometheus.NewRegistry()
	f, err := NewFanout(FanoutConfig{}, nil, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	if _, err := NewFanout(FanoutConfig{}, nil, nil, reg); err == nil {
		t.Error("second Fanout on one registry: no error")
	}
}
