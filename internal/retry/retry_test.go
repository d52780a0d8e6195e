package retry

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

var errFlaky = errors.New("flaky")

func fast(maxRetries int) Policy {
	return Policy{MaxRetries: maxRetries, MinBackoff: time.Microsecond, MaxBackoff: 4 * time.Microsecond}
}

func TestDo(t *testing.T) {
	bad := errors.New("bad data")
	tests := []struct {
		name      string
		policy    Policy
		failures  int   // attempts that fail before one succeeds
		err       error // the error of the failing attempts
		wantCalls int
		wantErr   string // substring; "" means success
		permanent bool
	}{
		{"succeeds at once", fast(3), 0, errFlaky, 1, "", false},
		{"succeeds after retries", fast(3), 2, errFlaky, 3, "", false},
		{"retries used up", fast(2), 10, errFlaky, 3, "giving up after 3 attempts: flaky", false},
		{"no retries", fast(0), 10, errFlaky, 1, "giving up after 1 attempts", false},
		{"unlimited", fast(Unlimited), 50, errFlaky, 51, "", false},
		{"permanent stops at once", fast(5), 10, Permanent("insert", bad), 1, "insert: fatal: bad data", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls, notified := 0, 0
			err := Do(context.Background(), tc.policy, func(attempt int, wait time.Duration, err error) {
				notified++
				if attempt != notified || wait <= 0 || err == nil {
					t.Errorf("notify(%d, %s, %v), want attempt %d, a wait and an error", attempt, wait, err, notified)
				}
			}, func(context.Context) error {
				calls++
				if calls <= tc.failures {
					return tc.err
				}
				return nil
			})
			if calls != tc.wantCalls {
				t.Errorf("calls = %d, want %d", calls, tc.wantCalls)
			}
			if notified != min(tc.wantCalls-1, tc.failures) && !tc.permanent {
				t.Errorf("notified %d times for %d calls", notified, calls)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("err = %v, want success", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if IsPermanent(err) != tc.permanent {
				t.Errorf("IsPermanent(%v) = %v, want %v", err, IsPermanent(err), tc.permanent)
			}
			if !errors.Is(err, tc.err) && !errors.Is(err, bad) {
				t.Errorf("err %v does not wrap the attempt's error", err)
			}
		})
	}
}

func TestDoStopsWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := Do(ctx, Policy{MaxRetries: Unlimited, MinBackoff: time.Hour, MaxBackoff: time.Hour}, func(int, time.Duration, error) {
		cancel() // the wait ahead is an hour; ending ctx must end it
	}, func(context.Context) error {
		calls++
		return errFlaky
	})
	if calls != 1 || !errors.Is(err, context.Canceled) || !errors.Is(err, errFlaky) {
		t.Fatalf("calls=%d err=%v, want one call and an error wrapping both flaky and context.Canceled", calls, err)
	}
}

func TestBackoffDoublesWithJitterUpToMax(t *testing.T) {
	b := Backoff{Policy: Policy{MinBackoff: 100 * time.Millisecond, MaxBackoff: 800 * time.Millisecond}}
	steps := []time.Duration{100, 200, 400, 800, 800, 800}
	for i, step := range steps {
		step *= time.Millisecond
		if got := b.Next(); got < step/2 || got > step {
			t.Errorf("wait %d = %s, want within [%s, %s]", i, got, step/2, step)
		}
	}
	b.Reset()
	if got := b.Next(); got > 100*time.Millisecond {
		t.Errorf("after Reset the wait is %s, want at most the minimum", got)
	}
}

func TestPermanent(t *testing.T) {
	if Permanent("x", nil) != nil {
		t.Error("Permanent(nil) is not nil")
	}
	inner := Permanent("insert", errFlaky)
	if got := Permanent("write", inner); got != inner {
		t.Errorf("re-marking wrapped again: %v", got)
	}
	wrapped := errors.Join(errors.New("context"), inner)
	if !IsPermanent(wrapped) || IsPermanent(errFlaky) || IsPermanent(nil) {
		t.Error("IsPermanent does not see through wrapping, or calls a plain error permanent")
	}
}

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		p    Policy
		want string
	}{
		{Request(), ""},
		{Policy{MinBackoff: 0, MaxBackoff: time.Second}, "must be positive"},
		{Policy{MinBackoff: 2 * time.Second, MaxBackoff: time.Second}, "min exceeds max"},
	}
	for _, tc := range tests {
		err := tc.p.Validate()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.p, err, tc.want)
		}
	}
}

func TestPolicyOrDefault(t *testing.T) {
	d := Policy{MaxRetries: 10, MinBackoff: time.Second, MaxBackoff: time.Minute}
	tests := []struct {
		name string
		p    Policy
		want Policy
	}{
		{"zero policy is the default", Policy{}, d},
		{"no retries kept", Policy{MaxRetries: 0, MinBackoff: time.Millisecond}, Policy{MaxRetries: 0, MinBackoff: time.Millisecond, MaxBackoff: time.Minute}},
		{"unlimited kept", Policy{MaxRetries: Unlimited}, Policy{MaxRetries: Unlimited, MinBackoff: time.Second, MaxBackoff: time.Minute}},
		{"max backoff kept", Policy{MaxRetries: 3, MaxBackoff: 2 * time.Second}, Policy{MaxRetries: 3, MinBackoff: time.Second, MaxBackoff: 2 * time.Second}},
		{"full policy unchanged", Policy{MaxRetries: 1, MinBackoff: 1, MaxBackoff: 2}, Policy{MaxRetries: 1, MinBackoff: 1, MaxBackoff: 2}},
	}
	for _, tc := range tests {
		if got := tc.p.OrDefault(d); got != tc.want {
			t.Errorf("%s: %+v.OrDefault = %+v, want %+v", tc.name, tc.p, got, tc.want)
		}
	}
}
