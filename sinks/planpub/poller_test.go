package planpub

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/skewlens/skewlens/plans"
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
// repeated for the same set: the setter (a Sink) keeps what it could not
// publish.
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
	deadline := time.Now().Add(10 * time.Second)
	for f.sets() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
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
