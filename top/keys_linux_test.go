package top

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns the two ends of a new pseudo-terminal, or skips the
// test where there is none (a container without /dev/pts).
func openPTY(t *testing.T) (control, term *os.File) {
	t.Helper()
	control, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { control.Close() })
	n, err := unix.IoctlGetUint32(int(control.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("no pseudo-terminal number: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(control.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("cannot unlock the pseudo-terminal: %v", err)
	}
	term, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("cannot open the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { term.Close() })
	return control, term
}

// TestWatchKeysTerminal: on a terminal, keys arrive without Enter and
// without echo while signals stay on, q ends the context, and Stop puts
// the terminal's mode back exactly as it was.
func TestWatchKeysTerminal(t *testing.T) {
	control, term := openPTY(t)
	fd := int(term.Fd())
	before, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		t.Fatal(err)
	}
	if before.Lflag&unix.ICANON == 0 || before.Lflag&unix.ISIG == 0 {
		t.Fatalf("a new terminal is not canonical with signals: lflag %#x", before.Lflag)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	k, err := WatchKeys(ctx, term)
	if err != nil {
		t.Fatal(err)
	}
	during, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		t.Fatal(err)
	}
	if during.Lflag&(unix.ICANON|unix.ECHO) != 0 || during.Lflag&unix.ISIG == 0 || during.Oflag != before.Oflag {
		t.Errorf("mode while watching: lflag %#x oflag %#x; want no ICANON, no ECHO, ISIG kept, output unchanged (%#x)",
			during.Lflag, during.Oflag, before.Oflag)
	}
	// q quits, without Enter, after another key (which does not quit:
	// TestReadKeys).
	for _, key := range []string{"x", "q"} {
		if _, err := control.Write([]byte(key)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-k.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("q did not end the view")
	}
	if ctx.Err() != nil {
		t.Error("q ended the parent context")
	}
	if err := k.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := k.Stop(); err != nil {
		t.Fatal(err)
	}
	after, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Errorf("Stop left the terminal in %+v, want %+v", *after, *before)
	}
}
