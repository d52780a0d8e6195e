//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package top

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// keyMode switches the terminal fd to non-canonical input without echo,
// with reads that return after at most poll when no key comes (VMIN 0,
// VTIME in tenths of a second). Output processing and signals (ISIG:
// Ctrl-C, Ctrl-Z) stay as they are, unlike a raw mode: frames still end
// lines with "\n" and Ctrl-C still interrupts. It returns the function
// that restores the previous mode.
func keyMode(fd int, poll time.Duration) (func() error, error) {
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return nil, fmt.Errorf("top: read the terminal mode: %w", err)
	}
	t := *old
	t.Lflag &^= unix.ICANON | unix.ECHO
	t.Cc[unix.VMIN] = 0
	t.Cc[unix.VTIME] = uint8(max(1, min(255, poll/(100*time.Millisecond))))
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &t); err != nil {
		return nil, fmt.Errorf("top: set the terminal mode: %w", err)
	}
	return func() error { return unix.IoctlSetTermios(fd, ioctlSetTermios, old) }, nil
}
