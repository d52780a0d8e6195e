package stream

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// opLog records the order of writes, state saves and commits.
type opLog struct {
	mu  sync.Mutex
	ops []string
}

func (l *opLog) add(op string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, op)
}

type loggedSource struct {
	*fakeSource
	log *opLog
}

func (s loggedSource) Commit(ctx context.Context, msgs ...Message) error {
	s.log.add("commit")
	return s.fakeSource.Commit(ctx, msgs...)
}

type loggedSink struct {
	fakeSink
	log *opLog
}

func (s *loggedSink) Write(ctx context.Context, v uint64, fs []skew.Finding) error {
	s.log.add("write")
	return s.fakeSink.Write(ctx, v, fs)
}

type fakeStore struct {
	log    *opLog
	group  string
	saves  [][]skew.JobState
	failed int // the first saves fail with a retryable error
}

func (s *fakeStore) SaveState(_ context.Context, group string, _ uint64, states []skew.JobState) error {
	s.log.add("state")
	if s.failed > 0 {
		s.failed--
		return context.DeadlineExceeded
	}
	s.group = group
	s.saves = append(s.saves, append([]skew.JobState(nil), states...))
	return nil
}

// TestRunnerSavesStateBetweenWriteAndCommit: each flush writes findings,
// then saves the engine state, then commits; the last saved state covers
// the windows written.
func TestRunnerSavesStateBetweenWriteAndCommit(t *testing.T) {
	lines := incident(t)
	ops := &opLog{}
	src := loggedSource{&fakeSource{}, ops}
	for i, l := range lines {
		src.msgs = append(src.msgs, Message{Topic: "flink", Partition: i % 2, Offset: int64(i / 2), Value: l})
	}
	store := &fakeStore{log: ops, failed: 2}
	eng, err := skew.New(skew.Config{})
	if err != nil {
		t.Fatal(err)
	}
	stage, _ := partitioned(eng, window.WatermarkConfig{}, time.Now)
	sink := &loggedSink{log: ops}
	r, err := New(Config{FlushInterval: 5 * time.Millisecond, Group: "g1"}, src, stage, sink, store, &fakeDead{}, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := runToEnd(t, r); err != nil {
		t.Fatal(err)
	}
	if len(store.saves) == 0 || store.group != "g1" {
		t.Fatalf("%d state saves for group %q", len(store.saves), store.group)
	}
	// Between a write and the next commit there must be a save (when the
	// write closed windows, which every write here does).
	seq := strings.Join(ops.ops, " ")
	for _, bad := range []string{"write commit", "write write"} {
		if strings.Contains(seq, bad) {
			t.Fatalf("operations in the wrong order (%q): %s", bad, seq)
		}
	}
	// The two failed saves are retried before anything is committed.
	// Whether the first flush also wrote findings depends on how far the
	// fetcher got in its first 5 ms (on a loaded machine: not far), so
	// only the order of retries and the first commit is fixed.
	if i, c := strings.Index(seq, "state state state"), strings.Index(seq, "commit"); i < 0 || c < i {
		t.Errorf("retried state saves not seen before the first commit: %s", seq)
	}
	last := store.saves[len(store.saves)-1]
	if want := stage.WindowStart(stage.Watermark()); len(last) != 1 || last[0].ClosedUpTo != want {
		t.Fatalf("last saved state %+v, want one job closed up to %d", last, want)
	}
}

// TestRunnerStartupHold: partition 1's records arrive after all of
// partition 0's. Listed (as a partition of the topics, or as one with a
// backlog), it holds the watermark until it delivers, and none of its
// records is late; unlisted, they are. A listed partition that never
// delivers stops holding after its grace, so windows still close.
func TestRunnerStartupHold(t *testing.T) {
	lines := incident(t)
	var msgs []Message
	for part := range 2 {
		for i, l := range lines {
			if i%2 == part {
				msgs = append(msgs, Message{Topic: "flink", Partition: part, Offset: int64(i / 2), Value: l})
			}
		}
	}
	both := []Partition{{Topic: "flink", ID: 0}, {Topic: "flink", ID: 1}}
	silent := append(both, Partition{Topic: "flink", ID: 2})
	type holdConfig struct {
		Config
		startDelay time.Duration
		wm         window.WatermarkConfig
	}
	for _, tc := range []struct {
		name         string
		cfg          holdConfig
		wantLate     bool
		wantFindings bool
	}{
		{"unlisted", holdConfig{}, true, true},
		{"listed", holdConfig{Config: Config{Partitions: both}}, false, true},
		{"backlog", holdConfig{Config: Config{Backlog: both}}, false, true},
		{"silent partition, grace over", holdConfig{Config: Config{Partitions: silent}, wm: window.WatermarkConfig{StartupGrace: time.Nanosecond, IdleTimeout: time.Hour}}, true, true},
		{"silent backlog partition holds", holdConfig{Config: Config{Partitions: silent, Backlog: silent}, wm: window.WatermarkConfig{IdleTimeout: time.Hour}}, false, false},
		// The first message comes 200 ms after Run starts (a consumer
		// group joining): the 100 ms grace starts only then.
		{"grace starts with the first message", holdConfig{Config{Partitions: both}, 200 * time.Millisecond, window.WatermarkConfig{StartupGrace: 100 * time.Millisecond}}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng, _ := skew.New(skew.Config{})
			stage, _ := partitioned(eng, tc.cfg.wm, time.Now)
			tc.cfg.FlushInterval = 5 * time.Millisecond
			sink := &fakeSink{}
			var src Source = &fakeSource{msgs: msgs}
			if tc.cfg.startDelay > 0 {
				src = &slowStart{Source: src, delay: tc.cfg.startDelay}
			}
			r, err := New(tc.cfg.Config, src, stage, sink, nil, &fakeDead{}, nil, prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			if err := runToEnd(t, r); err != nil {
				t.Fatal(err)
			}
			if late := stage.Counts().Late; (late > 0) != tc.wantLate {
				t.Fatalf("%d late records", late)
			}
			if got := len(sink.writes) > 0; got != tc.wantFindings {
				t.Fatalf("findings written: %v, want %v", got, tc.wantFindings)
			}
		})
	}
}

// slowStart delays the first Fetch, as joining a consumer group does.
type slowStart struct {
	Source
	delay   time.Duration
	started bool
}

func (s *slowStart) Fetch(ctx context.Context) (Message, error) {
	if !s.started {
		s.started = true
		// The delay is what the test is about: the grace must start
		// with the first message, not when Run started.
		time.Sleep(s.delay)
	}
	return s.Source.Fetch(ctx)
}

type advancingSink struct {
	fakeSink
	times []time.Time
}

func (s *advancingSink) Advance(_ context.Context, now time.Time) error {
	s.times = append(s.times, now)
	return nil
}

// TestRunnerAdvancesSink: a sink that implements Advancer hears of every
// window close, in order, up to the watermark's window.
func TestRunnerAdvancesSink(t *testing.T) {
	lines := incident(t)
	src := &fakeSource{}
	for i, l := range lines {
		src.msgs = append(src.msgs, Message{Topic: "flink", Offset: int64(i), Value: l})
	}
	eng, _ := skew.New(skew.Config{})
	stage, _ := partitioned(eng, window.WatermarkConfig{}, time.Now)
	sink := &advancingSink{}
	r, err := New(Config{FlushInterval: 5 * time.Millisecond}, src, stage, sink, nil, &fakeDead{}, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := runToEnd(t, r); err != nil {
		t.Fatal(err)
	}
	if len(sink.times) == 0 {
		t.Fatal("Advance never called")
	}
	for i := 1; i < len(sink.times); i++ {
		if !sink.times[i].After(sink.times[i-1]) {
			t.Fatalf("Advance went from %v to %v", sink.times[i-1], sink.times[i])
		}
	}
	if last, want := sink.times[len(sink.times)-1].UnixMilli(), stage.WindowStart(stage.Watermark()); last != want {
		t.Fatalf("last Advance %d, want the watermark's window %d", last, want)
	}
}

// pausingSink fails its first write and, meanwhile, moves the runner's
// clock a minute on: the sink was away for a minute.
type pausingSink struct {
	fakeSink
	clock *fakeClock
	once  bool
}

func (s *pausingSink) Write(ctx context.Context, v uint64, fs []skew.Finding) error {
	if !s.once {
		s.once = true
		s.clock.add(time.Minute)
		return context.DeadlineExceeded // retryable
	}
	return s.fakeSink.Write(ctx, v, fs)
}

// fakeClock moves by step (a microsecond when zero) on each reading of
// now, and as far as add says; peek reads it unmoved. The writer
// goroutine moves it while the actor reads it: it has a lock.
type fakeClock struct {
	mu   sync.Mutex
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(max(c.step, time.Microsecond))
	return c.t
}

func (c *fakeClock) peek() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestRunnerPauseMakesNoPartitionIdle: after the sink was away for longer
// than IdleTimeout, the partitions that deliver first do not make the
// others' records late.
func TestRunnerPauseMakesNoPartitionIdle(t *testing.T) {
	lines := incident(t)
	// Both partitions cover the whole incident, partition 1 delivering
	// about 20 s of event time behind partition 0 (within its watermark
	// hold, as a lagging partition does).
	var parts [2][]Message
	for i, l := range lines {
		p := i % 2
		parts[p] = append(parts[p], Message{Topic: "flink", Partition: p, Offset: int64(len(parts[p])), Value: l})
	}
	const lead = 400
	src := &fakeSource{msgs: append([]Message(nil), parts[0][:lead]...)}
	for j := range parts[1] {
		if lead+j < len(parts[0]) {
			src.msgs = append(src.msgs, parts[0][lead+j])
		}
		src.msgs = append(src.msgs, parts[1][j])
	}
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	eng, _ := skew.New(skew.Config{})
	stage, _ := partitioned(eng, window.WatermarkConfig{}, clock.now)
	sink := &pausingSink{clock: clock}
	r, err := New(Config{FlushInterval: time.Hour, MaxPending: 1, Backlog: []Partition{{Topic: "flink", ID: 0}, {Topic: "flink", ID: 1}}},
		src, stage, sink, nil, &fakeDead{}, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	r.now = clock.now
	if err := runToEnd(t, r); err != nil {
		t.Fatal(err)
	}
	if !sink.once || len(sink.writes) == 0 {
		t.Fatal("the sink never paused the runner")
	}
	if late := stage.Counts().Late; late != 0 {
		t.Fatalf("%d records late after the pause", late)
	}
}

// stallingSource stops delivering at message stallAt (as when the broker
// goes away). The first commit after the runner processed every message
// before the stall moves the clock a minute on (the broker restarting),
// waits until the actor, blocked on nothing, has ticked with the clock
// moved, and ends the stall.
type stallingSource struct {
	*fakeSource
	clock     *fakeClock
	stallAt   int
	processed func() int64
	ticks     chan struct{} // a value at each read of the runner's clock
	released  chan struct{}
	timedOut  atomic.Bool // no commit came during the stall
	once      sync.Once
}

func (s *stallingSource) release() { s.once.Do(func() { close(s.released) }) }

func (s *stallingSource) Fetch(ctx context.Context) (Message, error) {
	s.mu.Lock()
	at := s.next
	s.mu.Unlock()
	if at == s.stallAt {
		select {
		case <-s.released:
		case <-time.After(5 * time.Second):
			s.timedOut.Store(true)
			s.release()
		case <-ctx.Done():
			return Message{}, ctx.Err()
		}
	}
	return s.fakeSource.Fetch(ctx)
}

func (s *stallingSource) Commit(ctx context.Context, msgs ...Message) error {
	select {
	case <-s.released:
	default:
		if s.processed() >= int64(s.stallAt) {
			s.clock.add(time.Minute)
			// With no message to process, only the actor's ticks read
			// the runner's clock, a flush at most twice: three reads
			// after the minute passed hold a whole tick.
			select {
			case <-s.ticks: // may be from before the minute
			default:
			}
			for range 3 {
				select {
				case <-s.ticks:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			s.release()
		}
	}
	return s.fakeSource.Commit(ctx, msgs...)
}

// TestRunnerCommitStallMakesNoPartitionIdle: the writer waits a minute on
// a commit (a broker restart) while the fetcher gets nothing and the actor,
// not blocked on the writer, ticks. That minute counts toward no
// partition's idleness: when the broker is back and partition 0 delivers a
// burst first, partition 1's records are not late.
func TestRunnerCommitStallMakesNoPartitionIdle(t *testing.T) {
	lines := incident(t)
	var parts [2][]Message
	for i, l := range lines {
		p := i % 2
		parts[p] = append(parts[p], Message{Topic: "flink", Partition: p, Offset: int64(len(parts[p])), Value: l})
	}
	// Both partitions for a while, then (after the stall) partition 0
	// races ahead, then both again. The last record before the stall, on
	// a partition of its own, is bad: it holds no window, so its offset is
	// committed at the next flush, the one that waits out the stall.
	const before, lead = 600, 400
	var msgs []Message
	for j := range before {
		msgs = append(msgs, parts[0][j], parts[1][j])
	}
	msgs = append(msgs, Message{Topic: "flink", Partition: 2, Value: []byte("not a record")})
	msgs = append(msgs, parts[0][before:before+lead]...)
	for j := before; j < len(parts[1]); j++ {
		if j+lead < len(parts[0]) {
			msgs = append(msgs, parts[0][j+lead])
		}
		msgs = append(msgs, parts[1][j])
	}
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	src := &stallingSource{fakeSource: &fakeSource{msgs: msgs}, clock: clock, stallAt: 2*before + 1,
		ticks: make(chan struct{}, 1), released: make(chan struct{})}
	eng, _ := skew.New(skew.Config{})
	stage, _ := partitioned(eng, window.WatermarkConfig{}, clock.now)
	sink := &fakeSink{}
	r, err := New(Config{FlushInterval: 5 * time.Millisecond}, src, stage, sink, nil, &fakeDead{}, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	r.now = func() time.Time {
		select {
		case src.ticks <- struct{}{}:
		default:
		}
		return clock.now()
	}
	src.processed = func() int64 { n, _ := r.Progress(); return n }
	if err := runToEnd(t, r); err != nil {
		t.Fatal(err)
	}
	if src.timedOut.Load() {
		t.Fatal("no commit came during the stall")
	}
	if len(sink.writes) == 0 {
		t.Fatal("nothing written")
	}
	if late := stage.Counts().Late; late != 0 {
		t.Fatalf("%d records late after the commit stall", late)
	}
}
