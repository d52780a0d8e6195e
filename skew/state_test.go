package skew_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/pipeline/decode"
	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// event is one decoded line, kept with its own copies of the strings.
type event struct {
	sample *skew.KeySample
	metric *skew.Metric
	ts     int64
}

// simulatedEvents decodes the simulated jobs' output, interleaved one
// reporting interval at a time as Kafka would deliver them.
func simulatedEvents(t *testing.T, scenarios ...simulate.Scenario) []event {
	t.Helper()
	var cfgs []simulate.Config
	for i, s := range scenarios {
		cfgs = append(cfgs, simulate.Config{Scenario: s, Seed: uint64(i + 7), JobName: string(s),
			Duration: 8 * time.Minute, SamplesPerInterval: 300, MetricFormat: "mixed", Naming: "mixed"})
	}
	return simulatedRuns(t, cfgs...)
}

// simulatedRuns is simulatedEvents of runs configured in full.
func simulatedRuns(t *testing.T, cfgs ...simulate.Config) []event {
	t.Helper()
	var gens []*simulate.Generator
	for _, c := range cfgs {
		g, err := simulate.New(c)
		if err != nil {
			t.Fatal(err)
		}
		gens = append(gens, g)
	}
	dec := decode.NewDecoder(decode.FormatAuto)
	var evs []event
	var buf []byte
	for live := len(gens); live > 0; {
		live = 0
		for _, g := range gens {
			var ok bool
			buf, ok = g.Next(buf[:0])
			if !ok {
				continue
			}
			live++
			for _, line := range bytes.Split(buf, []byte("\n")) {
				kind, err := dec.Decode(line)
				if err != nil {
					t.Fatalf("simulated line %q: %v", line, err)
				}
				switch kind {
				case decode.KindKeySample:
					s := dec.Sample
					s.JobID, s.JobName, s.TaskName, s.Key = strings.Clone(s.JobID), strings.Clone(s.JobName), strings.Clone(s.TaskName), strings.Clone(s.Key)
					evs = append(evs, event{sample: &s, ts: s.TS})
				case decode.KindMetric:
					m := dec.Metric
					m.JobID, m.JobName, m.TaskName = strings.Clone(m.JobID), strings.Clone(m.JobName), strings.Clone(m.TaskName)
					m.Host, m.TaskAttemptID = strings.Clone(m.Host), strings.Clone(m.TaskAttemptID)
					evs = append(evs, event{metric: &m, ts: m.TS})
				}
			}
		}
	}
	return evs
}

// feed runs events through a fresh stage on eng and returns the findings,
// and the number of Replayed and Late events.
func feed(t *testing.T, st *window.Feeder, evs []event, out []skew.Finding) ([]skew.Finding, int, int) {
	t.Helper()
	replayed, late := 0, 0
	for _, ev := range evs {
		var v skew.Verdict
		if ev.sample != nil {
			out, v = st.Sample(ev.sample, out)
		} else {
			out, v = st.Metric(ev.metric, out)
		}
		switch v {
		case skew.Replayed:
			replayed++
		case skew.Late:
			late++
		}
	}
	return out, replayed, late
}

// crashAt is what a crash after the events evs[:n] leaves behind: the
// engine's state as the store keeps it (through its JSON), and the
// committed offset, the first event still held by an open window.
func crashAt(t *testing.T, eng *skew.Engine, evs []event, n int) ([]skew.JobState, int) {
	t.Helper()
	b, err := json.Marshal(eng.Snapshot(nil))
	if err != nil {
		t.Fatal(err)
	}
	var states []skew.JobState
	if err := json.Unmarshal(b, &states); err != nil {
		t.Fatal(err)
	}
	from := 0
	for from < n && len(states) > 0 && eng.WindowStart(evs[from].ts) < states[0].ClosedUpTo {
		from++
	}
	return states, from
}

func newStage(t *testing.T, states []skew.JobState) (*skew.Engine, *window.Feeder) {
	t.Helper()
	return newStageOf(t, skew.Config{EmitStats: true}, states)
}

// newStageOf is newStage with an engine of configuration cfg.
func newStageOf(t *testing.T, cfg skew.Config, states []skew.JobState) (*skew.Engine, *window.Feeder) {
	t.Helper()
	eng, err := skew.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if states != nil {
		if refused, err := eng.Restore(states); err != nil || refused != nil {
			t.Fatal(err, refused)
		}
	}
	return eng, stageOn(t, eng)
}

func jsonLines(t *testing.T, fs []skew.Finding) []string {
	t.Helper()
	out := make([]string, len(fs))
	for i := range fs {
		b, err := json.Marshal(&fs[i])
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out
}

// TestSnapshotRestoreEqualsUninterrupted crashes a run at several points:
// the findings written before the crash plus those of a run restored from
// the snapshot, which reads the input again from the first event of an
// open window (where the committed Kafka offset would be) or earlier,
// equal the findings of an uninterrupted run, byte for byte.
func TestSnapshotRestoreEqualsUninterrupted(t *testing.T) {
	evs := simulatedEvents(t, simulate.SlowSink, simulate.RotatingHotKey, simulate.CheckpointTimeout, simulate.HotKey)
	_, st := newStage(t, nil)
	want, _, late := feed(t, st, evs, nil)
	want = st.Flush(want)
	if late != 0 {
		t.Fatalf("%d late events in the uninterrupted run", late)
	}
	wantJSON := jsonLines(t, want)
	sustained := 0
	for _, f := range want {
		if f.Saturation != nil && f.Evidence.SustainedWindows > 2 {
			sustained++
		}
	}
	if sustained == 0 {
		t.Fatal("no finding depends on an earlier window; the test would prove nothing")
	}
	for _, tc := range []struct {
		name   string
		cut    float64 // crash after this fraction of the events
		rewind int     // read again from this many events before the first open one
	}{
		{"early", 0.1, 0}, {"middle", 0.47, 0}, {"middle rewound", 0.5, 3000},
		{"late", 0.83, 0}, {"late rewound far", 0.9, 20000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng, st := newStage(t, nil)
			cut := int(tc.cut * float64(len(evs)))
			before, _, _ := feed(t, st, evs[:cut], nil)
			states, from := crashAt(t, eng, evs, cut)
			if len(states) != 4 {
				t.Fatalf("snapshot of %d jobs, want 4", len(states))
			}
			from = max(0, from-tc.rewind)
			eng2, st2 := newStage(t, states)
			after, replayed, late := feed(t, st2, evs[from:], nil)
			after = st2.Flush(after)
			got := jsonLines(t, append(before, after...))
			if late != 0 {
				t.Errorf("%d late events after the restart", late)
			}
			if tc.rewind > 0 && replayed == 0 {
				t.Error("rewound input, but no event was Replayed")
			}
			if len(got) != len(wantJSON) {
				t.Fatalf("%d findings (%d before the crash, %d after), want %d", len(got), len(before), len(after), len(wantJSON))
			}
			for i := range got {
				if got[i] != wantJSON[i] {
					t.Fatalf("finding %d of %d differs:\n got %s\nwant %s", i, len(got), got[i], wantJSON[i])
				}
			}
			// A restored run snapshots again with the same shape.
			if n := len(eng2.Snapshot(nil)); n != 4 {
				t.Errorf("snapshot after restore has %d jobs", n)
			}
		})
	}
}

// TestRestoredEngineForecastsTheSame: the checkpoint-timeout forecast
// lives in the job's saved state (its recent checkpoints and the measured
// interval), so an engine restored at any point makes the same
// checkpoint_risk findings, forecasts included, as one that ran through:
// with and without numberOfCompletedCheckpoints, with crashes before the
// first forecast, during the slowdown and after the first timeout.
func TestRestoredEngineForecastsTheSame(t *testing.T) {
	slow := &simulate.Slowdown{At: 2 * time.Minute, Every: 40 * time.Second, Factor: 0.85, Steps: 8, Jitter: 0.05}
	recovers := *slow
	recovers.RecoverAt = 7 * time.Minute
	evs := simulatedRuns(t,
		simulate.Config{Scenario: simulate.CheckpointTimeout, Seed: 3, JobName: "creep", Duration: 12 * time.Minute,
			NoKeySamples: true, MetricFormat: "mixed", Slowdown: slow, CheckpointDetail: true},
		simulate.Config{Scenario: simulate.CheckpointTimeout, Seed: 4, JobName: "recovers", Duration: 12 * time.Minute,
			NoKeySamples: true, MetricFormat: "mixed", Slowdown: &recovers})
	cfg := skew.Config{CheckpointTimeoutMs: simulate.DefaultConfig().CheckpointTimeout.Milliseconds()}
	_, st := newStageOf(t, cfg, nil)
	want, _, _ := feed(t, st, evs, nil)
	want = st.Flush(want)
	wantJSON := jsonLines(t, want)
	forecasts := map[string]int{}
	for _, f := range want {
		if f.Saturation != nil && f.Cause == skew.CauseCheckpointRisk && f.Evidence.ForecastTimeoutInMs != nil {
			forecasts[f.JobName]++
			if !f.Evidence.CheckpointIntervalMeasured {
				t.Errorf("forecast without the measured interval: %s", wantJSON[0])
			}
		}
	}
	if forecasts["creep"] == 0 || forecasts["recovers"] == 0 {
		t.Fatalf("forecasts per job %v: the test would prove nothing", forecasts)
	}
	for _, cut := range []float64{0.2, 0.45, 0.6, 0.8} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			eng, st := newStageOf(t, cfg, nil)
			n := int(cut * float64(len(evs)))
			before, _, _ := feed(t, st, evs[:n], nil)
			states, from := crashAt(t, eng, evs, n)
			_, st2 := newStageOf(t, cfg, states)
			after, _, _ := feed(t, st2, evs[from:], nil)
			got := jsonLines(t, st2.Flush(append(before, after...)))
			if len(got) != len(wantJSON) {
				t.Fatalf("%d findings, want %d", len(got), len(wantJSON))
			}
			for i := range got {
				if got[i] != wantJSON[i] {
					t.Fatalf("finding %d differs:\n got %s\nwant %s", i, got[i], wantJSON[i])
				}
			}
		})
	}
}

// TestRestoreForgetsWhatTheEngineWouldHave: a job (and a task) last seen
// more than HistoryWindows before the newest saved window is not restored,
// as an uninterrupted engine would have forgotten it.
func TestRestoreForgetsWhatTheEngineWouldHave(t *testing.T) {
	eng, err := skew.New(skew.Config{HistoryWindows: 6, RotationLookbackWindows: 6})
	if err != nil {
		t.Fatal(err)
	}
	const now = 1_000_000
	refused, err := eng.Restore([]skew.JobState{
		{WindowMs: 10000, JobID: "live", ClosedUpTo: now, LastSeen: now - 10000, Tasks: []skew.TaskState{
			{Name: "fresh", LastSeen: now - 10000, LastDominant: -1, PrevDominant: -1},
			{Name: "stale", LastSeen: now - 70000, LastDominant: -1, PrevDominant: -1, UpSustained: 2},
		}},
		{WindowMs: 10000, JobID: "gone", ClosedUpTo: 500_000, LastSeen: now - 70000},
	})
	if err != nil || refused != nil {
		t.Fatal(err, refused)
	}
	// Touch both jobs so that they are snapshotted.
	for _, job := range []string{"live", "gone"} {
		eng.AddSample(&skew.KeySample{TS: now + 1000, JobID: job, TaskName: "fresh", Key: "k", Weight: 1, SampleRate: 1, Subtask: -1})
	}
	// "gone" starts afresh: nothing of it is closed yet, so it has no
	// state to snapshot; "live" keeps its fresh task only.
	var names []string
	for _, js := range eng.Snapshot(nil) {
		for _, ts := range js.Tasks {
			names = append(names, js.JobID+"/"+ts.Name)
		}
	}
	if strings.Join(names, ",") != "live/fresh" {
		t.Fatalf("tasks after restore and one event each: %v, want live/fresh only", names)
	}
}

// TestRestoredJobsInSnapshots: a restored job is the engine's, with or
// without events since; its sources are kept across the restore and grow
// with the places its events are read from. (Tombstones: TestJobEnd.)
func TestRestoredJobsInSnapshots(t *testing.T) {
	eng, err := skew.New(skew.Config{})
	if err != nil {
		t.Fatal(err)
	}
	metrics := skew.Source{Topic: "flink-metrics", Partition: 3}
	samples := skew.Source{Topic: "flink-key-samples", Partition: 3}
	if refused, err := eng.Restore([]skew.JobState{
		{WindowMs: 10000, JobID: "a", ClosedUpTo: 10000, Sources: []skew.Source{metrics}},
		{WindowMs: 10000, JobID: "b", ClosedUpTo: 10000},
	}); err != nil || refused != nil {
		t.Fatal(err, refused)
	}
	old := &skew.KeySample{TS: 5000, JobID: "a", TaskName: "t", Key: "k", Weight: 1, SampleRate: 1, Subtask: -1, Source: samples}
	if v := eng.AddSample(old); v != skew.Replayed {
		t.Fatalf("sample of a closed window: verdict %d, want Replayed", v)
	}
	s := *old
	s.TS = 15000
	for range 3 { // a source is kept once
		if v := eng.AddSample(&s); v != skew.Accepted {
			t.Fatalf("sample of an open window: verdict %d, want Accepted", v)
		}
	}
	snap := eng.Snapshot(nil)
	if len(snap) != 2 || snap[0].JobID != "a" || snap[1].JobID != "b" || snap[0].ClosedUpTo != 10000 {
		t.Fatalf("snapshot %+v, want jobs a and b, closed up to 10000", snap)
	}
	if got, want := snap[0].Sources, []skew.Source{metrics, samples}; !slices.Equal(got, want) {
		t.Fatalf("sources of a %v, want %v", got, want)
	}
	if len(snap[1].Sources) != 0 {
		t.Fatalf("sources of b %v, want none", snap[1].Sources)
	}
}

// TestRestoreRefusesBadStateOfOneJob: a state that does not validate
// costs its own job only: the good job beside it restores, the bad one is
// refused with the reason and its id, and the next Snapshot carries its
// tombstone so that it is refused once.
func TestRestoreRefusesBadStateOfOneJob(t *testing.T) {
	nan := math.NaN()
	good := skew.JobState{WindowMs: 10000, JobID: "good", ClosedUpTo: 10000, LastSeen: 0}
	for _, tc := range []struct {
		name  string
		state skew.JobState
		want  string
	}{
		{"empty id", skew.JobState{WindowMs: 10000}, "empty job_id"},
		{"duplicate", good, "duplicate"},
		{"bad utf8", skew.JobState{WindowMs: 10000, JobID: "a\xff"}, "UTF-8"},
		{"long", skew.JobState{WindowMs: 10000, JobID: strings.Repeat("x", 70000)}, "bytes"},
		{"nan counter", skew.JobState{WindowMs: 10000, JobID: "a", LastFailed: &nan}, "not a number"},
		{"nan checkpoint", skew.JobState{WindowMs: 10000, JobID: "a", Checkpoints: &skew.CheckpointState{Points: []skew.CheckpointPoint{{DurationMs: nan}}}}, "checkpoints: point 0"},
		{"nan checkpoint size", skew.JobState{WindowMs: 10000, JobID: "a", Checkpoints: &skew.CheckpointState{LastSize: &nan}}, "checkpoints: a reading"},
		{"zero trigger gap", skew.JobState{WindowMs: 10000, JobID: "a", Checkpoints: &skew.CheckpointState{TriggerGapsMs: []float64{30000, 0}}}, "trigger gap 1"},
		{"too many checkpoints", skew.JobState{WindowMs: 10000, JobID: "a", Checkpoints: &skew.CheckpointState{Points: make([]skew.CheckpointPoint, 1001)}}, "more than 1000"},
		{"bad parallelism", skew.JobState{WindowMs: 10000, JobID: "a", Tasks: []skew.TaskState{{Name: "t", Parallelism: 10, MaxParallelism: 5, LastDominant: -1, PrevDominant: -1}}}, "t"},
		{"dominant out of range", skew.JobState{WindowMs: 10000, JobID: "a", Tasks: []skew.TaskState{{Name: "t", LastDominant: -5}}}, "out of range"},
		{"other window", skew.JobState{WindowMs: 60000, JobID: "a"}, "60000 ms windows"},
		{"not a boundary", skew.JobState{WindowMs: 10000, JobID: "a", ClosedUpTo: 12345}, "not a window boundary"},
		{"task twice", skew.JobState{WindowMs: 10000, JobID: "a", Tasks: []skew.TaskState{{Name: "t", LastDominant: -1, PrevDominant: -1}, {Name: "t", LastDominant: -1, PrevDominant: -1}}}, "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng, err := skew.New(skew.Config{})
			if err != nil {
				t.Fatal(err)
			}
			refused, err := eng.Restore([]skew.JobState{good, tc.state})
			if err != nil {
				t.Fatalf("Restore: %v, want the bad job refused and no error", err)
			}
			if len(refused) != 1 || refused[0].JobID != tc.state.JobID || !strings.Contains(refused[0].Err.Error(), tc.want) {
				t.Fatalf("refused %v, want job %.20q refused for %q", refused, tc.state.JobID, tc.want)
			}
			var live, ended []string
			for _, st := range eng.Snapshot(nil) {
				if st.Ended {
					ended = append(ended, st.JobID)
				} else {
					live = append(live, st.JobID)
				}
			}
			if !slices.Equal(live, []string{"good"}) {
				t.Errorf("snapshot after the restore holds %q, want the good job", live)
			}
			if wantEnded := tc.state.JobID != "" && tc.state.JobID != "good"; wantEnded != (len(ended) == 1) {
				t.Errorf("tombstones %.20q, want one for the refused job: %v", ended, wantEnded)
			}
		})
	}
	eng, _ := skew.New(skew.Config{})
	eng.AddSample(&skew.KeySample{TS: 1, JobID: "a", TaskName: "t", Key: "k", Weight: 1, SampleRate: 1, Subtask: -1})
	if _, err := eng.Restore([]skew.JobState{{WindowMs: 10000, JobID: "b"}}); err == nil {
		t.Error("Restore after events: no error")
	}
}

// TestRestoreSentinelsSavedBefore: states saved before the decoders
// understood Flink's "none yet" hold -1 for the last checkpoint's
// duration and size (a user's crash loop): they restore, as a job
// without a completed checkpoint.
func TestRestoreSentinelsSavedBefore(t *testing.T) {
	eng, err := skew.New(skew.Config{})
	if err != nil {
		t.Fatal(err)
	}
	minus := -1.0
	refused, err := eng.Restore([]skew.JobState{
		{WindowMs: 10000, JobID: "never", ClosedUpTo: 10000, Checkpoints: &skew.CheckpointState{LastDuration: &minus, LastSize: &minus}},
		{WindowMs: 10000, JobID: "once", ClosedUpTo: 10000, Checkpoints: &skew.CheckpointState{LastDuration: ptrTo(500.0), LastSize: &minus,
			Points: []skew.CheckpointPoint{{Trigger: 1000, DurationMs: 500, SizeBytes: &minus}}}},
	})
	if err != nil || refused != nil {
		t.Fatalf("Restore: %v, refused %v", err, refused)
	}
	for _, job := range []string{"never", "once"} {
		eng.AddSample(&skew.KeySample{TS: 15000, JobID: job, TaskName: "t", Key: "k", Weight: 1, SampleRate: 1, Subtask: -1})
	}
	snap := eng.Snapshot(nil)
	if len(snap) != 2 || snap[0].Checkpoints == nil || snap[1].Checkpoints == nil {
		t.Fatalf("snapshot %+v, want both jobs with their checkpoints", snap)
	}
	never, once := snap[0].Checkpoints, snap[1].Checkpoints
	if never.LastDuration != nil || never.LastSize != nil || !never.NoneYet {
		b, _ := json.Marshal(never)
		t.Errorf("a job without a checkpoint saved again as %s, want no readings and none_yet", b)
	}
	if once.NoneYet || once.LastSize != nil || len(once.Points) != 1 || once.Points[0].SizeBytes != nil || once.LastDuration == nil {
		b, _ := json.Marshal(once)
		t.Errorf("a job with a checkpoint saved again as %s, want its point and duration, without the -1 size", b)
	}
}

func ptrTo[T any](v T) *T { return &v }
