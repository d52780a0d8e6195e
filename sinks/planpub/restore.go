package planpub

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/plans"
)

// PlanLister reads the plans stored in the plans table. The ClickHouse
// store implements it.
type PlanLister interface {
	// CurrentPlans returns the plans not retired at now; the zero time
	// returns every plan not retired, expired or not.
	CurrentPlans(ctx context.Context, now time.Time) ([]plans.Plan, error)
}

// PlanLoader reads back the stored plans a Sink resumes from
// (Sink.Resume): StoredPlans makes the one Restore reads.
type PlanLoader interface {
	// LoadPlans returns the latest plan of every task that has one, not
	// retired. It blocks until the read ends.
	LoadPlans(ctx context.Context) ([]plans.Plan, error)
}

// PlanLoaderFunc adapts a function to PlanLoader.
type PlanLoaderFunc func(ctx context.Context) ([]plans.Plan, error)

// LoadPlans calls f.
func (f PlanLoaderFunc) LoadPlans(ctx context.Context) ([]plans.Plan, error) { return f(ctx) }

// StoredPlans returns the PlanLoader of the record Restore reads: the
// compacted topic when pub is not nil (Publisher.Load, which retries
// inside), otherwise the plans table (every plan not retired, expired or
// not; one attempt).
func StoredPlans(pub *Publisher, table PlanLister) PlanLoader {
	if pub != nil {
		return PlanLoaderFunc(pub.Load)
	}
	return PlanLoaderFunc(func(ctx context.Context) ([]plans.Plan, error) {
		return table.CurrentPlans(ctx, time.Time{})
	})
}

// Restore hands mgr the plans a restart resumes from, so that versions
// continue where the last run left them and replayed findings make no new
// versions. The compacted topic is the record when the plans go to one
// (pub not nil): it is what the Flink jobs read. Without a topic the
// plans table is, read with policy (Restore is that read's one caller).
//
// Plans mgr refuses (invalid ones) are logged and skipped: the others are
// restored all the same, so one bad plan does not stop the pipeline. The
// error is a failed read. Restore blocks until the read ends; call it
// before the first Observe.
func Restore(ctx context.Context, mgr *plans.Manager, pub *Publisher, table PlanLister, policy retry.Policy, log *slog.Logger) error {
	var (
		stored []plans.Plan
		from   string
		err    error
	)
	if pub != nil {
		from = "topic"
		stored, err = pub.Load(ctx) // retried inside, with the publisher's policy
	} else {
		from = "ClickHouse"
		err = retry.Do(ctx, policy, nil, func(ctx context.Context) (err error) {
			stored, err = table.CurrentPlans(ctx, time.Time{})
			return err
		})
	}
	if err != nil {
		return fmt.Errorf("restore salting plans from the %s: %w", from, err)
	}
	if err := mgr.Restore(stored); err != nil {
		log.Warn("some salting plans were not restored", "from", from, "err", err)
	}
	return nil
}
