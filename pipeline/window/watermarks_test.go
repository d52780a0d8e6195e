package window

import (
	"fmt"
	"testing"
	"time"
)

// step is one thing that happens to a Watermarks in a table test.
type step struct {
	op      string // expect, msg (Observe then Delivered), deliver, wait, pause, resume, low
	p       int
	ts      int64
	d       time.Duration
	backlog bool
	want    int64 // low: the wanted low mark, when ok
	ok      bool
}

func expect(p int, backlog bool) step { return step{op: "expect", p: p, backlog: backlog} }
func msg(p int, ts int64) step        { return step{op: "msg", p: p, ts: ts} }
func deliver(p int) step              { return step{op: "deliver", p: p} }
func wait(d time.Duration) step       { return step{op: "wait", d: d} }
func pause() step                     { return step{op: "pause"} }
func resume() step                    { return step{op: "resume"} }
func low(want int64) step             { return step{op: "low", want: want, ok: true} }
func held() step                      { return step{op: "low"} }
func part(p int) Partition            { return Partition{Topic: "t", ID: p} }
func (s step) String() string         { return fmt.Sprintf("%s(p%d ts=%d d=%s)", s.op, s.p, s.ts, s.d) }
func steps(s ...step) []step          { return s }
func concat(ss ...[]step) (out []step) {
	for _, s := range ss {
		out = append(out, s...)
	}
	return out
}

// TestWatermarks: idleness, start-up grace, backlog and pauses, on a
// clock the test moves (IdleTimeout 15 s, StartupGrace 3 s).
func TestWatermarks(t *testing.T) {
	const idle, grace = 15 * time.Second, 3 * time.Second
	twoActive := steps(msg(0, 1000), msg(1, 500))
	tests := []struct {
		name  string
		steps []step
	}{
		{"nothing delivered", steps(held())},
		{"minimum over partitions", concat(twoActive, steps(low(500), msg(1, 2000), low(1000)))},
		{"event time never goes back per partition", steps(msg(0, 1000), msg(0, 400), low(1000))},
		{"partition without event time does not count", steps(msg(0, 1000), deliver(1), low(1000))},
		{"idle after the timeout, not at it", concat(twoActive, steps(wait(idle), msg(0, 3000), low(500), wait(time.Nanosecond), low(3000)))},
		{"all idle: no low mark", concat(twoActive, steps(wait(idle+time.Second), held()))},
		{"an event makes a partition active again", concat(twoActive, steps(wait(idle+time.Second), msg(0, 3000), low(3000), msg(1, 400), low(500)))},
		{"a delivery without event time does not", concat(twoActive, steps(wait(idle+time.Second), msg(0, 3000), low(3000), deliver(1), low(3000)))},
		// Issue 21: after a job restart, a partition of the metrics topic
		// held only the reporter's own records, which skewlens skips; it
		// kept delivering, and held the watermark at the old job's time.
		{"a partition of skipped records only goes idle", concat(twoActive, steps(
			wait(5*time.Second), msg(0, 6000), deliver(1), low(500),
			wait(5*time.Second), msg(0, 11000), deliver(1), low(500),
			wait(5*time.Second), msg(0, 16000), deliver(1), low(500),
			wait(time.Nanosecond), msg(0, 16001), deliver(1), low(16001)))},
		{"expected partition holds for the grace", steps(expect(0, false), expect(1, false), msg(0, 1000), held(),
			wait(grace), held(), wait(time.Nanosecond), low(1000))},
		{"grace starts with the first delivery", steps(expect(0, false), expect(1, false), wait(time.Minute), msg(0, 1000), held(),
			wait(grace+time.Nanosecond), low(1000))},
		{"expected partition's first message ends its wait", steps(expect(0, false), expect(1, false), msg(0, 1000), held(),
			msg(1, 400), low(400))},
		{"first message of any kind ends the wait", steps(expect(0, false), expect(1, false), msg(0, 1000), held(),
			deliver(1), low(1000))},
		{"backlog partition holds for the idle timeout", steps(expect(0, true), expect(1, true), msg(0, 1000), held(),
			wait(grace+time.Second), msg(0, 1500), held(), wait(idle-grace-time.Second), msg(0, 2000), held(), wait(time.Nanosecond), low(2000))},
		{"a backlog drained within the hold counts when the hold ends", steps(expect(0, true), expect(1, true), expect(2, true),
			msg(0, 1000), msg(1, 2000), held(), wait(idle), held(), wait(time.Nanosecond), low(1000),
			wait(idle-time.Nanosecond), low(1000), wait(time.Nanosecond), held())},
		{"idleness after an expired hold counts from delivery", steps(expect(0, false), expect(1, false), msg(0, 1000),
			wait(grace+time.Nanosecond), low(1000), wait(idle), msg(0, 2000), low(2000), wait(idle+time.Nanosecond), held())},
		{"expect again replaces", steps(expect(1, true), expect(1, false), msg(0, 1000), wait(grace+time.Nanosecond), low(1000))},
		{"unexpected silent partition never holds", steps(msg(0, 1000), wait(time.Hour), msg(0, 2000), low(2000))},
		{"a pause counts toward no idleness", concat(twoActive, steps(pause(), wait(time.Minute), resume(), wait(idle-time.Second),
			msg(0, 3000), low(500), wait(time.Second), low(500), wait(time.Nanosecond), low(3000)))},
		{"time stands still during a pause", concat(twoActive, steps(pause(), wait(time.Minute), msg(0, 3000), low(500), resume(), low(500)))},
		{"pauses nest", concat(twoActive, steps(pause(), pause(), wait(time.Minute), resume(), wait(time.Minute), resume(),
			msg(0, 3000), low(500)))},
		{"resume without pause does nothing", concat(twoActive, steps(resume(), wait(idle+time.Nanosecond), msg(0, 3000), low(3000)))},
		{"a pause holds the grace too", steps(expect(0, false), expect(1, false), msg(0, 1000), pause(), wait(time.Minute), resume(), held(),
			wait(grace+time.Nanosecond), low(1000))},
		{"a lagging partition within the timeout holds", concat(twoActive, steps(wait(10*time.Second), msg(0, 60000), low(500)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := time.Unix(1e9, 0)
			w, err := NewWatermarks(WatermarkConfig{IdleTimeout: idle, StartupGrace: grace}, func() time.Time { return clock })
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				switch s.op {
				case "expect":
					w.Expect(part(s.p), s.backlog)
				case "msg":
					w.Observe(part(s.p), s.ts)
					w.Delivered(part(s.p))
				case "deliver":
					w.Delivered(part(s.p))
				case "wait":
					clock = clock.Add(s.d)
				case "pause":
					w.Pause()
				case "resume":
					w.Resume()
				case "low":
					got, ok := w.Low()
					if ok != s.ok || ok && got != s.want {
						t.Fatalf("step %d: Low() = %d, %v; want %d, %v (steps %v)", i, got, ok, s.want, s.ok, tt.steps[:i+1])
					}
				default:
					t.Fatalf("step %d: unknown op %q", i, s.op)
				}
			}
		})
	}
}

// TestWatermarksWithoutClock: without a clock (a replay of files) no
// partition is idle or waits, and Observe says when a maximum rose.
func TestWatermarksWithoutClock(t *testing.T) {
	w, err := NewWatermarks(WatermarkConfig{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Expect(part(2), true) // never delivers: does not hold without a clock
	for _, c := range []struct {
		p      int
		ts     int64
		raised bool
		low    int64
	}{
		{0, 1000, true, 1000},
		{0, 900, false, 1000},
		{1, 5000, true, 1000},
		{0, 7000, true, 5000},
		{1, 5000, false, 5000},
	} {
		if got := w.Observe(part(c.p), c.ts); got != c.raised {
			t.Errorf("Observe(p%d, %d) = %v, want %v", c.p, c.ts, got, c.raised)
		}
		w.Pause() // no effect without a clock
		if low, ok := w.Low(); !ok || low != c.low {
			t.Errorf("after p%d@%d: Low() = %d, %v; want %d", c.p, c.ts, low, ok, c.low)
		}
	}
}

func TestWatermarkConfigValidate(t *testing.T) {
	if c := (WatermarkConfig{}).withDefaults(); c.Validate() != nil || c != DefaultWatermarkConfig() || c.IdleTimeout != 15*time.Second || c.StartupGrace != 3*time.Second {
		t.Fatalf("defaults: %+v", c)
	}
	for _, bad := range []WatermarkConfig{{IdleTimeout: -1}, {StartupGrace: -time.Second}} {
		if _, err := NewWatermarks(bad, time.Now); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestWatermarksHolder: Holder names the partition the watermark stands
// at, an expected one whose hold runs first.
func TestWatermarksHolder(t *testing.T) {
	clock := time.Unix(1e9, 0)
	w, err := NewWatermarks(WatermarkConfig{IdleTimeout: 15 * time.Second, StartupGrace: 3 * time.Second}, func() time.Time { return clock })
	if err != nil {
		t.Fatal(err)
	}
	check := func(step string, wantP int, wantTS int64, wantWaiting, wantOK bool) {
		t.Helper()
		p, ts, waiting, ok := w.Holder()
		if ok != wantOK || ok && (p != part(wantP) || ts != wantTS || waiting != wantWaiting) {
			t.Errorf("%s: Holder() = %v, %d, waiting %v, %v; want %v, %d, waiting %v, %v",
				step, p, ts, waiting, ok, part(wantP), wantTS, wantWaiting, wantOK)
		}
	}
	check("nothing delivered", 0, 0, false, false)
	w.Expect(part(2), false)
	w.Observe(part(0), 1000)
	w.Delivered(part(0))
	check("expected partition 2 holds", 2, 0, true, true)
	clock = clock.Add(4 * time.Second)
	w.Observe(part(1), 700)
	w.Delivered(part(1))
	check("the lowest active partition", 1, 700, false, true)
	clock = clock.Add(10 * time.Second)
	w.Observe(part(0), 2000)
	w.Delivered(part(0))
	w.Delivered(part(1)) // no event time: does not keep it active
	clock = clock.Add(6 * time.Second)
	check("partition 1 idle", 0, 2000, false, true)
}
