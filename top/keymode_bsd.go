//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package top

import "golang.org/x/sys/unix"

// The termios requests of the BSDs and macOS.
const (
	ioctlGetTermios = unix.TIOCGETA
	ioctlSetTermios = unix.TIOCSETA
)
