package stream

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// TestSavedJobsGauge: each save sets the saved jobs' last-seen gauges in
// seconds and removes the series of jobs no longer saved.
func TestSavedJobsGauge(t *testing.T) {
	tests := []struct {
		name  string
		saves [][]skew.JobState
		want  map[string]float64
	}{
		{"one save", [][]skew.JobState{{{JobID: "a", LastSeen: 10_000}, {JobID: "b", LastSeen: 20_500}}},
			map[string]float64{"a": 10, "b": 20.5}},
		{"a later save moves a gauge", [][]skew.JobState{{{JobID: "a", LastSeen: 10_000}}, {{JobID: "a", LastSeen: 30_000}}},
			map[string]float64{"a": 30}},
		{"a forgotten job loses its series", [][]skew.JobState{{{JobID: "a", LastSeen: 10_000}, {JobID: "b", LastSeen: 10_000}}, {{JobID: "b", LastSeen: 40_000}}},
			map[string]float64{"b": 40}},
		{"an ended job's tombstone removes its series", [][]skew.JobState{{{JobID: "a", LastSeen: 10_000}, {JobID: "b", LastSeen: 10_000}}, {{JobID: "b", LastSeen: 40_000}, {JobID: "a", Ended: true}}},
			map[string]float64{"b": 40}},
		{"an empty save removes every series", [][]skew.JobState{{{JobID: "a", LastSeen: 10_000}}, nil},
			map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := newMetrics(prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.saves {
				m.savedJobs(s)
			}
			if n := testutil.CollectAndCount(m.jobLastSeen); n != len(tt.want) {
				t.Errorf("%d series, want %d", n, len(tt.want))
			}
			for id, v := range tt.want {
				if got := testutil.ToFloat64(m.jobLastSeen.WithLabelValues(id)); got != v {
					t.Errorf("job %s: %v, want %v", id, got, v)
				}
			}
		})
	}
}

// TestRunnerExportsJobLastSeen runs an incident through a Runner with a
// state store: the gauge of its job is the last saved state's LastSeen.
func TestRunnerExportsJobLastSeen(t *testing.T) {
	lines := incident(t)
	src := &fakeSource{}
	for i, l := range lines {
		src.msgs = append(src.msgs, Message{Topic: "flink", Partition: 0, Offset: int64(i), Value: l})
	}
	store := &fakeStore{log: &opLog{}}
	eng, err := skew.New(skew.Config{})
	if err != nil {
		t.Fatal(err)
	}
	stage, _ := partitioned(eng, window.WatermarkConfig{}, time.Now)
	reg := prometheus.NewRegistry()
	r, err := New(Config{FlushInterval: 5 * time.Millisecond}, src, stage, &fakeSink{}, store, &fakeDead{}, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	if err := runToEnd(t, r); err != nil {
		t.Fatal(err)
	}
	if len(store.saves) == 0 {
		t.Fatal("no state saved")
	}
	last := store.saves[len(store.saves)-1]
	if len(last) == 0 {
		t.Fatal("the last save holds no job")
	}
	if n := testutil.CollectAndCount(reg, "skewlens_job_last_seen_window_seconds"); n != len(last) {
		t.Errorf("%d series of skewlens_job_last_seen_window_seconds, want one per saved job: %d", n, len(last))
	}
	for _, s := range last {
		if s.LastSeen <= 0 {
			t.Fatalf("job %s saved with LastSeen %d", s.JobID, s.LastSeen)
		}
		if got, want := testutil.ToFloat64(r.m.jobLastSeen.WithLabelValues(s.JobID)), float64(s.LastSeen)/1000; got != want {
			t.Errorf("job %s: gauge %v, want the saved LastSeen %v s", s.JobID, got, want)
		}
	}
}

// TestStoppedJobsGauge: a run that ended as stopped gets a series with
// its last event time (a restarted one none); the series goes an hour
// later, or when more than stoppedMax are newer; a run written again
// after a replay keeps its series from the later write.
func TestStoppedJobsGauge(t *testing.T) {
	end := func(id, reason string, last int64) skew.Finding {
		return skew.Finding{Kind: skew.KindJobEnd, JobID: id, JobName: "n-" + id, JobEnd: &skew.JobEnd{Reason: reason, LastEventAt: last}}
	}
	s := newStoppedJobs()
	t0 := time.Unix(1e9, 0)
	s.written([]skew.Finding{end("a", skew.EndStopped, 95_000), end("b", skew.EndRestarted, 90_000), {Kind: "hot_key", JobID: "c"}}, t0)
	if n := testutil.CollectAndCount(s.gauge); n != 1 {
		t.Fatalf("%d series after a stopped and a restarted run, want 1", n)
	}
	if got := testutil.ToFloat64(s.gauge.WithLabelValues("a", "n-a")); got != 95 {
		t.Fatalf("a: %v, want its last event 95 s", got)
	}
	s.written([]skew.Finding{end("c", skew.EndStopped, 1_000)}, t0.Add(30*time.Minute))
	s.written([]skew.Finding{end("a", skew.EndStopped, 95_000)}, t0.Add(40*time.Minute)) // a replay
	s.written(nil, t0.Add(time.Hour))
	if n := testutil.CollectAndCount(s.gauge); n != 2 {
		t.Fatalf("%d series an hour after a's first end, want a (written again) and c", n)
	}
	s.written(nil, t0.Add(100*time.Minute))
	if n := testutil.CollectAndCount(s.gauge); n != 0 {
		t.Fatalf("%d series after every one's hour", n)
	}
	for i := range stoppedMax + 5 {
		s.written([]skew.Finding{end(fmt.Sprint(i), skew.EndStopped, 1)}, t0.Add(2*time.Hour))
	}
	if n := testutil.CollectAndCount(s.gauge); n != stoppedMax {
		t.Fatalf("%d series, want the bound %d", n, stoppedMax)
	}
}
