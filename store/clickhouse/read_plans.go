package clickhouse

import (
	"context"
	"encoding/json"
	"time"

	"github.com/skewlens/skewlens/plans"
)

// CurrentPlans returns the current plan of every task: the newest state
// per task (highest version, then revision) unless it is retired or
// expired at now (expires_at <= now; a plan without ExpiresAt, pinned or
// overridden, does not expire), ordered by job and task. The plans are as
// the writer stored them (plans.Manager applies overrides it knows of);
// apply the current overrides with plans.Apply.
//
// With the zero now, expired plans are returned too: every task's newest
// state that is not retired, which is what plans.Manager.Restore takes
// at start-up (its Advance then retires what has expired by event time).
func (r *PlanReader) CurrentPlans(ctx context.Context, now time.Time) ([]plans.Plan, error) {
	return r.currentPlans(ctx, "", "", now)
}

// Plan returns the current plan of one task, or nil when it has none (no
// plan, or the newest is retired or expired at now).
func (r *PlanReader) Plan(ctx context.Context, jobID, taskName string, now time.Time) (*plans.Plan, error) {
	if jobID == "" || taskName == "" {
		return nil, nil
	}
	ps, err := r.currentPlans(ctx, jobID, taskName, now)
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	return &ps[0], nil
}

func (r *PlanReader) currentPlans(ctx context.Context, jobID, taskName string, now time.Time) ([]plans.Plan, error) {
	q, args := currentPlansQuery(r.s.table(tablePlans), jobID, taskName, now)
	var out []plans.Plan
	err := r.s.query(ctx, "read current plans", q, args, func(rows rowScanner) error {
		out = out[:0]
		for rows.Next() {
			var (
				job, task, body string
				retired         uint8
				expires         int64
			)
			if err := rows.Scan(&job, &task, &body, &retired, &expires); err != nil {
				return err
			}
			var p plans.Plan
			if err := json.Unmarshal([]byte(body), &p); err != nil {
				return permanentErr("decode plan "+plans.Key(job, task), err)
			}
			// The columns hold the exact bytes; JSON cannot carry
			// invalid UTF-8.
			p.JobID, p.TaskName = job, task
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Overrides returns every active override (not deleted), ordered by job,
// task, action and key.
func (r *PlanReader) Overrides(ctx context.Context) ([]plans.Override, error) {
	q := overridesQuery(r.s.table(tablePlanOverrides))
	var out []plans.Override
	err := r.s.query(ctx, "read overrides", q, nil, func(rows rowScanner) error {
		out = out[:0]
		for rows.Next() {
			var (
				job, task, action, key, body string
				deleted                      uint8
			)
			if err := rows.Scan(&job, &task, &action, &key, &body, &deleted); err != nil {
				return err
			}
			var o plans.Override
			if err := json.Unmarshal([]byte(body), &o); err != nil {
				return permanentErr("decode override "+plans.Key(job, task)+" "+action, err)
			}
			o.JobID, o.TaskName, o.Action, o.Key = job, task, action, key
			out = append(out, o)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
