package top

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv"
)

// TestReadKeys: q or Q quits; other keys do not; the end of the input or
// Stop ends the reading without quitting.
func TestReadKeys(t *testing.T) {
	tests := []struct {
		name     string
		input    string
		wantQuit bool
	}{
		{"q quits", "q", true},
		{"Q quits", "Q", true},
		{"q after other keys", "abc\x1b[A q", true},
		{"other keys do not", "abc\n\x1b[A", false},
		{"nothing", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var quit atomic.Bool
			done := make(chan struct{})
			go func() {
				readKeys(strings.NewReader(tc.input), make(chan struct{}), func() { quit.Store(true) }, false)
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("readKeys did not return at the end of the input")
			}
			if quit.Load() != tc.wantQuit {
				t.Errorf("quit %t, want %t", quit.Load(), tc.wantQuit)
			}
		})
	}
}

// pollReader answers like a terminal with VTIME: empty (io.EOF) after a
// wait when no key came, then the keys it is given. reads counts the
// calls.
type pollReader struct {
	keys  chan byte
	wait  time.Duration
	reads atomic.Int64
}

func (p *pollReader) Read(b []byte) (int, error) {
	p.reads.Add(1)
	select {
	case k := <-p.keys:
		b[0] = k
		return 1, nil
	case <-time.After(p.wait):
		return 0, io.EOF
	}
}

func TestReadKeysPolled(t *testing.T) {
	t.Run("empty polls go on until q", func(t *testing.T) {
		p := &pollReader{keys: make(chan byte, 1), wait: keyPoll}
		var quit atomic.Bool
		done := make(chan struct{})
		go func() {
			readKeys(p, make(chan struct{}), func() { quit.Store(true) }, true)
			close(done)
		}()
		testenv.Eventually(t, 5*time.Second, "a few empty polls", func() bool { return p.reads.Load() > 3 })
		select {
		case <-done:
			t.Fatal("readKeys stopped at an empty poll")
		default:
		}
		p.keys <- 'q'
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("q did not end readKeys")
		}
		if !quit.Load() {
			t.Error("q did not quit")
		}
	})
	t.Run("stop ends it within a poll", func(t *testing.T) {
		p := &pollReader{keys: make(chan byte), wait: 10 * time.Millisecond}
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			readKeys(p, stop, func() { t.Error("quit without q") }, true)
			close(done)
		}()
		close(stop)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Stop did not end readKeys")
		}
	})
	t.Run("a hung-up terminal ends it", func(t *testing.T) {
		p := &pollReader{keys: make(chan byte), wait: 0}
		done := make(chan struct{})
		go func() {
			readKeys(p, make(chan struct{}), func() { t.Error("quit without q") }, true)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("empty reads at once did not end readKeys")
		}
	})
}

// TestWatchKeysNotATerminal: a pipe or a buffer is not read (a script's
// input stays where it is), the context is the parent's, and Stop is safe
// twice.
func TestWatchKeysNotATerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, in := range []io.Reader{bytes.NewBufferString("q"), r} {
		if _, err := w.Write([]byte("q")); err != nil {
			t.Fatal(err)
		}
		parent, cancel := context.WithCancel(context.Background())
		k, err := WatchKeys(parent, in)
		if err != nil {
			t.Fatal(err)
		}
		// Nothing reads a non-terminal: the q stays where it is (the
		// buffer's here, the pipe's below) and the view goes on.
		if b, ok := in.(*bytes.Buffer); (ok && b.String() != "q") || k.Context().Err() != nil {
			t.Fatalf("%T: q was read from a non-terminal", in)
		}
		cancel()
		if !errors.Is(k.Context().Err(), context.Canceled) {
			t.Errorf("%T: the context does not end with its parent", in)
		}
		if err := k.Stop(); err != nil {
			t.Error(err)
		}
		if err := k.Stop(); err != nil {
			t.Error(err)
		}
	}
	// The pipe still holds what was written: nothing read it.
	buf := make([]byte, 4)
	n, _ := r.Read(buf)
	if string(buf[:n]) != "qq" {
		t.Errorf("the pipe held %q, want qq (nothing read)", buf[:n])
	}
}

func TestWaitNotice(t *testing.T) {
	var b bytes.Buffer
	notify := WaitNotice(&b, "ClickHouse at 127.0.0.1:9000")
	notify(1, 150*time.Millisecond, errors.New("dial tcp 127.0.0.1:9000: connect: connection refused"))
	notify(2, 1234*time.Millisecond, errors.New("hostile\n\x1b[2Jerror"))
	want := "waiting for ClickHouse at 127.0.0.1:9000 (try 1: dial tcp 127.0.0.1:9000: connect: connection refused); next try in 200ms\n" +
		`waiting for ClickHouse at 127.0.0.1:9000 (try 2: hostile\n\x1b[2Jerror); next try in 1.2s` + "\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
