package stream

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// readClock is a clock the test sets; each reading signals reads, so
// that the test can wait until the runner's ticks have seen a time.
type readClock struct {
	mu    sync.Mutex
	t     time.Time
	reads chan struct{}
}

func (c *readClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case c.reads <- struct{}{}:
	default:
	}
	return c.t
}

func (c *readClock) peek() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *readClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// quietSource serves its messages, then waits for the runner's end, as a
// consumer that is caught up does; fails counts read failures it retried
// by itself (ReadFailures).
type quietSource struct {
	fakeSource
	fails atomic.Uint64
}

func (s *quietSource) Fetch(ctx context.Context) (Message, error) {
	s.mu.Lock()
	more := s.next < len(s.msgs)
	s.mu.Unlock()
	if more {
		return s.fakeSource.Fetch(ctx)
	}
	<-ctx.Done()
	return Message{}, ctx.Err()
}

func (s *quietSource) ReadFailures() uint64 { return s.fails.Load() }

// holdingSink records findings, signals each job_end on ends, and holds
// its first write until release is closed (when hold is set): a sink
// that is away.
type holdingSink struct {
	fakeSink
	hold    bool
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	ends    chan skew.Finding
}

func (s *holdingSink) Write(ctx context.Context, v uint64, fs []skew.Finding) error {
	if s.hold {
		s.once.Do(func() {
			close(s.entered)
			<-s.release
		})
	}
	if err := s.fakeSink.Write(ctx, v, fs); err != nil {
		return err
	}
	for _, f := range fs {
		if f.Kind == skew.KindJobEnd {
			s.ends <- f
		}
	}
	return nil
}

// TestRunnerQuietEndsLastJob: the only job reports up to 95 s of event
// time, then nothing reports, and the consumer waits. On the runner's
// fake wall clock, the job ends as stopped 65 s after its last report
// (its end window [150,160) is the first after 95 s plus job-end-after,
// 1 min: within job-end-after plus a window), and not a second earlier.
// Time the writer is held up (the sink away, the watermarks paused) does
// not count; a read failure the source retried starts the quiet over.
func TestRunnerQuietEndsLastJob(t *testing.T) {
	tests := []struct {
		name string
		hold bool // the sink holds its first write for 5 min
		// failAt: a read failure this long after the last report (0: none).
		failAt time.Duration
		want   time.Duration // the end, after the last report
	}{
		{name: "quiet", want: 65 * time.Second},
		{name: "the sink away", hold: true, want: 5*time.Minute + 65*time.Second},
		{name: "a read failure", failAt: 30 * time.Second, want: 95 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &quietSource{}
			for i := range 20 { // 0 s to 95 s
				ts := (quietBase + int64(i)*5000) * 1e6
				src.msgs = append(src.msgs, Message{Topic: "m", Offset: int64(i), Value: []byte(fmt.Sprintf(
					"taskmanager_job_task_busyTimeMsPerSecond,job_id=j1,job_name=orders,task_name=Sum,subtask_index=0 value=300 %d", ts))})
			}
			start := time.Unix(1e9, 0)
			clock := &readClock{t: start, reads: make(chan struct{}, 1)}
			eng, err := skew.New(skew.Config{EmitStats: true})
			if err != nil {
				t.Fatal(err)
			}
			stage, err := partitioned(eng, window.WatermarkConfig{}, clock.now)
			if err != nil {
				t.Fatal(err)
			}
			sink := &holdingSink{hold: tt.hold, entered: make(chan struct{}), release: make(chan struct{}), ends: make(chan skew.Finding, 1)}
			r, err := New(Config{FlushInterval: 5 * time.Millisecond}, src, stage, sink, nil, &fakeDead{}, nil, prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			r.now = clock.peek
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Error(err)
				}
			}()
			timeout := time.After(20 * time.Second)
			// ticks waits until the runner read the clock n times: its
			// ticks (every 5 ms) have seen the time set.
			ticks := func(n int) {
				t.Helper()
				for range n {
					select {
					case <-clock.reads:
					case <-timeout:
						t.Fatal("the runner stopped reading the clock")
					}
				}
			}
			noEnd := func(at time.Duration) {
				t.Helper()
				clock.set(start.Add(at))
				ticks(20)
				select {
				case f := <-sink.ends:
					t.Fatalf("job ended %s after its last report: %+v", at, f)
				default:
				}
			}
			if tt.hold {
				<-sink.entered
				clock.set(start.Add(5 * time.Minute))
				ticks(20)
				close(sink.release)
			}
			// Every message processed, and the writer done with the held
			// write (its pause over) before the clock moves again.
			for n, w := r.Progress(); n < int64(len(src.msgs)) || w == 0; n, w = r.Progress() {
				ticks(1)
			}
			ticks(20)
			if tt.failAt > 0 {
				noEnd(tt.failAt)
				src.fails.Add(1)
				ticks(20)
				noEnd(65 * time.Second) // would have ended by now
			}
			noEnd(tt.want - time.Second)
			clock.set(start.Add(tt.want))
			select {
			case f := <-sink.ends:
				if f.JobID != "j1" || f.JobEnd.Reason != skew.EndStopped || f.WindowStart != quietBase+150000 {
					t.Fatalf("job_end %+v in the window at %d", f.JobEnd, f.WindowStart-quietBase)
				}
			case <-timeout:
				t.Fatalf("no job_end %s after the last report", tt.want)
			}
			// The job's last window was written before its end.
			sink.mu.Lock()
			defer sink.mu.Unlock()
			last := false
			for _, w := range sink.writes {
				for _, f := range w {
					last = last || f.JobID == "j1" && f.WindowStart == quietBase+90000
				}
			}
			if !last {
				t.Error("the job's last window was not written")
			}
		})
	}
}

const quietBase = int64(1593004200000) // a window boundary
