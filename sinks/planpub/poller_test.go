package planpub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/skew/plans"
)

// fakeOverrides is an OverrideReader answering from a script, and an
// OverrideSetter recording what it was given.
type fakeOverrides struct {
	mu     sync.Mutex
	reads  [][]plans.Override // answers, one per read; the last repeats
	errs   []error            // per read; nil: none
	n      int
	set    [][]plans.Override
	setErr error
}

func (f *fakeOverrides) Overrides(context.Context) ([]plans.Override, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := min(f.n, len(f.reads)-1)
	f.n++
	if i < len(f.errs) && f.errs[i] != nil {
		return nil, f.errs[i]
	}
	return slices.Clone(f.reads[i]), nil
}

func (f *fakeOverrides) SetOverrides(_ context.Context, ovs []plans.Override) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.set = append(f.set, ovs)
	return f.setErr
}

func (f *fakeOverrides) sets() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.set)
}

func TestOverridePollerPoll(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	pin := plans.Override{JobID: "j", TaskName: "t", Action: plans.ActionPin, By: "alice", At: t0}
	exA := plans.Override{JobID: "j", TaskName: "t", Action: plans.ActionExclude, Key: "a", By: "bob", At: t0}
	exB := exA
	exB.Key = "b"
	repinned := pin
	repinned.At = t0.Add(time.Second)
	boom := errors.New("connection refused")
	tests := []struct {
		name    string
		initial []plans.Override
		read    []plans.Override
		readErr error
		want    OverrideDiff
		wantSet bool
	}{
		{"unchanged", []plans.Override{pin, exA}, []plans.Override{exA, pin}, nil, OverrideDiff{}, false},
		{"none before, none now", nil, nil, nil, OverrideDiff{}, false},
		{"added", []plans.Override{pin}, []plans.Override{pin, exA}, nil, OverrideDiff{Added: 1}, true},
		{"same action, another key", []plans.Override{exA}, []plans.Override{exB}, nil, OverrideDiff{Added: 1, Removed: 1}, true},
		{"changed (later At)", []plans.Override{pin}, []plans.Override{repinned}, nil, OverrideDiff{Changed: 1}, true},
		{"removed", []plans.Override{pin, exA}, []plans.Override{exA}, nil, OverrideDiff{Removed: 1}, true},
		{"all removed", []plans.Override{pin}, nil, nil, OverrideDiff{Removed: 1}, true},
		{"read fails", []plans.Override{pin}, nil, boom, OverrideDiff{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeOverrides{reads: [][]plans.Override{tt.read}, errs: []error{tt.readErr}}
			p, err := NewOverridePoller(time.Second, f, f, tt.initial, nil)
			if err != nil {
				t.Fatal(err)
			}
			d, err := p.Poll(context.Background())
			if !errors.Is(err, tt.readErr) || (tt.readErr == nil) != (err == nil) {
				t.Fatalf("Poll: err %v, want %v", err, tt.readErr)
			}
			if d != tt.want {
				t.Errorf("diff %+v, want %+v", d, tt.want)
			}
			if got := f.sets() == 1; got != tt.wantSet {
				t.Fatalf("set %d times, want set: %v", f.sets(), tt.wantSet)
			}
			if tt.wantSet && !slices.EqualFunc(f.set[0], tt.read, func(a, b plans.Override) bool {
				return a.JobID == b.JobID && a.Action == b.Action && a.Key == b.Key && a.At.Equal(b.At)
			}) {
				t.Errorf("set %+v, want %+v", f.set[0], tt.read)
			}
			// The next poll of the same set changes nothing.
			if d, err := p.Poll(context.Background()); tt.readErr == nil && (err != nil || !d.Empty()) {
				t.Errorf("second poll: %+v, %v; want no change", d, err)
			}
			if f.sets() > 1 {
				t.Errorf("set %d times after an unchanged poll", f.sets())
			}
		})
	}
}

// TestOverridePollerSetterFails checks that a failed hand-over is not
// repeated for the same set: the setter (a PlanObserver) keeps what it
// could not publish.
func TestOverridePollerSetterFails(t *testing.T) {
	pin := plans.Override{JobID: "j", TaskName: "t", Action: plans.ActionPin, By: "alice", At: time.Unix(1, 0)}
	f := &fakeOverrides{reads: [][]plans.Override{{pin}}, setErr: errors.New("publish failed")}
	p, err := NewOverridePoller(time.Second, f, f, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := p.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if f.sets() != 1 {
		t.Errorf("set %d times, want 1", f.sets())
	}
}

func TestOverridePollerRun(t *testing.T) {
	pin := plans.Override{JobID: "j", TaskName: "t", Action: plans.ActionPin, By: "alice", At: time.Unix(1, 0)}
	f := &fakeOverrides{
		reads: [][]plans.Override{nil, nil, {pin}},
		errs:  []error{errors.New("refused"), nil, nil}, // a failed read is tried again next tick
	}
	p, err := NewOverridePoller(time.Millisecond, f, f, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	ran := make(chan error, 1)
	go func() { ran <- p.Run(context.Background(), done) }()
	testenv.Eventually(t, 10*time.Second, "the pin set", func() bool { return f.sets() > 0 })
	close(done)
	if err := <-ran; err != nil {
		t.Errorf("Run: %v", err)
	}
	if f.sets() != 1 {
		t.Errorf("set %d times, want 1 (the pin, after a failed read)", f.sets())
	}
}

func TestNewOverridePollerRejects(t *testing.T) {
	f := &fakeOverrides{reads: [][]plans.Override{nil}}
	for _, tt := range []struct {
		name  string
		every time.Duration
		src   OverrideReader
		dst   OverrideSetter
	}{
		{"zero interval", 0, f, f},
		{"nil reader", time.Second, nil, f},
		{"nil setter", time.Second, f, nil},
	} {
		if _, err := NewOverridePoller(tt.every, tt.src, tt.dst, nil, nil); err == nil {
			t.Errorf("%s: want an error", tt.name)
		}
	}
}

// blockingOverrides is an OverrideReader whose reads block until release
// sends the error to return, or ctx ends (then it returns ctx's error
// wrapped, as the ClickHouse store does).
type blockingOverrides struct {
	started chan struct{}
	release chan error
}

func (b *blockingOverrides) Overrides(ctx context.Context) ([]plans.Override, error) {
	select {
	case b.started <- struct{}{}:
	default:
	}
	select {
	case err := <-b.release:
		return nil, err
	case <-ctx.Done():
		return nil, fmt.Errorf("reading overrides: %w", ctx.Err())
	}
}

func (b *blockingOverrides) SetOverrides(context.Context, []plans.Override) error { return nil }

// TestOverridePollerStopIsNoFailure: a read cut short by the stop (the run
// context cancelled by Ctrl-C, or done closed meanwhile) is not logged as
// a failure; a read that fails while running still is.
func TestOverridePollerStopIsNoFailure(t *testing.T) {
	var started chan struct{} // the current case's blockingOverrides.started
	tests := []struct {
		name     string
		stop     func(cancel context.CancelFunc, done chan struct{}, release chan error)
		wantWarn bool
	}{
		{"context cancelled during a read", func(cancel context.CancelFunc, _ chan struct{}, _ chan error) { cancel() }, false},
		{"done closed during a read", func(_ context.CancelFunc, done chan struct{}, release chan error) {
			close(done)
			release <- errors.New("read: connection closed")
		}, false},
		{"a read fails while running", func(cancel context.CancelFunc, _ chan struct{}, release chan error) {
			release <- errors.New("connection refused")
			<-started // the next tick's read: the failure was handled
			cancel()
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf testenv.Buffer
			log := slog.New(slog.NewTextHandler(&buf, nil))
			b := &blockingOverrides{started: make(chan struct{}, 1), release: make(chan error)}
			started = b.started
			p, err := NewOverridePoller(time.Millisecond, b, b, nil, log)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			ran := make(chan error, 1)
			go func() { ran <- p.Run(ctx, done) }()
			<-b.started
			tt.stop(cancel, done, b.release)
			if err := <-ran; err != nil {
				t.Fatalf("Run: %v", err)
			}
			out := buf.String()
			if got := strings.Contains(out, "level=WARN"); got != tt.wantWarn {
				t.Errorf("warned: %v, want %v; log:\n%s", got, tt.wantWarn, out)
			}
		})
	}
}
