package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// heldSource serves its messages, then blocks until ctx ends (a live
// topic with nothing new): only a stop ends a run on it. Commits are
// logged.
type heldSource struct {
	*fakeSource
	log *opLog
}

func (s heldSource) Fetch(ctx context.Context) (Message, error) {
	s.mu.Lock()
	more := s.next < len(s.msgs)
	s.mu.Unlock()
	if !more {
		<-ctx.Done()
		return Message{}, ctx.Err()
	}
	return s.fakeSource.Fetch(ctx)
}

func (s heldSource) Commit(ctx context.Context, msgs ...Message) error {
	s.log.add("commit")
	return s.fakeSource.Commit(ctx, msgs...)
}

// stallingSink blocks its first write until release is closed and then
// fails it with context.Canceled, as an insert cut short by the stop's
// cancellation does; later writes succeed unless down is set, in which
// case every write fails (retryably).
type stallingSink struct {
	log      *opLog
	entered  chan struct{} // closed when the first write starts
	release  chan struct{}
	down     bool
	mu       sync.Mutex
	first    []skew.Finding // what the stalled write carried
	attempts int
	writes   [][]skew.Finding
}

func (s *stallingSink) Write(_ context.Context, _ uint64, fs []skew.Finding) error {
	s.mu.Lock()
	s.attempts++
	n := s.attempts
	if n == 1 {
		s.first = slices.Clone(fs)
	}
	s.mu.Unlock()
	if n == 1 {
		close(s.entered)
		<-s.release
		s.log.add("write-failed")
		return fmt.Errorf("insert into findings: %w", context.Canceled)
	}
	if s.down {
		s.log.add("write-failed")
		return errors.New("dial tcp 127.0.0.1:9000: connection refused")
	}
	s.log.add("write")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes = append(s.writes, slices.Clone(fs))
	return nil
}

// findingKeys names each finding by window, job, task, subtask, kind and
// cause or key, sorted: equal for two runs that wrote the same findings.
func findingKeys(batches ...[]skew.Finding) []string {
	var out []string
	for _, fs := range batches {
		for i := range fs {
			f := &fs[i]
			sub := -1
			if f.SubtaskIndex != nil {
				sub = *f.SubtaskIndex
			}
			what := ""
			if f.Saturation != nil {
				what = f.Saturation.Cause
			}
			if f.HotKey != nil {
				what = f.HotKey.Key
			}
			out = append(out, fmt.Sprintf("%d %s %s #%d %s %s", f.WindowStart, f.JobID, f.TaskName, sub, f.Kind, what))
		}
	}
	slices.Sort(out)
	return out
}

// lastCommits returns the highest offset committed per partition.
func lastCommits(msgs []Message) map[int]int64 {
	out := map[int]int64{}
	for _, m := range msgs {
		if o, ok := out[m.Partition]; !ok || m.Offset > o {
			out[m.Partition] = m.Offset
		}
	}
	return out
}

// drainRunner returns a runner that hands the writer a job as soon as the
// first window closes and then (FlushInterval an hour) nothing more until
// it stops: the writer is busy with that job while the actor processes
// everything else.
func drainRunner(t *testing.T, src Source, sink Sink, cfg Config, log *slog.Logger) *Runner {
	t.Helper()
	eng, err := skew.New(skew.Config{})
	if err != nil {
		t.Fatal(err)
	}
	stage, err := partitioned(eng, window.WatermarkConfig{}, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	cfg.FlushInterval = time.Hour
	cfg.Retry = retry.Policy{MaxRetries: retry.Unlimited, MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}
	r, err := New(cfg, src, stage, sink, nil, &fakeDead{}, log, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// incidentMessages returns the short hot_key incident as messages on two
// partitions.
func incidentMessages(t *testing.T) []Message {
	t.Helper()
	var msgs []Message
	for i, l := range incident(t) {
		msgs = append(msgs, Message{Topic: "flink", Partition: i % 2, Offset: int64(i / 2), Value: l})
	}
	return msgs
}

// TestRunnerDrainsWhenStoppedDuringWrite: the run is stopped (by Stop, or
// by its context) while the sink holds the first write, which then fails
// with context.Canceled. The drain retries it on a context of its own and
// writes every finding due, the same findings a run that read the same
// messages to their end wrote, and commits the same offsets, each commit
// after the writes it depends on.
func TestRunnerDrainsWhenStoppedDuringWrite(t *testing.T) {
	msgs := incidentMessages(t)

	// The reference: the same messages, read to their end.
	ref := &fakeSink{}
	refSrc := &fakeSource{msgs: slices.Clone(msgs)}
	if err := runToEnd(t, drainRunner(t, refSrc, ref, Config{}, nil)); err != nil {
		t.Fatal(err)
	}
	want := findingKeys(ref.writes...)
	if len(want) == 0 {
		t.Fatal("the reference run wrote nothing")
	}

	for _, how := range []string{"Stop", "context"} {
		t.Run(how, func(t *testing.T) {
			ops := &opLog{}
			src := heldSource{&fakeSource{msgs: slices.Clone(msgs)}, ops}
			sink := &stallingSink{log: ops, entered: make(chan struct{}), release: make(chan struct{})}
			var logs testenv.Buffer
			r := drainRunner(t, src, sink, Config{}, slog.New(slog.NewTextHandler(&logs, nil)))
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			<-sink.entered
			testenv.Eventually(t, 10*time.Second, "every message processed", func() bool { n, _ := r.Progress(); return n == int64(len(msgs)) })
			if how == "Stop" {
				r.Stop()
			} else {
				cancel()
			}
			close(sink.release)
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Run did not return 10 s after the stop")
			}
			r.Stop() // safe after Run, twice
			if err != nil {
				t.Fatalf("Run = %v\n%s", err, logs.String())
			}
			got := findingKeys(sink.writes...)
			if !slices.Equal(got, want) {
				t.Fatalf("wrote %d findings, want the %d of the reference run\ngot  %q\nwant %q", len(got), len(want), got, want)
			}
			if len(sink.first) == 0 {
				t.Fatal("the stalled write carried no findings")
			}
			for _, k := range findingKeys(sink.first) {
				if _, ok := slices.BinarySearch(got, k); !ok {
					t.Fatalf("finding %q of the stalled write was not written again", k)
				}
			}
			if _, n := r.Progress(); n != int64(len(got)) {
				t.Fatalf("Progress says %d findings written, the sink has %d", n, len(got))
			}
			seq := strings.Join(ops.ops, " ")
			if !strings.HasPrefix(seq, "write-failed write") || strings.Index(seq, "commit") < strings.Index(seq, "write ") {
				t.Fatalf("operations %s: want the stalled write, its retry, and commits only after it", seq)
			}
			if gotC, wantC := lastCommits(src.commits), lastCommits(refSrc.commits); len(wantC) == 0 || fmt.Sprint(gotC) != fmt.Sprint(wantC) {
				t.Fatalf("committed up to %v, the reference run %v", gotC, wantC)
			}
			if !strings.Contains(logs.String(), "drained") || strings.Contains(logs.String(), "not written") {
				t.Fatalf("log does not say the drain finished:\n%s", logs.String())
			}
		})
	}
}

// TestRunnerDrainIsBoundedWhenSinkIsDown: the sink never comes back. A
// stop still ends Run within about DrainTimeout, with an error, nothing
// committed, and a log line that says how many findings were not written.
func TestRunnerDrainIsBoundedWhenSinkIsDown(t *testing.T) {
	msgs := incidentMessages(t)
	ops := &opLog{}
	src := heldSource{&fakeSource{msgs: msgs}, ops}
	sink := &stallingSink{log: ops, entered: make(chan struct{}), release: make(chan struct{}), down: true}
	var logs testenv.Buffer
	const drain = 200 * time.Millisecond
	r := drainRunner(t, src, sink, Config{DrainTimeout: drain}, slog.New(slog.NewTextHandler(&logs, nil)))
	done := make(chan error, 1)
	go func() { done <- r.Run(context.Background()) }()
	<-sink.entered
	testenv.Eventually(t, 10*time.Second, "every message processed", func() bool { n, _ := r.Progress(); return n == int64(len(msgs)) })
	close(sink.release)
	testenv.Eventually(t, 10*time.Second, "a retry", func() bool { sink.mu.Lock(); defer sink.mu.Unlock(); return sink.attempts >= 3 })
	start := time.Now()
	r.Stop()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return 5 s after the stop, with a 200 ms drain timeout")
	}
	if took := time.Since(start); took < drain {
		t.Errorf("Run returned %s after the stop, before the drain timeout %s", took, drain)
	}
	if err == nil || !strings.Contains(err.Error(), "drain timeout 200ms passed") {
		t.Fatalf("Run = %v, want the drain timeout", err)
	}
	if len(src.commits) != 0 || len(sink.writes) != 0 {
		t.Fatalf("committed %v, wrote %d batches, with the sink down", src.commits, len(sink.writes))
	}
	out := logs.String()
	if !strings.Contains(out, "findings not written") || strings.Contains(out, "findings=0 ") {
		t.Fatalf("log does not say what was not written:\n%s", out)
	}
}
