//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package top

import (
	"errors"
	"time"
)

// keyMode fails where skewlens does not know the terminal's modes: the
// view then runs without keys (Ctrl-C still stops it).
func keyMode(int, time.Duration) (func() error, error) {
	return nil, errors.New("top: keys are not supported on this system")
}
