package stream

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv"
)

// syncBuffer is a bytes.Buffer safe for the logger's goroutine and the
// test's.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestReportProgress(t *testing.T) {
	r := &Runner{}
	r.messages.Store(120)
	r.written.Store(7)
	var out syncBuffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	done := make(chan struct{})
	ended := make(chan error, 1)
	go func() { ended <- r.ReportProgress(context.Background(), time.Millisecond, log, done) }()
	defer func() {
		if t.Failed() {
			t.Logf("log:\n%s", out.String())
		}
	}()
	testenv.Eventually(t, 10*time.Second, "a progress line", func() bool {
		return strings.Contains(out.String(), "msg=progress messages=120 findings_written=7")
	})
	close(done)
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("ReportProgress = %v, want nil after done", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReportProgress did not return after done was closed")
	}
}
