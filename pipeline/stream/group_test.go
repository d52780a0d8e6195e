package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// groupStep is one step of a scripted consumer group: a message, or a
// rebalance sent before the next message is returned.
type groupStep struct {
	msg *Message
	ev  *Rebalance
}

// scriptedGroup is a GroupSource that plays steps in order, as kafkasrc
// does: it waits for a revocation's Done before going on (a second at
// most), and logs the order of commits and revocations.
type scriptedGroup struct {
	mu     sync.Mutex
	steps  []groupStep
	next   int
	events chan Rebalance
	log    *opLog
	// commits per generation, and the commits of a generation after its
	// revocation was Done.
	commits map[int64]int
	late    []Message
	revoked map[int64]bool
}

func (g *scriptedGroup) Rebalances() <-chan Rebalance { return g.events }

func (g *scriptedGroup) Fetch(ctx context.Context) (Message, error) {
	for {
		g.mu.Lock()
		if g.next >= len(g.steps) {
			g.mu.Unlock()
			return Message{}, io.EOF
		}
		st := g.steps[g.next]
		g.next++
		g.mu.Unlock()
		if st.msg != nil {
			return *st.msg, nil
		}
		ev := *st.ev
		done := make(chan struct{})
		if ev.Revoked {
			var once sync.Once
			ev.Done = func() {
				once.Do(func() {
					g.mu.Lock()
					g.revoked[ev.Generation] = true
					g.mu.Unlock()
					g.log.add(fmt.Sprintf("revoked %d", ev.Generation))
					close(done)
				})
			}
		} else {
			close(done)
		}
		select {
		case g.events <- ev:
		case <-ctx.Done():
			return Message{}, ctx.Err()
		}
		select {
		case <-done:
		case <-time.After(time.Second):
		case <-ctx.Done():
			return Message{}, ctx.Err()
		}
	}
}

func (g *scriptedGroup) Commit(_ context.Context, msgs ...Message) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, m := range msgs {
		if g.revoked[m.Generation] {
			g.late = append(g.late, m)
			return fmt.Errorf("commit: %w", ErrGenerationEnded)
		}
		g.commits[m.Generation]++
	}
	return nil
}

// loadingStore is a fakeStore that also loads: the last states saved.
type loadingStore struct {
	fakeStore
	loads  int
	loaded []skew.JobState // of the last load
	unread []skew.RefusedJob
}

func (s *loadingStore) LoadState(_ context.Context, group string) ([]skew.JobState, []skew.RefusedJob, error) {
	s.loads++
	s.log.add("load")
	s.loaded = nil
	if len(s.saves) == 0 {
		return nil, s.unread, nil
	}
	for _, st := range s.saves[len(s.saves)-1] {
		if !st.Ended {
			s.loaded = append(s.loaded, st)
		}
	}
	return s.loaded, s.unread, nil
}

// runGroup runs a runner to the end of steps, with a store that holds
// saved (the group's saved engine state, when not nil) before it starts.
func runGroup(t *testing.T, steps []groupStep, saved []skew.JobState) (*scriptedGroup, *loadingStore, *resumingSink) {
	t.Helper()
	store := &loadingStore{fakeStore: fakeStore{log: &opLog{}}}
	if saved != nil {
		store.saves = append(store.saves, saved)
	}
	src, sink, _ := runGroupOn(t, steps, store, nil, prometheus.NewRegistry())
	return src, store, sink
}

// runGroupOn is runGroup with a store of the caller's, a logger and a
// registry.
func runGroupOn(t *testing.T, steps []groupStep, store *loadingStore, logger *slog.Logger, reg prometheus.Registerer) (*scriptedGroup, *resumingSink, *Runner) {
	t.Helper()
	log := store.log
	src := &scriptedGroup{steps: steps, events: make(chan Rebalance), log: log, commits: map[int64]int{}, revoked: map[int64]bool{}}
	sink := &resumingSink{log: log, store: store}
	eng, err := skew.New(skew.Config{})
	if err != nil {
		t.Fatal(err)
	}
	stage, _ := partitioned(eng, window.WatermarkConfig{}, time.Now)
	r, err := New(Config{FlushInterval: 5 * time.Millisecond}, src, stage, sink, store, &fakeDead{}, logger, reg)
	if err != nil {
		t.Fatal(err)
	}
	if err := runToEnd(t, r); err != nil {
		t.Fatal(err)
	}
	return src, sink, r
}

// resumingSink is a fakeSink that counts Resume calls, and checks that
// the jobs owned are those of the engine states loaded just before.
type resumingSink struct {
	fakeSink
	log     *opLog
	store   *loadingStore
	resumes int
	wrong   []string
	owns    func(string) bool // of the last Resume
}

func (s *resumingSink) Resume(_ context.Context, owns func(string) bool) error {
	s.resumes++
	s.log.add("resume")
	s.owns = owns
	for _, st := range s.store.loaded {
		if !owns(st.JobID) {
			s.wrong = append(s.wrong, "not owned: "+st.JobID)
		}
	}
	if owns("a job never seen") {
		s.wrong = append(s.wrong, "a stranger owned")
	}
	return nil
}

// TestRunnerRebalances: the partitions are revoked in the middle of an
// incident and assigned again in a new generation, which reads from the
// start again (nothing was committed for sure). Each assignment loads the
// saved engine state and resumes the sink before any record of it; the
// revoked generation commits nothing once its revocation is Done; and
// the findings written over both generations are those of one
// uninterrupted run.
func TestRunnerRebalances(t *testing.T) {
	lines := incident(t)
	msgs := func(gen int64, from, to int) []groupStep {
		var out []groupStep
		for i := from; i < to; i++ {
			out = append(out, groupStep{msg: &Message{Topic: "flink", Partition: i % 2, Offset: int64(i / 2), Value: lines[i],
				Time: time.UnixMilli(1593004200000), Generation: gen}})
		}
		return out
	}
	parts := []Partition{{Topic: "flink", ID: 0}, {Topic: "flink", ID: 1}}
	tests := []struct {
		name  string
		steps []groupStep
		loads int
	}{
		{"no rebalance", append([]groupStep{{ev: &Rebalance{Generation: 1, Assigned: parts}}}, msgs(1, 0, len(lines))...), 1},
		{"revoked and assigned again", append(append(append(
			[]groupStep{{ev: &Rebalance{Generation: 1, Assigned: parts}}}, msgs(1, 0, len(lines)/2)...),
			groupStep{ev: &Rebalance{Generation: 1, Revoked: true}}, groupStep{ev: &Rebalance{Generation: 3, Assigned: parts}}),
			msgs(3, 0, len(lines))...), 2},
		{"assigned without a revocation first", append(append(append(
			[]groupStep{{ev: &Rebalance{Generation: 1, Assigned: parts}}}, msgs(1, 0, len(lines)/3)...),
			groupStep{ev: &Rebalance{Generation: 2, Assigned: parts}}),
			msgs(2, 0, len(lines))...), 2},
	}
	var want []string
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src, store, sink := runGroup(t, tc.steps, nil)
			if store.loads != tc.loads || sink.resumes != tc.loads {
				t.Errorf("loads %d, resumes %d, want %d each (one per assignment)", store.loads, sink.resumes, tc.loads)
			}
			if len(sink.wrong) > 0 {
				t.Errorf("jobs owned at Resume: %q", sink.wrong)
			}
			if len(src.late) > 0 {
				t.Errorf("commits after their generation was revoked: %+v", src.late)
			}
			last := tc.steps[len(tc.steps)-1].msg.Generation
			if src.commits[last] == 0 {
				t.Errorf("generation %d committed nothing (commits %v)", last, src.commits)
			}
			// The last write of each row wins, as in ClickHouse.
			rows := map[string]bool{}
			for _, w := range sink.writes {
				for _, k := range findingKeys(w) {
					rows[k] = true
				}
			}
			got := make([]string, 0, len(rows))
			for k := range rows {
				got = append(got, k)
			}
			slices.Sort(got)
			if want == nil {
				want = got // the first case has no rebalance
				if len(want) == 0 {
					t.Fatal("no findings without a rebalance")
				}
				return
			}
			if !slices.Equal(got, want) {
				t.Errorf("%d distinct findings, %d without a rebalance; ops %v", len(got), len(want), src.log.ops)
			}
		})
	}
}

// TestOwned: a job is restored where one of its sources is read; a state
// saved without sources, where partition 0 is read.
func TestOwned(t *testing.T) {
	src := func(topic string, p int32) skew.Source { return skew.Source{Topic: topic, Partition: p} }
	states := []skew.JobState{
		{JobID: "a", Sources: []skew.Source{src("m", 1), src("s", 1)}},
		{JobID: "b", Sources: []skew.Source{src("m", 2)}},
		{JobID: "legacy"},
		{JobID: "moved", Sources: []skew.Source{src("m", 0), src("m", 3)}},
	}
	tests := []struct {
		name  string
		parts []Partition
		want  []string
	}{
		{"all", []Partition{{"m", 0}, {"m", 1}, {"m", 2}, {"m", 3}}, []string{"a", "b", "legacy", "moved"}},
		{"partition 0 takes the legacy states", []Partition{{"m", 0}, {"s", 0}}, []string{"legacy", "moved"}},
		{"one source of two is enough", []Partition{{"s", 1}}, []string{"a"}},
		{"the other topic's partition of the same number is not", []Partition{{"s", 2}}, nil},
		{"none", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, st := range Owned(states, tt.parts) {
				got = append(got, st.JobID)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("owned %q, want %q", got, tt.want)
			}
		})
	}
}

// TestRestoredJobsOwnedByPartition: at an assignment the runner restores
// the saved jobs whose partitions it is assigned, and only those. A
// restored job that never reports again is this instance's to end: it
// ends as stopped once it has been silent for the engine's JobEndAfterMs,
// and its saved state is then deleted (a tombstone). A job whose
// partition another instance reads is not restored, ended or saved here.
func TestRestoredJobsOwnedByPartition(t *testing.T) {
	lines := incident(t)
	start := simulate.DefaultConfig().Start
	saved := func(id string, part int32) skew.JobState {
		return skew.JobState{JobID: id, JobName: id + "-name", WindowMs: 10000, ClosedUpTo: start + 10000, LastSeen: start,
			FirstEvent: &start, LastEvent: &start, Sources: []skew.Source{{Topic: "flink", Partition: part}}}
	}
	parts := []Partition{{Topic: "flink", ID: 0}, {Topic: "flink", ID: 1}}
	steps := []groupStep{{ev: &Rebalance{Generation: 1, Assigned: parts}}}
	for i, l := range lines {
		steps = append(steps, groupStep{msg: &Message{Topic: "flink", Partition: i % 2, Offset: int64(i / 2), Value: l,
			Time: time.UnixMilli(start), Generation: 1}})
	}
	_, store, sink := runGroup(t, steps, []skew.JobState{saved("gone", 1), saved("elsewhere", 5)})
	if sink.owns == nil || !sink.owns("gone") || sink.owns("elsewhere") {
		t.Fatal("at Resume the sink was not told that gone is owned here and elsewhere is not")
	}
	ends := map[string]string{}
	for _, w := range sink.writes {
		for _, f := range w {
			if f.Kind == skew.KindJobEnd {
				ends[f.JobID] = f.JobEnd.Reason
			}
		}
	}
	if ends["gone"] != skew.EndStopped || len(ends) != 1 {
		t.Fatalf("job ends %v, want the restored silent job gone to end as stopped, and no other", ends)
	}
	var tombstone bool
	for _, save := range store.saves[1:] {
		for _, st := range save {
			if st.JobID == "elsewhere" {
				t.Fatalf("the job of another instance's partition was saved here: %+v", st)
			}
			tombstone = tombstone || st.JobID == "gone" && st.Ended
		}
	}
	if !tombstone {
		t.Fatal("no tombstone of the ended job saved")
	}
}

// TestRefusedJobCostsOnlyItsJob: at an assignment, a saved state that
// does not restore (here one of another window length, and one the store
// could not decode) costs its own job its history: the runner logs a
// WARN naming the job, counts it, restores the others and runs on; the
// refused job's next save is a tombstone, so it is refused once.
func TestRefusedJobCostsOnlyItsJob(t *testing.T) {
	lines := incident(t)
	start := simulate.DefaultConfig().Start
	good := skew.JobState{JobID: "good", WindowMs: 10000, ClosedUpTo: start + 10000, LastSeen: start,
		FirstEvent: &start, LastEvent: &start, Sources: []skew.Source{{Topic: "flink", Partition: 1}}}
	bad := good
	bad.JobID, bad.WindowMs = "bad", 60000
	parts := []Partition{{Topic: "flink", ID: 0}, {Topic: "flink", ID: 1}}
	steps := []groupStep{{ev: &Rebalance{Generation: 1, Assigned: parts}}}
	for i, l := range lines {
		steps = append(steps, groupStep{msg: &Message{Topic: "flink", Partition: i % 2, Offset: int64(i / 2), Value: l,
			Time: time.UnixMilli(start), Generation: 1}})
	}
	store := &loadingStore{fakeStore: fakeStore{log: &opLog{}}, unread: []skew.RefusedJob{{JobID: "garbled", Err: errors.New("decode engine state of job \"garbled\": bad JSON")}}}
	store.saves = append(store.saves, []skew.JobState{good, bad})
	var out bytes.Buffer
	_, sink, r := runGroupOn(t, steps, store, slog.New(slog.NewTextHandler(&out, nil)), prometheus.NewRegistry())
	if sink.owns == nil || !sink.owns("good") || sink.owns("bad") || sink.owns("garbled") {
		t.Fatal("at Resume the sink was not told that good is owned here, and the refused jobs not")
	}
	for _, job := range []string{"bad", "garbled"} {
		if !strings.Contains(out.String(), "level=WARN msg=\"saved state of a job refused; it restarts without it\" part=engine job="+job) {
			t.Errorf("no WARN naming job %s; the log:\n%s", job, out.String())
		}
	}
	if !strings.Contains(out.String(), "60000 ms windows") {
		t.Errorf("the WARN does not say why the state was refused; the log:\n%s", out.String())
	}
	if got := testutil.ToFloat64(r.m.refusedStates); got != 2 {
		t.Errorf("skewlens_engine_state_refused_jobs_total %v, want 2", got)
	}
	var tombstone bool
	for _, save := range store.saves[1:] {
		for _, st := range save {
			tombstone = tombstone || st.JobID == "bad" && st.Ended
		}
	}
	if !tombstone {
		t.Error("no tombstone saved for the refused job")
	}
}
