package planpub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/plans"
)

// fakePublisher records what it publishes; it fails while err is set.
type fakePublisher struct {
	err       error
	published []string
	calls     int
}

func (p *fakePublisher) Publish(_ context.Context, cs []plans.Change) error {
	p.calls++
	if p.err != nil {
		return p.err
	}
	for _, c := range cs {
		if c.Retired {
			p.published = append(p.published, plans.Key(c.JobID, c.TaskName)+" retired")
			continue
		}
		var ks []string
		for _, k := range c.Plan.HotKeys {
			ks = append(ks, k.Key)
		}
		p.published = append(p.published, fmt.Sprintf("%s v%d %s", plans.Key(c.JobID, c.TaskName), c.Plan.Version, strings.Join(ks, ",")))
	}
	return nil
}

// observerOp is one call of a PlanObserver test: Resume, Advance,
// SetOverrides or Observe (the first that its fields ask for), with the
// errors the fakes return, and what is expected after it.
type observerOp struct {
	fs      []skew.Finding // Observe
	advance int64          // Advance to this second, when set
	ovs     []plans.Override
	resume  bool
	owns    []string // the jobs owned at the resume
	pubErr  error    // of the publisher
	loadErr error    // of the stored plans
	wantErr bool
	pending int
}

// play runs ops on s; l may be nil (no stored plans).
func play(t *testing.T, s *PlanObserver, p *fakePublisher, l *fakeLoader, ops []observerOp) {
	t.Helper()
	ctx := context.Background()
	for i, o := range ops {
		p.err = o.pubErr
		if l != nil {
			l.err = o.loadErr
		}
		var err error
		switch {
		case o.resume:
			err = s.Resume(ctx, func(job string) bool { return slices.Contains(o.owns, job) })
		case o.advance != 0:
			err = s.Advance(ctx, time.UnixMilli(t0ms+o.advance*1000))
		case o.ovs != nil:
			err = s.SetOverrides(ctx, o.ovs)
		default:
			err = s.Observe(ctx, uint64(i), o.fs)
		}
		if (err != nil) != o.wantErr {
			t.Fatalf("op %d: error %v, want error %v", i, err, o.wantErr)
		}
		if got := s.Pending(); got != o.pending {
			t.Fatalf("op %d: %d pending, want %d", i, got, o.pending)
		}
		if got := testutil.ToFloat64(s.m.pending); got != float64(o.pending) {
			t.Fatalf("op %d: pending metric %v, want %d", i, got, o.pending)
		}
	}
}

func TestPlanObserver(t *testing.T) {
	w1 := []skew.Finding{planFinding("j", "agg", 10, salted("hot", 4)), planFinding("j", "join", 10, salted("k", 2))}
	w2 := []skew.Finding{planFinding("j", "agg", 20, salted("hot", 4), salted("cold", 2))}
	down := errors.New("broker down")
	type op = observerOp
	tests := []struct {
		name string
		ops  []op
		want []string // published, in order
	}{
		{"findings become published plans", []op{
			{fs: w1},
			{fs: w2},
		}, []string{"j/agg v1 hot", "j/join v1 k", "j/agg v2 cold,hot"}},
		{"a failed publish keeps the changes for the retry", []op{
			{fs: w1, pubErr: down, wantErr: true, pending: 2},
			{fs: w1},
		}, []string{"j/agg v1 hot", "j/join v1 k"}},
		{"pending changes keep each version of a task, in order", []op{
			{fs: w1, pubErr: down, wantErr: true, pending: 2},
			{fs: w2, pubErr: down, wantErr: true, pending: 3},
			{fs: w2},
		}, []string{"j/agg v1 hot", "j/join v1 k", "j/agg v2 cold,hot"}},
		{"a later state of a pending version replaces it", []op{
			{fs: w1, pubErr: down, wantErr: true, pending: 2},
			{advance: 100, pubErr: down, wantErr: true, pending: 2}, // republished: the same versions
			{advance: 110},
		}, []string{"j/agg v1 hot", "j/join v1 k"}},
		{"a retirement is queued after the version it retires", []op{
			{fs: w1, pubErr: down, wantErr: true, pending: 2},
			{advance: 610, pubErr: down, wantErr: true, pending: 4},
			{advance: 620},
		}, []string{"j/agg v1 hot", "j/join v1 k", "j/agg retired", "j/join retired"}},
		{"advance retires", []op{
			{fs: w1},
			{advance: 610},
		}, []string{"j/agg v1 hot", "j/join v1 k", "j/agg retired", "j/join retired"}},
		{"advance republishes current plans every RepublishEvery", []op{
			{fs: w1},
			{advance: 100},
			{advance: 200},
			{advance: 420},
		}, []string{"j/agg v1 hot", "j/join v1 k", "j/agg v1 hot", "j/join v1 k", "j/agg v1 hot", "j/join v1 k"}},
		{"overrides are published, invalid ones reported", []op{
			{fs: w1},
			{ovs: []plans.Override{
				{JobID: "j", TaskName: "agg", Action: plans.ActionPin},
				{JobID: "j", TaskName: "join", Action: "drop"},
			}, wantErr: true},
		}, []string{"j/agg v1 hot", "j/join v1 k", "j/agg v2 hot"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mgr, err := plans.NewManager(plans.Config{})
			if err != nil {
				t.Fatal(err)
			}
			p := &fakePublisher{}
			reg := prometheus.NewRegistry()
			s, err := newPlanObserver(mgr, p, nil, nil, reg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			play(t, s, p, nil, tt.ops)
			if !eq(p.published, tt.want) {
				t.Fatalf("published %q, want %q", p.published, tt.want)
			}
		})
	}
}

func TestPlanObserverMetrics(t *testing.T) {
	mgr, _ := plans.NewManager(plans.Config{})
	reg := prometheus.NewRegistry()
	s, err := newPlanObserver(mgr, &fakePublisher{}, nil, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	bad := planFinding("j/x", "agg", 10, salted("hot", 4)) // "/" in a job id
	if err := s.Observe(context.Background(), 1, []skew.Finding{planFinding("j", "agg", 10, salted("hot", 4)), bad}); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP skewlens_plans_invalid_findings_total salting_plan findings ignored as invalid.
# TYPE skewlens_plans_invalid_findings_total counter
skewlens_plans_invalid_findings_total 1
# HELP skewlens_plans_served Salting plans served now.
# TYPE skewlens_plans_served gauge
skewlens_plans_served 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "skewlens_plans_served", "skewlens_plans_invalid_findings_total"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close()
	if _, err := newPlanObserver(mgr, &fakePublisher{}, nil, nil, reg); err != nil {
		t.Fatalf("metrics not unregistered by Close: %v", err)
	}
	if _, err := NewPlanObserver(mgr, nil, nil, nil, nil); !retry.IsPermanent(err) {
		t.Fatalf("NewPlanObserver with nil parts: %v", err)
	}
}

// fakeLoader is the stored plans: it returns ps and the unreadable, or
// err while set.
type fakeLoader struct {
	ps         []plans.Plan
	unreadable []plans.RefusedJob
	err        error
	reads      int
}

func (l *fakeLoader) LoadPlans(context.Context) (plans.Stored, error) {
	l.reads++
	if l.err != nil {
		return plans.Stored{}, l.err
	}
	return plans.Stored{Plans: l.ps, Unreadable: l.unreadable}, nil
}

// TestPlanObserverResume: at each assignment of partitions the PlanObserver
// resumes the stored plans of the jobs it owns now as at start-up: the
// plans of jobs another instance reads now are neither retired nor
// republished here, a job that moved here goes on from its stored plan,
// unpublished changes are dropped and the overrides are set again.
func TestPlanObserverResume(t *testing.T) {
	// The group's stored plans: j/agg (this instance's so far) and k/agg,
	// which another instance reads, far ahead in event time.
	stored := func(t *testing.T) []plans.Plan {
		mgr, _ := plans.NewManager(plans.Config{})
		j := planFinding("j", "agg", 10, salted("hot", 4))
		k := planFinding("k", "agg", 1000, salted("x", 2))
		mgr.Observe(&j)
		mgr.Observe(&k)
		return mgr.Current()
	}
	w1 := []skew.Finding{planFinding("j", "agg", 10, salted("hot", 4))}
	down := errors.New("ClickHouse down")
	excludeCold := []plans.Override{{JobID: "j", TaskName: "agg", Action: plans.ActionExclude, Key: "cold"}}
	type op = observerOp
	tests := []struct {
		name string
		ops  []op
		want []string // published, in order
	}{
		{"plans of jobs read elsewhere are neither retired nor republished", []op{
			{fs: w1},
			{resume: true, owns: nil},
			{advance: 5000},
		}, []string{"j/agg v1 hot"}},
		{"without a resume the instance retires them", []op{
			{fs: w1},
			{advance: 5000},
		}, []string{"j/agg v1 hot", "j/agg retired"}},
		{"a job that moved here goes on from its stored plan", []op{
			{fs: w1},
			{resume: true, owns: []string{"k"}},
			{fs: []skew.Finding{planFinding("k", "agg", 1010, salted("x", 2), salted("y", 2))}},
			{advance: 1010},
		}, []string{"j/agg v1 hot", "k/agg v2 x,y", "k/agg v2 x,y"}},
		{"unpublished changes are dropped", []op{
			{fs: w1, pubErr: down, wantErr: true, pending: 1},
			{resume: true},
			{advance: 20},
		}, nil},
		{"overrides are set again", []op{
			{fs: w1},
			{ovs: excludeCold},
			{resume: true, owns: []string{"j"}},
			{fs: []skew.Finding{planFinding("j", "agg", 30, salted("hot", 4), salted("cold", 2))}},
		}, []string{"j/agg v1 hot"}},
		{"a failed read is returned and the plans are kept", []op{
			{fs: w1},
			{resume: true, owns: []string{"j", "k"}, loadErr: down, wantErr: true},
			{advance: 5000},
		}, []string{"j/agg v1 hot", "j/agg retired"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mgr, err := plans.NewManager(plans.Config{})
			if err != nil {
				t.Fatal(err)
			}
			p, l := &fakePublisher{}, &fakeLoader{ps: stored(t)}
			s, err := NewPlanObserver(mgr, p, l, nil, prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			play(t, s, p, l, tt.ops)
			if !eq(p.published, tt.want) {
				t.Fatalf("published %q, want %q", p.published, tt.want)
			}
		})
	}
}

// TestPlanObserverResumeRefusesOneJob: a stored plan of one job that cannot be
// read, and one that does not validate, cost those jobs those plans
// only: the good job's plan is restored, each refused job is logged
// (WARN, part plans) and counted, and Resume returns nil.
func TestPlanObserverResumeRefusesOneJob(t *testing.T) {
	mgr, err := plans.NewManager(plans.Config{})
	if err != nil {
		t.Fatal(err)
	}
	src, _ := plans.NewManager(plans.Config{})
	good := planFinding("j", "agg", 10, salted("hot", 4))
	src.Observe(&good)
	bad := planFinding("b", "agg", 10, salted("hot", 4))
	src.Observe(&bad)
	stored := src.Current()
	stored[0].Version = 0 // b/agg: does not validate
	l := &fakeLoader{ps: stored, unreadable: []plans.RefusedJob{{JobID: "c", Err: errors.New(`plan of task "agg" does not decode`)}}}
	var logged bytes.Buffer
	reg := prometheus.NewRegistry()
	s, err := NewPlanObserver(mgr, &fakePublisher{}, l, slog.New(slog.NewTextHandler(&logged, nil)), reg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Resume(context.Background(), func(string) bool { return true }); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if p := mgr.Plan("j", "agg"); p == nil || p.Version != 1 {
		t.Fatalf("the good job's plan was not restored: %+v", p)
	}
	if p := mgr.Plan("b", "agg"); p != nil {
		t.Fatalf("the invalid plan was restored: %+v", p)
	}
	for _, job := range []string{"b", "c"} {
		if !slices.ContainsFunc(strings.Split(logged.String(), "\n"), func(l string) bool {
			return strings.Contains(l, `level=WARN msg="saved state of a job refused; it restarts without it"`) && strings.Contains(l, "part=plans job="+job+" ")
		}) {
			t.Errorf("no WARN naming job %s:\n%s", job, logged.String())
		}
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP skewlens_plans_state_refused_jobs_total Jobs whose stored plans could not be restored (they did not decode or validate: another version, corruption); their tasks restart without them.
# TYPE skewlens_plans_state_refused_jobs_total counter
skewlens_plans_state_refused_jobs_total 2
`), "skewlens_plans_state_refused_jobs_total"); err != nil {
		t.Fatal(err)
	}
}
