package top

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/skewlens/skewlens/internal/termtext"
)

// keyPoll is how long one read of the terminal waits for a key before it
// returns empty-handed (VTIME), so that the reader sees Stop within it.
const keyPoll = 100 * time.Millisecond

// Keys reads the keys that control the view from a terminal: q (or Q)
// quits. Create it with WatchKeys and call Stop when the view is done.
type Keys struct {
	ctx     context.Context
	cancel  context.CancelFunc
	stop    chan struct{}
	once    sync.Once
	restore func() error
	err     error
}

// WatchKeys returns Keys whose Context ends when ctx ends or q is pressed
// on in. When in is a terminal, it is switched to non-canonical mode
// without echo (keys arrive one at a time and are not printed; signals
// stay on, so Ctrl-C still interrupts) until Stop puts it back as it was.
// When in is not a terminal (a pipe, a file, /dev/null), nothing is read,
// so a script's input is left alone, and Context is ctx's. It fails when
// the terminal's mode cannot be changed (an operating system without
// termios); the caller then runs without keys.
func WatchKeys(ctx context.Context, in io.Reader) (*Keys, error) {
	k := &Keys{stop: make(chan struct{}), restore: func() error { return nil }}
	k.ctx, k.cancel = context.WithCancel(ctx)
	f, ok := in.(*os.File)
	if !ok || !termtext.IsTerminal(f) {
		return k, nil
	}
	restore, err := keyMode(int(f.Fd()), keyPoll)
	if err != nil {
		k.cancel()
		return nil, err
	}
	k.restore = restore
	go readKeys(f, k.stop, k.cancel, true)
	return k, nil
}

// Context ends when the view should stop: its parent ended or q was
// pressed.
func (k *Keys) Context() context.Context { return k.ctx }

// Stop stops reading keys and restores the terminal's mode; it returns
// the error of restoring it. It does not wait for a read in flight, which
// returns within keyPoll. Stop is safe to call more than once.
func (k *Keys) Stop() error {
	k.once.Do(func() {
		close(k.stop)
		k.cancel()
		if err := k.restore(); err != nil {
			k.err = fmt.Errorf("top: restore the terminal: %w", err)
		}
	})
	return k.err
}

// readKeys reads r a byte at a time until stop is closed or r ends,
// calling quit when q or Q arrives. polled says r is a terminal whose
// reads return empty (io.EOF) when no key came within keyPoll: such an
// EOF is no end, unless reads return empty at once, again and again (the
// terminal hung up).
//
// A terminal opened non-blocking (Go then polls it, and VTIME does not
// apply) gets a read deadline of keyPoll instead, when polled.
func readKeys(r io.Reader, stop <-chan struct{}, quit func(), polled bool) {
	d, deadline := r.(interface{ SetReadDeadline(time.Time) error })
	if deadline && polled && d.SetReadDeadline(time.Time{}) == nil {
		defer func() { _ = d.SetReadDeadline(time.Time{}) }()
	} else {
		deadline = false
	}
	buf := make([]byte, 16)
	fast := 0
	for {
		select {
		case <-stop:
			return
		default:
		}
		start := time.Now()
		if deadline {
			_ = d.SetReadDeadline(start.Add(keyPoll))
		}
		n, err := r.Read(buf)
		for _, b := range buf[:n] {
			if b == 'q' || b == 'Q' {
				quit()
				return
			}
		}
		switch {
		case n > 0, deadline && errors.Is(err, os.ErrDeadlineExceeded):
			fast = 0
		case polled && errors.Is(err, io.EOF):
			if time.Since(start) < keyPoll/4 {
				if fast++; fast >= 3 {
					return
				}
			} else {
				fast = 0
			}
		case err != nil:
			return
		}
	}
}
