package stream

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv"
)

func TestReportProgress(t *testing.T) {
	r := &Runner{}
	r.messages.Store(120)
	r.written.Store(7)
	var out testenv.Buffer
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
