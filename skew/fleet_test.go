package skew

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// fleet is a synthetic Flink fleet reporting metrics only: jobs of five
// tasks, every task with the same parallelism, every subtask reporting
// each subtask-scoped metric once per window and every job its
// checkpoint metrics, as Flink's reporters do every 10 s. Its strings are
// made once, so that feeding it measures the engine, not the generator.
type fleet struct {
	tasks []fleetTask
	// metrics is what one subtask reports each window.
	metrics []MetricName
}

type fleetTask struct {
	jobID, jobName, taskID, taskName string
	hosts, attempts                  []string
	firstOfJob                       bool
}

// fleetTasksPerJob is the number of tasks of each fleet job.
const fleetTasksPerJob = 5

func newFleet(tasks, parallelism int) *fleet {
	f := &fleet{metrics: []MetricName{
		InputQueueLength, InPoolUsage, OutputQueueLength, OutPoolUsage,
		InputFloatingBuffersUsage, InputExclusiveBuffersUsage,
		BusyTimeMsPerSecond, BackPressuredTimeMsPerSecond, IdleTimeMsPerSecond,
		NumRecordsIn, NumRecordsInPerSecond, NumRecordsOut, NumRecordsOutPerSecond,
		CheckpointAlignmentTime, CheckpointStartDelayNanos,
		AccumulateBusyTimeMs, AccumulateBackPressuredTimeMs, AccumulateIdleTimeMs,
	}}
	hosts := make([]string, 2000) // TaskManagers, shared by many subtasks
	for i := range hosts {
		hosts[i] = fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	}
	h := 0
	for i := range tasks {
		job := i / fleetTasksPerJob
		t := fleetTask{
			jobID:      fmt.Sprintf("%032x", job*7919+1),
			jobName:    "fleet-job-" + strconv.Itoa(job),
			taskID:     fmt.Sprintf("%032x", i*104729+3),
			taskName:   fmt.Sprintf("KeyedProcess -> enrich %d", i%fleetTasksPerJob),
			firstOfJob: i%fleetTasksPerJob == 0,
		}
		for s := range parallelism {
			t.hosts = append(t.hosts, hosts[h%len(hosts)])
			t.attempts = append(t.attempts, fmt.Sprintf("%032x", (i*parallelism+s)*31+7))
			h++
		}
		f.tasks = append(f.tasks, t)
	}
	return f
}

// subtasks returns the number of subtasks of the fleet.
func (f *fleet) subtasks() int {
	n := 0
	for i := range f.tasks {
		n += len(f.tasks[i].attempts)
	}
	return n
}

// feed adds window w of the fleet to e and returns the number of metrics
// added. Every metric must be Accepted.
func (f *fleet) feed(tb testing.TB, e *Engine, w int) int {
	return f.feedTo(tb, e, w, nil)
}

// record adds window 0 of the fleet to e, and appends each of its
// metrics to *dst with strings of their own.
func (f *fleet) record(tb testing.TB, e *Engine, dst *[]Metric) {
	f.feedTo(tb, e, 0, dst)
	for i := range *dst {
		m := &(*dst)[i]
		for _, p := range []*string{&m.Host, &m.TMID, &m.JobID, &m.JobName, &m.TaskID, &m.TaskName, &m.TaskAttemptID} {
			*p = strings.Clone(*p)
		}
	}
}

func (f *fleet) feedTo(tb testing.TB, e *Engine, w int, dst *[]Metric) int {
	add := func(m *Metric) Verdict {
		if dst != nil {
			*dst = append(*dst, *m)
		}
		return e.AddMetric(m)
	}
	ts := t0 + int64(w)*10000 + 5000
	n := 0
	var m Metric
	for i := range f.tasks {
		t := &f.tasks[i]
		if t.firstOfJob {
			m = Metric{TS: ts, JobID: t.jobID, JobName: t.jobName, Subtask: -1}
			for _, k := range [...]MetricName{LastCheckpointDuration, NumberOfFailedCheckpoints, LastCheckpointSize} {
				m.Name, m.Value = k, 1000
				if v := add(&m); v != Accepted {
					tb.Fatalf("job metric %v: %v", k, v)
				}
				n++
			}
		}
		m = Metric{TS: ts, JobID: t.jobID, JobName: t.jobName, TaskID: t.taskID, TaskName: t.taskName}
		for s := range t.attempts {
			m.Subtask, m.Host, m.TaskAttemptID = int32(s), t.hosts[s], t.attempts[s]
			busy := float64(300 + (s*37+i)%400)
			for _, k := range f.metrics {
				m.Name, m.HasRate = k, false
				switch k {
				case BusyTimeMsPerSecond:
					m.Value = busy
				case IdleTimeMsPerSecond:
					m.Value = 1000 - busy
				case AccumulateBusyTimeMs:
					m.Value = busy * float64(w+1) * 10
				case AccumulateIdleTimeMs:
					m.Value = (1000 - busy) * float64(w+1) * 10
				case NumRecordsIn, NumRecordsOut:
					m.Value = float64(1000 * (w + 1) * (s + 1))
				case NumRecordsInPerSecond, NumRecordsOutPerSecond:
					m.Value, m.Rate, m.HasRate = float64(1000*(w+1)*(s+1)), float64(100*(s+1)), true
				default:
					m.Value = float64(s % 7)
				}
				if v := add(&m); v != Accepted {
					tb.Fatalf("metric %v of task %d subtask %d: %v", k, i, s, v)
				}
				n++
			}
		}
	}
	return n
}

// heapInUse returns the heap in use after a full collection.
func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// fleetHeap feeds windows [0, windows) of f into a new engine, closing
// each window before the next one's events but the last, so that one
// window is open, and returns the engine's heap per subtask then, and the
// engine.
func fleetHeap(tb testing.TB, f *fleet, windows int) (perSubtask float64, e *Engine) {
	before := heapInUse()
	e, err := New(Config{})
	if err != nil {
		tb.Fatal(err)
	}
	for w := range windows {
		f.feed(tb, e, w)
		if fs := e.Advance(t0+int64(w)*10000, nil); len(fs) != 0 {
			tb.Fatalf("window %d: %d findings on a healthy fleet: %s", w, len(fs), dump(fs[:1]))
		}
	}
	if e.OpenWindows() != 1 {
		tb.Fatalf("%d windows open, want 1", e.OpenWindows())
	}
	after := heapInUse()
	runtime.KeepAlive(e)
	return (float64(after) - float64(before)) / float64(f.subtasks()), e
}

// maxHeapPerSubtaskWindow is issue 12's bound on the engine's heap per
// subtask and open window on a fleet that reports metrics only.
const maxHeapPerSubtaskWindow = 2048

// TestFleetMemoryPerSubtask checks the bound on both ends of issue 12's
// range of shapes (many small tasks, fewer wide ones) at 100k subtasks,
// and on fleets of 4000 under -short: the state is per subtask, so the
// figure hardly depends on the fleet's size. All of the
// engine's heap counts, with one window open after a few closed ones
// (the cross-window history and the free lists are then in place), so
// this is the cost of a subtask with one open window, the strictest
// reading of the bound.
func TestFleetMemoryPerSubtask(t *testing.T) {
	shapes := []struct{ tasks, parallelism int }{{25000, 4}, {2500, 40}}
	if testing.Short() {
		shapes = []struct{ tasks, parallelism int }{{1000, 4}, {100, 40}}
	}
	for _, sh := range shapes {
		t.Run(fmt.Sprintf("%dx%d", sh.tasks, sh.parallelism), func(t *testing.T) {
			f := newFleet(sh.tasks, sh.parallelism)
			per, e := fleetHeap(t, f, 4)
			t.Logf("%d subtasks: %.0f bytes of heap per subtask and open window", f.subtasks(), per)
			if per > maxHeapPerSubtaskWindow {
				t.Fatalf("%.0f bytes of heap per subtask and open window, more than %d", per, maxHeapPerSubtaskWindow)
			}
			runtime.KeepAlive(e)
		})
	}
}

// BenchmarkFleetMetricsOnly feeds a metrics-only fleet of 100k subtasks
// in both of issue 12's shapes, one window per iteration (every subtask's
// metrics, then the watermark that closes the previous window). It
// reports the time per metric (wall clock, and CPU time of the whole
// process, which a shared machine disturbs less) and the engine's heap
// per subtask and open window at the end, after a collection.
func BenchmarkFleetMetricsOnly(b *testing.B) {
	for _, sh := range []struct{ tasks, parallelism int }{{25000, 4}, {2500, 40}} {
		b.Run(fmt.Sprintf("%dx%d", sh.tasks, sh.parallelism), func(b *testing.B) {
			f := newFleet(sh.tasks, sh.parallelism)
			before := heapInUse()
			e, err := New(Config{})
			if err != nil {
				b.Fatal(err)
			}
			// Two windows first, so that the loop runs in the steady state
			// (history and free lists in place).
			f.feed(b, e, 0)
			e.Advance(t0, nil)
			f.feed(b, e, 1)
			e.Advance(t0+10000, nil)
			w, metrics := 2, 0
			cpu := cpuTime()
			for b.Loop() {
				metrics += f.feed(b, e, w)
				e.Advance(t0+int64(w)*10000, nil)
				w++
			}
			cpu = cpuTime() - cpu
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(metrics), "ns/metric")
			if cpu > 0 {
				// All of the process's threads, the collector's too.
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(metrics), "cpu-ns/metric")
			}
			b.ReportMetric(float64(metrics)/b.Elapsed().Seconds(), "metrics/s")
			after := heapInUse()
			b.ReportMetric((float64(after)-float64(before))/float64(f.subtasks()*e.OpenWindows()), "B/subtask-window")
			runtime.KeepAlive(e)
		})
	}
}

// TestFleetForgotten: a fleet that stops reporting, with key samples in
// some tasks, leaves nothing behind once its windows closed and its
// history expired, while another job keeps the windows moving: its jobs
// and tasks are forgotten, and the free lists shrink to what the other
// job uses.
func TestFleetForgotten(t *testing.T) {
	f := newFleet(1000, 8)
	small := newFleet(1, 2)
	small.tasks[0].jobID = "another job"
	cfg := Config{HistoryWindows: 5, RotationLookbackWindows: 2}
	before := heapInUse()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := KeySample{Weight: 1, SampleRate: 1, Parallelism: 8, Subtask: -1}
	for w := range 3 {
		f.feed(t, e, w)
		small.feed(t, e, w)
		// Key samples for one task in ten, by the tasks' IDs.
		for i := 0; i < len(f.tasks); i += 10 {
			ft := &f.tasks[i]
			s.TS, s.JobID, s.TaskID, s.TaskName = t0+int64(w)*10000+1, ft.jobID, ft.taskID, ft.taskName
			for k := range 50 {
				s.Key = "user-" + strconv.Itoa(k)
				if v := e.AddSample(&s); v != Accepted {
					t.Fatalf("sample: %v", v)
				}
			}
		}
		e.Advance(t0+int64(w)*10000, nil)
	}
	if len(e.jobs) != 201 {
		t.Fatalf("%d jobs, want 201", len(e.jobs))
	}
	// The last fleet window closes: its task windows and sketches go to
	// the free lists, bounded by what that window used; the small job's
	// task keeps its window as its spare, as each fleet task has one.
	small.feed(t, e, 3)
	e.Advance(t0+3*10000, nil)
	if len(e.free) != 1000 || len(e.sketches) != 100 {
		t.Fatalf("after the fleet's last window: %d free task windows, %d free sketches; want 1000 and 100", len(e.free), len(e.sketches))
	}
	// The next window had the small job's task only and no samples.
	small.feed(t, e, 4)
	e.Advance(t0+4*10000, nil)
	if len(e.free) != 1 || len(e.sketches) != 0 {
		t.Fatalf("after a window of one task: %d free task windows, %d free sketches; want 1 and 0", len(e.free), len(e.sketches))
	}
	for w := 5; w < 12; w++ {
		small.feed(t, e, w)
		e.Advance(t0+int64(w)*10000, nil)
	}
	if len(e.jobs) != 1 || e.jobs["another job"] == nil {
		t.Fatalf("%d jobs after the fleet's history expired, want only the other one", len(e.jobs))
	}
	after := heapInUse()
	per := (float64(after) - float64(before)) / float64(f.subtasks())
	t.Logf("%.1f bytes of heap per forgotten subtask", per)
	if per > 16 {
		t.Fatalf("%.1f bytes of heap per forgotten subtask: the fleet was not freed", per)
	}
	runtime.KeepAlive(e)
}

// BenchmarkAddMetric times AddMetric alone, on a fleet of 400 subtasks
// small enough to stay in the caches: one op is one metric, and the
// watermark closes each window once all of its metrics are in (its cost
// is spread over the window's metrics). The events are made beforehand,
// with strings of their own, as a decoder hands them over, and carry the
// partition they were read from, as the pipeline stamps them.
func BenchmarkAddMetric(b *testing.B) {
	f := newFleet(100, 4)
	rec, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	var window []Metric
	f.record(b, rec, &window)
	for i := range window {
		window[i].Source = Source{Topic: "flink-metrics", Partition: int32(len(window[i].JobID) % 4)}
	}
	e, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	w, i := 0, 0
	cpu := cpuTime()
	for b.Loop() {
		m := &window[i]
		saved := m.TS
		m.TS += int64(w) * 10000
		if e.AddMetric(m) != Accepted {
			b.Fatal("rejected")
		}
		m.TS = saved
		if i++; i == len(window) {
			e.Advance(t0+int64(w)*10000, nil)
			i = 0
			w++
		}
	}
	if cpu = cpuTime() - cpu; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// TestAddMetricCaches: AddMetric remembers the last task, window and
// window start; whatever comes in between (key samples of another task,
// other tasks' metrics, a closed window), each metric lands in its own
// task's window. Task "a" reports busy 900 ms/s and "b" 100 on two
// subtasks; the subtask_stats rows must say exactly that.
func TestAddMetricCaches(t *testing.T) {
	metric := func(task string, sub int) func(*Engine, int64) Verdict {
		return func(e *Engine, ws int64) Verdict {
			busy := 900.0
			if task == "b" {
				busy = 100
			}
			m := Metric{TS: ws + 5000 + int64(sub), JobID: "j", TaskName: task, Subtask: int32(sub), Name: BusyTimeMsPerSecond, Value: busy}
			return e.AddMetric(&m)
		}
	}
	sample := func(task string) func(*Engine, int64) Verdict {
		return func(e *Engine, ws int64) Verdict {
			s := KeySample{TS: ws + 1, JobID: "j", TaskName: task, Key: "k", Weight: 1, SampleRate: 1, Subtask: 0}
			return e.AddSample(&s)
		}
	}
	for _, tc := range []struct {
		name   string
		events []func(*Engine, int64) Verdict
	}{
		{"grouped", []func(*Engine, int64) Verdict{metric("a", 0), metric("a", 1), metric("b", 0), metric("b", 1)}},
		{"alternating", []func(*Engine, int64) Verdict{metric("a", 0), metric("b", 0), metric("a", 1), metric("b", 1)}},
		{"sample between", []func(*Engine, int64) Verdict{metric("a", 0), sample("b"), metric("b", 0), metric("a", 1), sample("a"), metric("b", 1)}},
		{"samples first", []func(*Engine, int64) Verdict{sample("b"), sample("a"), metric("b", 0), metric("b", 1), metric("a", 0), metric("a", 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := New(Config{EmitStats: true})
			if err != nil {
				t.Fatal(err)
			}
			var out []Finding
			for w := range 3 {
				ws := t0 + int64(w)*10000
				for i, ev := range tc.events {
					if v := ev(e, ws); v != Accepted {
						t.Fatalf("window %d event %d: %v", w, i, v)
					}
				}
				out = e.Advance(ws+10000, out)
			}
			got := map[string]int{}
			for _, f := range out {
				if f.Kind != KindSubtaskStats {
					continue
				}
				want := 900.0
				if f.TaskName == "b" {
					want = 100
				}
				if f.Stats.BusyMsPerSecond != want {
					t.Errorf("window %d task %s subtask %d: busy %v, want %v", f.WindowStart, f.TaskName, *f.SubtaskIndex, f.Stats.BusyMsPerSecond, want)
				}
				got[f.TaskName]++
			}
			if got["a"] != 6 || got["b"] != 6 {
				t.Fatalf("stats rows per task %v, want 6 each (2 subtasks, 3 windows)", got)
			}
		})
	}
}
