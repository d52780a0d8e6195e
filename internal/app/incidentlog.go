package app

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/skewlens/skewlens/pipeline/stream"
	"github.com/skewlens/skewlens/sinks/incidentsink"
	"github.com/skewlens/skewlens/sinks/planpub"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
	"github.com/skewlens/skewlens/skew/plans"
)

// incidentLog folds the findings of a replay into incidents through the
// stages run has (stream.SinkChain: the plans made, then the incidents
// folded, window by window), with a store in memory that keeps the latest
// state of every incident. Findings come in window order; those of one
// window end are written together.
type incidentLog struct {
	chain  *stream.SinkChain
	batch  []skew.Finding
	latest memIncidents
}

func newIncidentLog(cfg incident.Config) (*incidentLog, error) {
	mgr, err := plans.NewManager(plans.DefaultConfig())
	if err != nil {
		return nil, err
	}
	cfg.Plan = PlanOf(mgr)
	tr, err := incident.New(cfg)
	if err != nil {
		return nil, err
	}
	l := &incidentLog{latest: memIncidents{}}
	none := planpub.PlanLoaderFunc(func(context.Context) (plans.Stored, error) { return plans.Stored{}, nil })
	discard := planpub.PublisherFunc(func(context.Context, []plans.Change) error { return nil })
	planObserver, err := planpub.NewPlanObserver(mgr, discard, none, nil, nil)
	if err != nil {
		return nil, err
	}
	incidentObserver, err := incidentsink.New(tr, l.latest, nil, nil)
	if err != nil {
		return nil, err
	}
	l.chain = stream.NewSinkChain(discardFindings{}, planObserver, incidentObserver)
	return l, nil
}

// add takes one finding; a finding of a later window writes the findings
// of the earlier one first.
func (l *incidentLog) add(f *skew.Finding) error {
	if n := len(l.batch); n > 0 && l.batch[n-1].WindowEnd != f.WindowEnd {
		if err := l.flush(); err != nil {
			return err
		}
	}
	l.batch = append(l.batch, *f)
	return nil
}

// flush writes the window held, then closes it. Nothing in memory fails:
// an error is a bug, returned to be seen.
func (l *incidentLog) flush() error {
	n := len(l.batch)
	if n == 0 {
		return nil
	}
	ctx := context.Background()
	if err := l.chain.Write(ctx, 0, l.batch); err != nil {
		return fmt.Errorf("fold incidents: %w", err)
	}
	if err := l.chain.Advance(ctx, time.UnixMilli(l.batch[n-1].WindowEnd)); err != nil {
		return fmt.Errorf("fold incidents: %w", err)
	}
	clear(l.batch)
	l.batch = l.batch[:0]
	return nil
}

// discardFindings is the findings store of a replay: Analyze prints them.
type discardFindings struct{}

func (discardFindings) Write(context.Context, uint64, []skew.Finding) error { return nil }

// memIncidents is the incidents store of a replay: the latest state of
// each incident, by id.
type memIncidents map[string]incident.Incident

func (m memIncidents) WriteIncidents(_ context.Context, ins []incident.Incident) error {
	for _, in := range ins {
		m[in.ID] = in
	}
	return nil
}

func (m memIncidents) LoadIncidents(context.Context) ([]incident.Incident, map[string]int64, []incident.RefusedJob, error) {
	return nil, nil, nil, nil
}

// incidents observes what is left and returns every incident in its
// latest state, by start, then job, task, subtask, cause and key. Those
// still going at the end of the input are open.
func (l *incidentLog) incidents() ([]incident.Incident, error) {
	if err := l.flush(); err != nil {
		return nil, err
	}
	out := make([]incident.Incident, 0, len(l.latest))
	for _, in := range l.latest {
		out = append(out, in)
	}
	slices.SortFunc(out, func(a, b incident.Incident) int {
		return cmp.Or(cmp.Compare(a.Start, b.Start), strings.Compare(a.JobID, b.JobID), strings.Compare(a.TaskName, b.TaskName),
			cmp.Compare(a.Subtask, b.Subtask), strings.Compare(a.Cause, b.Cause), strings.Compare(a.Key, b.Key))
	})
	return out, nil
}
