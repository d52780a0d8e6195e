package planpub

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/pipeline/stream"
	"github.com/skewlens/skewlens/skew/plans"
)

// PlanLister reads the plans stored in the plans table. The ClickHouse
// store's PlanReader implements it.
type PlanLister interface {
	// RestorablePlans returns every task's latest plan that is not
	// retired, expired or not, the tasks whose latest plan was retired,
	// and the jobs of the plans it could not read (plans.Manager.Restore
	// refuses them).
	RestorablePlans(ctx context.Context) (plans.Stored, error)
}

// PlanLoader reads back the stored plans a PlanObserver resumes from
// (PlanObserver.Resume): StoredPlans makes the one Restore reads.
type PlanLoader interface {
	// LoadPlans returns the latest plan of every task that has one, not
	// retired, the tasks whose latest plan was retired, and the jobs of
	// the stored plans it could not read. It blocks until the read ends.
	LoadPlans(ctx context.Context) (plans.Stored, error)
}

// PlanLoaderFunc adapts a function to PlanLoader.
type PlanLoaderFunc func(ctx context.Context) (plans.Stored, error)

// LoadPlans calls f.
func (f PlanLoaderFunc) LoadPlans(ctx context.Context) (plans.Stored, error) { return f(ctx) }

// StoredPlans returns the PlanLoader of the record Restore reads: the
// compacted topic when pub is not nil (Publisher.Load, which retries
// inside), otherwise the plans table (every plan not retired, expired or
// not; one attempt).
func StoredPlans(pub *Publisher, table PlanLister) PlanLoader {
	if pub != nil {
		return PlanLoaderFunc(pub.Load)
	}
	return PlanLoaderFunc(table.RestorablePlans)
}

// Restore hands mgr the plans a restart resumes from, so that versions
// continue where the last run left them and replayed findings make no new
// versions. The compacted topic is the record when the plans go to one
// (pub not nil): it is what the Flink jobs read. Without a topic the
// plans table is, read with policy (Restore is that read's one caller).
//
// Plans that cannot be read or that mgr refuses (invalid ones) are
// skipped, and their jobs logged (refused, see logRefused) and counted
// (plans.Stats.RefusedJobs): the others are restored all the same, so one
// bad plan does not stop the pipeline. The error is a failed read.
// Restore blocks until the read ends; call it before the first Observe.
func Restore(ctx context.Context, mgr *plans.Manager, pub *Publisher, table PlanLister, policy retry.Policy, log *slog.Logger) error {
	var (
		stored plans.Stored
		from   string
		err    error
	)
	if pub != nil {
		from = "topic"
		stored, err = pub.Load(ctx) // retried inside, with the publisher's policy
	} else {
		from = "ClickHouse"
		err = retry.Do(ctx, policy, nil, func(ctx context.Context) (err error) {
			stored, err = table.RestorablePlans(ctx)
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("restore salting plans from the %s: %w", from, err)
	}
	logRefused(log, mgr.Restore(stored))
	return nil
}

// logRefused logs the jobs whose stored plans were refused, a WARN each:
// their tasks' plans restart from the engine's next findings.
func logRefused(log *slog.Logger, refused []plans.RefusedJob) {
	for _, r := range refused {
		stream.WarnRefusedState(log, "plans", r.JobID, r.Err)
	}
}
