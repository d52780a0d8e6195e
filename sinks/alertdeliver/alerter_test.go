package alertdeliver

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/alerttest"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/alert"
	"github.com/skewlens/skewlens/skew/incident"
)

// TestAlerter drives the whole component: findings in, notifications out
// (only firing and resolved), metrics counted.
func TestAlerter(t *testing.T) {
	r := newRecorder()
	reg := prometheus.NewRegistry()
	a, err := New(Config{Fanout: FanoutConfig{Retry: retry.Policy{MaxRetries: retry.Unlimited, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}}}, []Target{{"rec", r}}, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	it := alerttest.Incidents(t, incident.DefaultConfig().Hysteresis.For)
	for ws := int64(0); ws <= 20_000; ws += win {
		a.Apply(it.Observe([]skew.Finding{sat("j1", "agg", 3, skew.CauseSlowSubtask, ws), hot("j1", "agg", 1, "k", 0.2, ws)}))
		a.Apply(it.Advance(ws + win))
	}
	// A blip that never fires.
	a.Apply(it.Observe([]skew.Finding{sat("j1", "agg", 5, skew.CauseDataSkew, 40_000)}))
	if n := len(a.Active()); n != 2 {
		t.Fatalf("%d active alerts, want 2", n)
	}
	if g := testutil.ToFloat64(a.m.firing); g != 2 {
		t.Errorf("firing gauge = %v, want 2", g)
	}
	if g := testutil.ToFloat64(a.m.pending); g != 1 {
		t.Errorf("pending gauge = %v, want 1", g)
	}
	// Let the firing notifications go out before resolving: a queued
	// state is replaced by a newer one of the same alert.
	testenv.Eventually(t, 5*time.Second, "2 firing notifications", func() bool { return len(r.ids()) >= 2 })
	a.Apply(it.Advance(200_000))
	want := []string{
		"j1/agg/1/hot_key:firing", "j1/agg/3/slow_subtask:firing",
		"j1/agg/1/hot_key:resolved", "j1/agg/3/slow_subtask:resolved",
	}
	testenv.Eventually(t, 5*time.Second, "4 notifications", func() bool { return len(r.ids()) >= 4 })
	if got := r.ids(); !slices.Equal(got, want) {
		t.Errorf("notified %v, want %v", got, want)
	}
	for kind, want := range map[alert.EventKind]float64{alert.EventPending: 3, alert.EventFiring: 2, alert.EventResolved: 2, alert.EventDiscarded: 1, alert.EventRenotify: 0} {
		if got := testutil.ToFloat64(a.m.transitions.WithLabelValues(string(kind))); got != want {
			t.Errorf("transitions{to=%s} = %v, want %v", kind, got, want)
		}
	}
	if g := testutil.ToFloat64(a.m.firing); g != 0 {
		t.Errorf("firing gauge = %v after resolving, want 0", g)
	}
	a.Stop()
	a.Stop()
	if r.closed != 1 {
		t.Errorf("notifier closed %d times, want 1", r.closed)
	}
}

// TestRetry checks how a notifier's errors drive the one retry loop,
// retry.Do: retryable NotifyErrors are retried, permanent ones stop it.
func TestRetry(t *testing.T) {
	retryable := &NotifyError{Notifier: "n", Op: "op", Err: errTest}
	permanent := retry.Permanent("", &NotifyError{Notifier: "n", Op: "op", Err: errTest})
	tests := []struct {
		name          string
		policy        retry.Policy
		errs          []error // returned by the attempts in order; nil after
		wantCalls     int
		wantErr       bool
		wantPermanent bool
	}{
		{name: "success after retries", policy: retry.Policy{MaxRetries: 3}, errs: []error{retryable, retryable}, wantCalls: 3},
		{name: "gives up after MaxRetries", policy: retry.Policy{MaxRetries: 2}, errs: []error{retryable, retryable, retryable, retryable}, wantCalls: 3, wantErr: true},
		{name: "permanent stops at once", policy: retry.Policy{MaxRetries: 5}, errs: []error{permanent}, wantCalls: 1, wantErr: true, wantPermanent: true},
		{name: "no retries: one attempt", policy: retry.Policy{MaxRetries: 0}, errs: []error{retryable}, wantCalls: 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.policy
			p.MinBackoff, p.MaxBackoff = time.Millisecond, 2*time.Millisecond
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			calls, retries := 0, 0
			err := retry.Do(t.Context(), p, func(int, time.Duration, error) { retries++ }, func(ctx context.Context) error {
				calls++
				if calls <= len(tt.errs) {
					return tt.errs[calls-1]
				}
				return nil
			})
			if calls != tt.wantCalls || (err != nil) != tt.wantErr || retry.IsPermanent(err) != tt.wantPermanent {
				t.Errorf("calls %d, err %v (permanent %v); want %d calls, error %v, permanent %v", calls, err, retry.IsPermanent(err), tt.wantCalls, tt.wantErr, tt.wantPermanent)
			}
			if retries != calls-1 {
				t.Errorf("onRetry called %d times for %d calls", retries, calls)
			}
			var ne *NotifyError
			if err != nil && !errors.As(err, &ne) {
				t.Errorf("err %v does not carry the NotifyError", err)
			}
		})
	}
	t.Run("context ends the wait", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := retry.Do(ctx, retry.Policy{MaxRetries: 100, MinBackoff: time.Second, MaxBackoff: time.Second}, nil,
			func(context.Context) error { return retryable })
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 500*time.Millisecond {
			t.Errorf("err %v after %s; want the deadline, promptly", err, time.Since(start))
		}
	})
}

var errTest = errors.New("test")

// TestAlerterReceipt: the resolved notification of an alert whose
// incident a salting plan relieved says so, with the receipt; another
// alert's does not.
func TestAlerterReceipt(t *testing.T) {
	r := newRecorder()
	a, err := New(Config{Fanout: FanoutConfig{Retry: retry.Policy{MaxRetries: retry.Unlimited, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}}},
		[]Target{{"rec", r}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	cfg := incident.DefaultConfig()
	cfg.Hysteresis.For = -1
	cfg.Plan = func(job, task string) (uint64, int64, bool) { return 2, win, job == "j1" && task == "agg" }
	it, err := incident.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.Apply(it.Observe([]skew.Finding{sat("j1", "agg", 3, skew.CauseDataSkew, 0), sat("j1", "agg", 1, skew.CauseSlowSubtask, 0)}))
	testenv.Eventually(t, 5*time.Second, "firing", func() bool { return len(r.ids()) >= 2 })
	// The plan, made at the end of the first window, relieves subtask 3
	// in the next one.
	relieved := skew.Finding{Kind: skew.KindSubtaskStats, JobID: "j1", TaskName: "agg", SubtaskIndex: alerttest.IntPtr(3),
		WindowStart: win, WindowEnd: 2 * win, Stats: &skew.SubtaskStats{BusyMsPerSecond: 510}}
	a.Apply(it.Observe([]skew.Finding{relieved}))
	a.Apply(it.Advance(200_000))
	testenv.Eventually(t, 5*time.Second, "resolved", func() bool { return len(r.ids()) >= 4 })
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, al := range r.got {
		got, reason := al.Annotations["resolution"], al.Reason
		want, wantReason := "", ""
		switch {
		case al.Status == alert.StatusResolved && al.Labels["cause"] == skew.CauseDataSkew:
			want, wantReason = "resolved by plan v2: busy 990 → 510 ms/s, 10s after the plan", incident.ReasonResolvedByPlan
		case al.Status == alert.StatusResolved:
			wantReason = incident.ReasonAbsent
		}
		if got != want || reason != wantReason {
			t.Errorf("%s %s: resolution %q (reason %q), want %q (%q)", al.ID, al.Status, got, reason, want, wantReason)
		}
	}
}
