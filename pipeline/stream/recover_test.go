package stream

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// TestRunnerLogsSinkRecovery: a sink that is down for three writes makes
// the runner log a warning per failed attempt and, once a write goes
// through, one INFO "recovered" line with the write, the attempts and how
// long it failed.
func TestRunnerLogsSinkRecovery(t *testing.T) {
	lines := incident(t)
	src := &fakeSource{}
	for i, l := range lines {
		src.msgs = append(src.msgs, Message{Topic: "t", Offset: int64(i), Value: l})
	}
	eng, err := skew.New(skew.Config{})
	if err != nil {
		t.Fatal(err)
	}
	stage, _ := partitioned(eng, window.WatermarkConfig{}, time.Now)
	var logs testenv.Buffer
	sink := &fakeSink{failures: 3}
	r, err := New(Config{FlushInterval: 5 * time.Millisecond}, src, stage, sink, nil, &fakeDead{}, slog.New(slog.NewTextHandler(&logs, nil)), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := runToEnd(t, r); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if n := strings.Count(out, "writing to the sink failed"); n != 3 {
		t.Errorf("%d retry warnings, want 3:\n%s", n, out)
	}
	var recovered []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "msg=recovered") {
			recovered = append(recovered, l)
		}
	}
	if len(recovered) != 1 {
		t.Fatalf("%d recovered lines, want 1:\n%s", len(recovered), out)
	}
	for _, want := range []string{"level=INFO", `op="write `, "attempts=4", "failing_for=", `last_err="dial tcp 127.0.0.1:9000: connection refused"`} {
		if !strings.Contains(recovered[0], want) {
			t.Errorf("recovered line %q lacks %q", recovered[0], want)
		}
	}
}
