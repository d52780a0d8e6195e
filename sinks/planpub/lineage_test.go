package planpub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/plans"
)

func TestLineageKey(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, task, want string }{
		{"orders", "Agg", "/lineage/orders/Agg"},
		{"team/orders", "Window -> Sink", "/lineage/team%2Forders/Window -> Sink"},
		{"100%/x", "a/b", "/lineage/100%25%2Fx/a/b"},
		{"用户", "t", "/lineage/用户/t"},
	}
	for _, tt := range tests {
		if got := LineageKey(tt.name, tt.task); got != tt.want || !IsLineageKey([]byte(got)) {
			t.Errorf("LineageKey(%q, %q) = %q (lineage: %v), want %q", tt.name, tt.task, got, IsLineageKey([]byte(got)), tt.want)
		}
	}
	// A "/" may be in the job name or in the task name: the keys differ.
	if a, b := LineageKey("a/b", "c"), LineageKey("a", "b/c"); a == b {
		t.Errorf("LineageKey(a/b, c) = LineageKey(a, b/c) = %q", a)
	}
	if a, b := LineageKey("a%2Fb", "c"), LineageKey("a/b", "c"); a == b {
		t.Errorf("LineageKey(a%%2Fb, c) = LineageKey(a/b, c) = %q", a)
	}
	// No plan's key is a lineage key: job ids are not empty.
	for _, k := range []string{plans.Key("lineage", "x/y"), plans.Key("a1b2c3d4e5f60718293a4b5c6d7e8f90", "/lineage/x")} {
		if IsLineageKey([]byte(k)) {
			t.Errorf("plan key %q is a lineage key", k)
		}
	}
}

func TestLineageMessage(t *testing.T) {
	t.Parallel()
	p := &plans.Plan{JobID: "r1", JobName: "team/orders", TaskName: "agg", Version: 3, Source: plans.SourceEngine}
	m, err := LineageMessage(Lineage{Key: LineageKey("team/orders", "agg"), Plan: p})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(p)
	if string(m.Key) != "/lineage/team%2Forders/agg" || string(m.Value) != string(want) {
		t.Errorf("message %s = %s, want the plan's JSON %s", m.Key, m.Value, want)
	}
	for h, v := range map[string]string{HeaderVersion: "3", HeaderSource: "engine", HeaderLineage: "r1"} {
		if got, ok := header(m, h); !ok || got != v {
			t.Errorf("header %s = %q (%v), want %q", h, got, ok, v)
		}
	}
	tomb, err := LineageMessage(Lineage{Key: LineageKey("orders", "agg")})
	if err != nil || tomb.Value != nil || string(tomb.Key) != "/lineage/orders/agg" {
		t.Errorf("tombstone = %+v, %v", tomb, err)
	}
	for _, l := range []Lineage{
		{Key: LineageKey("orders", "agg"), Plan: p},       // another name's plan
		{Key: plans.Key("r1", "agg"), Plan: p},            // a plan key
		{Key: LineageKey("team/orders", "join"), Plan: p}, // another task's plan
	} {
		if _, err := LineageMessage(l); err == nil {
			t.Errorf("LineageMessage(%s with the plan of %s) did not fail", l.Key, plans.Key(p.JobID, p.TaskName))
		}
	}
}

// fakeTopic is a fakePublisher that is also the plans topic: it records
// lineage messages in the same list ("lineage KEY rJ vN", "lineage KEY
// tombstone") and fails them while lineageErr is set.
type fakeTopic struct {
	fakePublisher
	lineageErr error
	loaded     map[string]lineageRun
}

func (f *fakeTopic) publishLineage(_ context.Context, ls []Lineage) error {
	if f.lineageErr != nil {
		return f.lineageErr
	}
	for _, l := range ls {
		if l.Plan == nil {
			f.published = append(f.published, "lineage "+l.Key+" tombstone")
		} else {
			f.published = append(f.published, fmt.Sprintf("lineage %s %s v%d", l.Key, l.Plan.JobID, l.Plan.Version))
		}
	}
	return nil
}

func (f *fakeTopic) loadedLineage() map[string]lineageRun { return f.loaded }

// namedPlan is planFinding for a run of the job named name.
func namedPlan(job, name, task string, sec int64, keys ...skew.SaltedKey) skew.Finding {
	f := planFinding(job, task, sec, keys...)
	f.JobName = name
	return f
}

// jobEnd is the job_end finding of job at sec: stopped, or restarted as
// successor (whose task runs at 8/128).
func jobEnd(job, name, successor, task string, sec int64) skew.Finding {
	end := t0ms + sec*1000
	f := skew.Finding{Kind: skew.KindJobEnd, JobID: job, JobName: name, WindowStart: end - 10000, WindowEnd: end,
		JobEnd: &skew.JobEnd{Reason: skew.EndStopped, LastEventAt: end - 5000}}
	if successor != "" {
		f.JobEnd.Reason, f.JobEnd.Successor = skew.EndRestarted, successor
		f.JobEnd.SuccessorTasks = []skew.TaskShape{{Name: task, Parallelism: 8, MaxParallelism: 128}}
	}
	return f
}

// TestPlanObserverLineage: each job name's newest run's plans are published
// under the name's lineage keys after the changes that make them, again
// with each change of their task, replaced when a newer run of the name has
// a plan of the task, and tombstoned when the name has none any more.
func TestPlanObserverLineage(t *testing.T) {
	const key = "/lineage/orders/agg"
	hot := salted("hot", 4)
	r1 := []skew.Finding{namedPlan("r1", "orders", "agg", 10, hot)}
	down := errors.New("broker down")
	type op = observerOp
	tests := []struct {
		name   string
		loaded map[string]lineageRun // the topic's lineage messages at the start
		ops    []op
		linErr []bool // the lineage publish fails at op i
		want   []string
	}{
		{"a run's plan is its name's lineage", nil, []op{{fs: r1}},
			nil, []string{"r1/agg v1 hot", "lineage " + key + " r1 v1"}},
		{"a new version of it is published again", nil, []op{
			{fs: r1},
			{fs: []skew.Finding{namedPlan("r1", "orders", "agg", 20, hot, salted("cold", 2))}},
		}, nil, []string{"r1/agg v1 hot", "lineage " + key + " r1 v1", "r1/agg v2 cold,hot", "lineage " + key + " r1 v2"}},
		{"a confirmation changes nothing", nil, []op{
			{fs: r1},
			{fs: []skew.Finding{namedPlan("r1", "orders", "agg", 20, hot)}},
		}, nil, []string{"r1/agg v1 hot", "lineage " + key + " r1 v1"}},
		{"a newer run of the name replaces it; an older run's other task has none", nil, []op{
			{fs: []skew.Finding{namedPlan("r1", "orders", "agg", 10, hot), namedPlan("r1", "orders", "join", 10, hot)}},
			{fs: []skew.Finding{namedPlan("r2", "orders", "agg", 20, hot)}},
		}, nil, []string{"r1/agg v1 hot", "r1/join v1 hot", "lineage " + key + " r1 v1", "lineage /lineage/orders/join r1 v1",
			"r2/agg v1 hot", "lineage " + key + " r2 v1", "lineage /lineage/orders/join tombstone"}},
		{"carried over at a restart: the new run's plan", nil, []op{
			{fs: r1},
			{fs: []skew.Finding{jobEnd("r1", "orders", "r2", "agg", 30)}},
		}, nil, []string{"r1/agg v1 hot", "lineage " + key + " r1 v1", "r2/agg v1 hot", "r1/agg retired", "lineage " + key + " r2 v1"}},
		{"tombstoned when the run stops for good", nil, []op{
			{fs: r1},
			{fs: []skew.Finding{jobEnd("r1", "orders", "", "", 30)}},
		}, nil, []string{"r1/agg v1 hot", "lineage " + key + " r1 v1", "r1/agg retired", "lineage " + key + " tombstone"}},
		{"tombstoned when the plan retires", nil, []op{
			{fs: r1},
			{advance: 700},
		}, nil, []string{"r1/agg v1 hot", "lineage " + key + " r1 v1", "r1/agg retired", "lineage " + key + " tombstone"}},
		{"republished with the plans", nil, []op{
			{fs: r1},
			{advance: 100},
			{advance: 420},
		}, nil, []string{"r1/agg v1 hot", "lineage " + key + " r1 v1", "r1/agg v1 hot", "lineage " + key + " r1 v1",
			"r1/agg v1 hot", "lineage " + key + " r1 v1"}},
		{"a run without a name has none", nil, []op{
			{fs: []skew.Finding{planFinding("r1", "agg", 10, hot)}},
		}, nil, []string{"r1/agg v1 hot"}},
		{"a failed lineage publish is tried again with the next write", nil, []op{
			{fs: r1, wantErr: true},
			{fs: r1},
		}, []bool{true, false}, []string{"r1/agg v1 hot", "lineage " + key + " r1 v1"}},
		{"a failed publish of the plans keeps the lineage for after them", nil, []op{
			{fs: r1, pubErr: down, wantErr: true, pending: 1},
			{advance: 20},
		}, nil, []string{"r1/agg v1 hot", "lineage " + key + " r1 v1"}},
		{"what the topic held at the start: tombstoned unless current", map[string]lineageRun{
			key:                           {"r0", 7},
			"/lineage/payments/agg":       {"p0", 1},
			"/lineage/orders/gone-by-now": {"r0", 2},
		}, []op{{fs: r1}}, nil, []string{"r1/agg v1 hot", "lineage " + key + " r1 v1",
			"lineage /lineage/orders/gone-by-now tombstone", "lineage /lineage/payments/agg tombstone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mgr, err := plans.NewManager(plans.Config{})
			if err != nil {
				t.Fatal(err)
			}
			p := &fakeTopic{loaded: tt.loaded}
			s, err := newPlanObserver(mgr, p, nil, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for i, o := range tt.ops {
				p.lineageErr = nil
				if i < len(tt.linErr) && tt.linErr[i] {
					p.lineageErr = down
				}
				play(t, s, &p.fakePublisher, nil, []observerOp{o})
			}
			if !slices.Equal(p.published, tt.want) {
				t.Fatalf("published\n%q\nwant\n%q", p.published, tt.want)
			}
		})
	}
}

// TestPlanObserverLineageResume: at an assignment the PlanObserver takes
// the lineage messages the topic holds of the jobs it owns as its own, and
// tombstones those whose name has no newest plan now; another instance's
// are left alone.
func TestPlanObserverLineageResume(t *testing.T) {
	mgr, err := plans.NewManager(plans.Config{})
	if err != nil {
		t.Fatal(err)
	}
	p := &fakeTopic{}
	l := &fakeLoader{}
	s, err := newPlanObserver(mgr, p, l, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f := namedPlan("r1", "orders", "agg", 10, salted("hot", 4))
	play(t, s, &p.fakePublisher, l, []observerOp{{fs: []skew.Finding{f}}})
	stored := mgr.Current()
	// The topic, read again: orders/agg of r1, stale clicks/agg of r7 (a
	// job of this instance that stopped) and payments/agg of p1 (another
	// instance's).
	l.ps = stored
	p.loaded = map[string]lineageRun{"/lineage/orders/agg": {"r1", 1}, "/lineage/clicks/agg": {"r7", 3}, "/lineage/payments/agg": {"p1", 1}}
	p.published = nil
	play(t, s, &p.fakePublisher, l, []observerOp{{resume: true, owns: []string{"r1", "r7"}}, {advance: 20}})
	want := []string{"r1/agg v1 hot", "lineage /lineage/clicks/agg tombstone", "lineage /lineage/orders/agg r1 v1"}
	if !slices.Equal(p.published, want) {
		t.Fatalf("published after the resume\n%q\nwant\n%q", p.published, want)
	}
}

// TestLoadSkipsLineage: the topic's loader takes lineage messages for
// what they carry (loadedLineage), never as plans or refused jobs.
func TestLoadSkipsLineage(t *testing.T) {
	t.Parallel()
	p := &plans.Plan{JobID: "r1", JobName: "orders", TaskName: "agg", Version: 4}
	v, _ := json.Marshal(p)
	rec := func(key string, value []byte) *kafka.Record {
		return &kafka.Record{Key: protocol.NewBytes([]byte(key)), Value: protocol.NewBytes(value)}
	}
	latest := map[string]*record{}
	lineage := map[string]lineageRun{}
	pub := &Publisher{}
	for _, r := range []*kafka.Record{
		rec(LineageKey("orders", "agg"), v),
		rec(LineageKey("orders", "join"), v), // not the plan of its key
		rec(LineageKey("clicks", "agg"), []byte("{not json")),
		rec(LineageKey("gone", "agg"), v),
		rec(LineageKey("gone", "agg"), nil),
	} {
		job, err := pub.loadRecord(r, latest, lineage)
		if job != "" || err != nil {
			t.Errorf("loadRecord(lineage message) = %q, %v; want neither a job nor an error", job, err)
		}
	}
	if len(latest) != 0 {
		t.Errorf("lineage messages loaded as plans: %v", latest)
	}
	if want := map[string]lineageRun{"/lineage/orders/agg": {"r1", 4}}; !maps.Equal(lineage, want) {
		t.Errorf("lineage read = %v, want %v", lineage, want)
	}
}
