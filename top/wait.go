package top

import (
	"fmt"
	"io"
	"time"

	"github.com/skewlens/skewlens/internal/termtext"
)

// WaitNotice returns a notify function for internal/retry's Do (it has
// retry.Notify's signature) that writes one line to out per failed
// attempt to reach the view's source at start: "waiting for ClickHouse at
// ch-1:9000 (try 3: dial tcp ...: connection refused); next try in 1.6s".
// source names the source and its address; the error
// is escaped like every string the view draws, and the line is cut to the
// terminal's width when out is one. Write errors are ignored: the next
// line or frame tries again.
func WaitNotice(out io.Writer, source string) func(attempt int, wait time.Duration, err error) {
	return func(attempt int, wait time.Duration, err error) {
		line := fmt.Sprintf("waiting for %s (try %d: %s); next try in %s",
			termtext.Clean(source, 0, false), attempt, termtext.Clean(err.Error(), 0, false), wait.Round(100*time.Millisecond))
		_, _ = io.WriteString(out, termtext.Fit(line, termtext.Columns(out))+"\n")
	}
}
