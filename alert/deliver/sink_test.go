package deliver

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/skewlens/skewlens/alert"
	"github.com/skewlens/skewlens/pipeline/retry"
	"github.com/skewlens/skewlens/skew"
)

type failingWriter struct {
	fail     error
	advanced []time.Time
}

func (w *failingWriter) Write(context.Context, uint64, []skew.Finding) error { return w.fail }

func (w *failingWriter) Advance(_ context.Context, now time.Time) error {
	w.advanced = append(w.advanced, now)
	return w.fail
}

// TestSinkAlertsOnlyOnStoredFindings: a failed write alerts nothing; a
// stored one does, and window closes pass through to the next sink and
// then resolve the alert.
func TestSinkAlertsOnlyOnStoredFindings(t *testing.T) {
	r := newRecorder()
	a, err := New(Config{Tracker: alert.TrackerConfig{For: -1}, Fanout: FanoutConfig{Retry: retry.Policy{MaxRetries: retry.Unlimited, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}}},
		[]Target{{"rec", r}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	next := &failingWriter{fail: errors.New("clickhouse down")}
	s := NewSink(next, a)
	ctx := context.Background()
	fs := []skew.Finding{sat("j1", "agg", 3, skew.CauseSlowSubtask, 0)}
	if err := s.Write(ctx, 1, fs); err == nil {
		t.Fatal("the next sink's error was swallowed")
	}
	if err := s.Advance(ctx, time.UnixMilli(win)); err == nil {
		t.Fatal("the next sink's Advance error was swallowed")
	}
	if n := len(a.Active()); n != 0 {
		t.Fatalf("%d alerts from findings that were never stored", n)
	}
	next.fail = nil
	if err := s.Write(ctx, 2, fs); err != nil {
		t.Fatal(err)
	}
	if err := s.Advance(ctx, time.UnixMilli(win)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "firing", func() bool { return len(r.ids()) >= 1 })
	if err := s.Advance(ctx, time.UnixMilli(200_000)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "resolved", func() bool { return len(r.ids()) >= 2 })
	if got, want := r.ids(), []string{"j1/agg/3/slow_subtask:firing", "j1/agg/3/slow_subtask:resolved"}; !slices.Equal(got, want) {
		t.Fatalf("notified %v, want %v", got, want)
	}
	if len(next.advanced) != 3 {
		t.Fatalf("next sink advanced %d times, want 3", len(next.advanced))
	}
}
