package clickhouse

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/skewlens/skewlens/skew/plans"
)

// CurrentPlans returns the current plan of every task: the newest state
// per task (highest version, then revision) unless it is retired or
// expired at now (expires_at <= now; a plan without ExpiresAt, pinned or
// overridden, does not expire), ordered by job and task. The plans are as
// the writer stored them (plans.Manager applies overrides it knows of);
// apply the current overrides with plans.Apply.
//
// With the zero now, expired plans are returned too: every task's newest
// state that is not retired (RestorablePlans has those for a restart).
func (r *PlanReader) CurrentPlans(ctx context.Context, now time.Time) ([]plans.Plan, error) {
	ps, refused, err := r.currentPlans(ctx, "", "", now)
	r.skipped(refused)
	return ps, err
}

// skipped logs the plans a read left out because their body does not
// decode: a reader serves the others.
func (r *PlanReader) skipped(refused []plans.RefusedJob) {
	for _, j := range refused {
		r.s.log.Warn("clickhouse: skipping a plans row whose body does not decode", "job", fmt.Sprintf("%.64q", j.JobID), "err", j.Err)
	}
}

// Plan returns the current plan of one task, or nil when it has none (no
// plan, or the newest is retired or expired at now).
func (r *PlanReader) Plan(ctx context.Context, jobID, taskName string, now time.Time) (*plans.Plan, error) {
	if jobID == "" || taskName == "" {
		return nil, nil
	}
	ps, refused, err := r.currentPlans(ctx, jobID, taskName, now)
	r.skipped(refused)
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	return &ps[0], nil
}

// RestorablePlans returns what plans.Manager.Restore takes at start-up
// and at each assignment: every task's newest state, ordered by job and
// task, as a plan when it is not retired (expired or not), else as a
// retirement (its version, and when: the retired row's updated_at), and
// the jobs of the plans whose stored body does not decode (Restore
// refuses them, so that one corrupt plan costs only its task its plan).
func (r *PlanReader) RestorablePlans(ctx context.Context) (plans.Stored, error) {
	var out plans.Stored
	err := r.s.query(ctx, "read restorable plans", restorablePlansQuery(r.s.table(tablePlans)), nil, func(rows rowScanner) error {
		out = plans.Stored{}
		for rows.Next() {
			var (
				job, task, body  string
				retired          uint8
				version          uint64
				updated, expires int64
			)
			if err := rows.Scan(&job, &task, &body, &retired, &version, &updated, &expires); err != nil {
				return err
			}
			if retired != 0 {
				out.Retired = append(out.Retired, plans.RetiredTask{JobID: job, TaskName: task, Version: version, At: time.UnixMilli(updated).UTC()})
				continue
			}
			p, err := decodePlan(job, task, body)
			if err != nil {
				out.Unreadable = append(out.Unreadable, plans.RefusedJob{JobID: job, Err: err})
				continue
			}
			out.Plans = append(out.Plans, p)
		}
		return nil
	})
	if err != nil {
		return plans.Stored{}, err
	}
	return out, nil
}

// decodePlan decodes a plans row's body.
func decodePlan(job, task, body string) (plans.Plan, error) {
	var p plans.Plan
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		return p, fmt.Errorf("plan of task %.64q does not decode: %w", task, err)
	}
	// The columns hold the exact bytes; JSON cannot carry invalid UTF-8.
	p.JobID, p.TaskName = job, task
	return p, nil
}

// currentPlans reads the plans of CurrentPlans and Plan; a plan whose
// body does not decode is left out and returned among the refused.
func (r *PlanReader) currentPlans(ctx context.Context, jobID, taskName string, now time.Time) ([]plans.Plan, []plans.RefusedJob, error) {
	q, args := currentPlansQuery(r.s.table(tablePlans), jobID, taskName, now)
	var (
		out     []plans.Plan
		refused []plans.RefusedJob
	)
	err := r.s.query(ctx, "read current plans", q, args, func(rows rowScanner) error {
		out, refused = out[:0], refused[:0]
		for rows.Next() {
			var (
				job, task, body string
				retired         uint8
				expires         int64
			)
			if err := rows.Scan(&job, &task, &body, &retired, &expires); err != nil {
				return err
			}
			p, err := decodePlan(job, task, body)
			if err != nil {
				refused = append(refused, plans.RefusedJob{JobID: job, Err: err})
				continue
			}
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, refused, nil
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
