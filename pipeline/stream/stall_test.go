package stream

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// paced serves its messages one per millisecond, so that the runner's
// flush ticker (every 5 ms here) checks the watermark while they arrive.
type paced struct{ fakeSource }

func (p *paced) Fetch(ctx context.Context) (Message, error) {
	// The pace is the scenario under test: a stream that arrives over
	// wall time, between the ticks of the runner's wall-clock ticker.
	time.Sleep(time.Millisecond)
	if err := ctx.Err(); err != nil {
		return Message{}, err // the fetcher's batch is due: it ends on its context
	}
	return p.fakeSource.Fetch(ctx)
}

// TestRunnerWatermarkHeldBy: a partition that keeps delivering records
// without an event time (issue 21: after a job restart, a partition of
// the metrics topic held only the reporter's own lines, which skewlens
// skips) goes idle after the idle timeout and no longer holds the
// watermark; a partition whose event time stands still while the others'
// move holds it, and the runner says which one, in its log and in
// skewlens_watermark_stalled_seconds.
func TestRunnerWatermarkHeldBy(t *testing.T) {
	const t0 = int64(1593004200000)
	sample := func(part int, off, ts int64) Message {
		return Message{Topic: "m", Partition: part, Offset: off, Value: []byte(fmt.Sprintf(
			`{"ts":%d,"job_id":"j","task_name":"t","key":"k%d"}`, ts, part))}
	}
	reporterLine := func(part int, off, ts int64) Message {
		return Message{Topic: "m", Partition: part, Offset: off, Value: []byte(fmt.Sprintf(
			`{"name":"skewlens.reporter.linesDropped","timestamp":%d,"value":0,"tags":{"host":"tm-1"}}`, ts))}
	}
	tests := []struct {
		name string
		// second returns partition 1's message of second i > 0.
		second    func(off, ts int64) Message
		wantMoves bool   // the watermark follows partition 0
		wantWarn  string // in the log, "" for no warning
	}{
		{"skipped records only: idle", func(off, ts int64) Message { return reporterLine(1, off, ts) }, true, ""},
		{"event time standing still: held, and told", func(off, _ int64) Message { return sample(1, off, t0) }, false, "held_by=m/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The watermarks read the clock twice per message processed
			// (Delivered, then the advance), so it moves 0.5 s per message
			// whatever the fetcher queued ahead; the runner peeks.
			clock := &fakeClock{t: time.Unix(1e9, 0), step: 250 * time.Millisecond}
			src := &paced{}
			src.msgs = append(src.msgs, sample(0, 0, t0), sample(1, 0, t0))
			for i := int64(1); i < 80; i++ {
				src.msgs = append(src.msgs, sample(0, i, t0+i*1000), tt.second(i, t0+i*1000))
			}
			eng, err := skew.New(skew.Config{})
			if err != nil {
				t.Fatal(err)
			}
			stage, err := partitioned(eng, window.WatermarkConfig{}, clock.now)
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			r, err := New(Config{FlushInterval: 5 * time.Millisecond}, src, stage, &fakeSink{}, nil, &fakeDead{}, log, prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			r.now = clock.peek
			if err := runToEnd(t, r); err != nil {
				t.Fatal(err)
			}
			wm := r.feeder.Watermark()
			if moved := wm > t0+30000; moved != tt.wantMoves {
				t.Errorf("watermark %d s after the first event, want it to follow partition 0: %v", (wm-t0)/1000, tt.wantMoves)
			}
			warned := strings.Contains(logs.String(), "watermark stands still")
			if warned != (tt.wantWarn != "") || tt.wantWarn != "" && !strings.Contains(logs.String(), tt.wantWarn) {
				t.Errorf("log, want warning %q:\n%s", tt.wantWarn, logs.String())
			}
			if stalled := testutil.ToFloat64(r.m.watermarkStalled); (stalled >= 30) != (tt.wantWarn != "") {
				t.Errorf("skewlens_watermark_stalled_seconds %g", stalled)
			}
		})
	}
}
