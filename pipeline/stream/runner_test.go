package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/pipeline/decode"
	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// fakeSource serves a fixed list of messages, then blocks; it records
// commits. Unit-test fakes only: the integration tests use a real broker.
type fakeSource struct {
	mu      sync.Mutex
	msgs    []Message
	next    int
	commits []Message
}

func (f *fakeSource) Fetch(ctx context.Context) (Message, error) {
	f.mu.Lock()
	if f.next < len(f.msgs) {
		m := f.msgs[f.next]
		f.next++
		f.mu.Unlock()
		return m, nil
	}
	f.mu.Unlock()
	return Message{}, io.EOF
}

func (f *fakeSource) Commit(_ context.Context, msgs ...Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.commits = append(f.commits, msgs...)
	return nil
}

type fakeSink struct {
	mu     sync.Mutex
	writes [][]skew.Finding
	fail   error
	// failures makes the first writes fail with a retryable error.
	failures int
}

func (s *fakeSink) Write(_ context.Context, _ uint64, fs []skew.Finding) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if s.failures > 0 {
		s.failures--
		return errors.New("dial tcp 127.0.0.1:9000: connection refused")
	}
	s.writes = append(s.writes, append([]skew.Finding(nil), fs...))
	return nil
}

type fakeDead struct{ reasons []string }

func (d *fakeDead) Send(_ context.Context, _ Message, reason, _ string) error {
	d.reasons = append(d.reasons, reason)
	return nil
}

// incident returns the lines of a short hot_key incident.
func incident(t *testing.T) [][]byte {
	t.Helper()
	g, err := simulate.New(simulate.Config{Scenario: simulate.HotKey, Duration: 2 * time.Minute, SamplesPerInterval: 300})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := g.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(b.Bytes(), []byte("\n")), []byte("\n"))
}

// partitioned returns a window feeder for a runner, with the default window
// configuration and watermarks on clock.
func partitioned(eng *skew.Engine, wcfg window.WatermarkConfig, clock func() time.Time) (*window.Feeder, error) {
	wms, err := window.NewWatermarks(wcfg, clock)
	if err != nil {
		return nil, err
	}
	return window.NewPartitioned(window.Config{}, eng, wms)
}

func newRunner(t *testing.T, src Source, sink Sink, dead DeadLetters) *Runner {
	t.Helper()
	eng, err := skew.New(skew.Config{})
	if err != nil {
		t.Fatal(err)
	}
	stage, _ := partitioned(eng, window.WatermarkConfig{}, time.Now)
	r, err := New(Config{FlushInterval: 5 * time.Millisecond}, src, stage, sink, nil, dead, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// runToEnd runs r until the source is exhausted, and checks that Stop is
// safe afterwards, twice.
func runToEnd(t *testing.T, r *Runner) error {
	t.Helper()
	err := r.Run(context.Background())
	r.Stop()
	r.Stop()
	return err
}

func TestRunnerMatchesReplayAndCommitsSafely(t *testing.T) {
	lines := incident(t)
	src := &fakeSource{}
	for i, l := range lines {
		// Two partitions, as two reporters would write them.
		src.msgs = append(src.msgs, Message{Topic: "flink", Partition: i % 2, Offset: int64(i / 2), Value: l, Time: time.UnixMilli(1593004200000)})
	}
	sink := &fakeSink{}
	r := newRunner(t, src, sink, &fakeDead{})
	if err := runToEnd(t, r); err != nil {
		t.Fatal(err)
	}
	var got []skew.Finding
	for _, w := range sink.writes {
		got = append(got, w...)
	}
	// The same lines through the decoder and window stage that analyze
	// uses, without the final flush of open windows (the runner leaves
	// those to be recomputed from Kafka).
	eng, _ := skew.New(skew.Config{})
	stage, _ := window.New(window.Config{}, eng)
	d := decode.NewDecoder(decode.FormatAuto)
	var want []skew.Finding
	for _, l := range lines {
		switch k, err := d.Decode(l); {
		case err != nil:
			t.Fatal(err)
		case k == decode.KindKeySample:
			want, _ = stage.Sample(&d.Sample, want)
		case k == decode.KindMetric:
			want, _ = stage.Metric(&d.Metric, want)
		}
	}
	if len(got) == 0 || len(got) != len(want) {
		t.Fatalf("runner wrote %d findings, replay %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Kind != want[i].Kind || got[i].WindowStart != want[i].WindowStart || got[i].TaskName != want[i].TaskName {
			t.Fatalf("finding %d differs: %+v vs %+v", i, got[i], want[i])
		}
	}
	// Commits: per partition, increasing, and never past an offset whose
	// window was still open at the end (nothing after the last written
	// window may be committed).
	last := map[int]int64{}
	for _, c := range src.commits {
		if c.Offset < last[c.Partition] {
			t.Fatalf("commit went backwards: %+v", c)
		}
		last[c.Partition] = c.Offset
	}
	wm := stage.Watermark()
	closedUpTo := stage.WindowStart(wm)
	for _, m := range src.msgs {
		if _, err := d.Decode(m.Value); err != nil {
			t.Fatal(err)
		}
		ts := d.Sample.TS
		if !bytes.Contains(m.Value, []byte(`"key":`)) {
			ts = d.Metric.TS
		}
		if ts >= closedUpTo && m.Offset <= last[m.Partition] {
			t.Fatalf("offset %d/%d (ts %d in an open window) was committed (up to %d)", m.Partition, m.Offset, ts, last[m.Partition])
		}
	}
	if len(src.commits) == 0 {
		t.Fatal("nothing committed")
	}
}

func TestRunnerDeadLettersAndKeepsGoing(t *testing.T) {
	src := &fakeSource{msgs: []Message{
		{Topic: "t", Offset: 0, Value: []byte(`{"ts":1593004201000,"job_id":"j","task_name":"t","key":"a"}`)},
		{Topic: "t", Offset: 1, Value: []byte("{\"ts\":oops}\nnot a metric at all")},
		{Topic: "t", Offset: 2, Value: []byte(`{"ts":1593004202000,"job_id":"j","task_name":"t","key":"b"}`)},
	}}
	dead := &fakeDead{}
	r := newRunner(t, src, &fakeSink{}, dead)
	if err := runToEnd(t, r); err != nil {
		t.Fatal(err)
	}
	if strings.Join(dead.reasons, ",") != "invalid_json,bad_line" {
		t.Fatalf("dead letters %v", dead.reasons)
	}
	if c := r.feeder.Counts(); c.Samples != 2 {
		t.Fatalf("counts %+v: good records around the bad one were lost", c)
	}
}

func TestRunnerSinkFailureCommitsNothing(t *testing.T) {
	lines := incident(t)
	src := &fakeSource{}
	for i, l := range lines {
		src.msgs = append(src.msgs, Message{Topic: "t", Offset: int64(i), Value: l})
	}
	boom := errors.New("table skewlens.findings does not exist")
	r := newRunner(t, src, &fakeSink{fail: retry.Permanent("", boom)}, &fakeDead{})
	err := r.Run(context.Background())
	if !errors.Is(err, boom) {
		t.Fatalf("Run = %v, want the sink error", err)
	}
	if len(src.commits) != 0 {
		t.Fatalf("committed %v although nothing was written", src.commits)
	}
}

// TestRunnerRetriesUnavailableSink: a sink that is down for a while makes
// the runner wait and retry; nothing is lost and it carries on.
func TestRunnerRetriesUnavailableSink(t *testing.T) {
	lines := incident(t)
	src := &fakeSource{}
	for i, l := range lines {
		src.msgs = append(src.msgs, Message{Topic: "t", Offset: int64(i), Value: l})
	}
	sink := &fakeSink{failures: 3}
	r := newRunner(t, src, sink, &fakeDead{})
	if err := runToEnd(t, r); err != nil {
		t.Fatal(err)
	}
	if sink.failures != 0 || len(sink.writes) == 0 {
		t.Fatalf("failures left %d, writes %d", sink.failures, len(sink.writes))
	}
	_, written := r.Progress()
	n := 0
	for _, w := range sink.writes {
		n += len(w)
	}
	if int64(n) != written || n == 0 {
		t.Fatalf("written %d, sink got %d", written, n)
	}
	if len(src.commits) == 0 {
		t.Fatal("nothing committed after the sink recovered")
	}
}

// TestRunnerWatermarkIsMinOverPartitions: both partitions have delivered,
// then partition 0 delivers a minute of samples before partition 1 delivers
// more (as when a backlog drains after a pause). Partition 1's samples must
// not be late, because the watermark follows the slowest partition.
//
// A partition that has never delivered does not hold the watermark yet;
// knowing every assigned partition needs the consumer group's assignment.
func TestRunnerWatermarkIsMinOverPartitions(t *testing.T) {
	src := &fakeSource{}
	sample := func(part int, off, ts int64) Message {
		return Message{Topic: "s", Partition: part, Offset: off, Value: []byte(fmt.Sprintf(
			`{"ts":%d,"job_id":"j","task_name":"t","key":"k%d"}`, ts, part))}
	}
	src.msgs = append(src.msgs, sample(0, 0, 1593004200000), sample(1, 0, 1593004200000))
	for i := 1; i < 60; i++ {
		src.msgs = append(src.msgs, sample(0, int64(i), 1593004200000+int64(i)*1000))
	}
	for i := 1; i < 60; i++ {
		src.msgs = append(src.msgs, sample(1, int64(i), 1593004200000+int64(i)*1000))
	}
	r := newRunner(t, src, &fakeSink{}, &fakeDead{})
	if err := runToEnd(t, r); err != nil {
		t.Fatal(err)
	}
	if c := r.feeder.Counts(); c.Late != 0 || c.Samples != 120 {
		t.Fatalf("counts %+v: the slow partition's samples were late", c)
	}
}
