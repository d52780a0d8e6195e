package serve

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/skewlens/skewlens/plans"
)

// planTask identifies one task's plan.
type planTask struct{ job, task string }

// snapshot holds the answers of GET /v1/salting and GET
// /v1/salting/{job_id}/{task_name}, built from one read of the current
// plans and overrides.
type snapshot struct {
	expires time.Time
	all     []byte              // {"plans":[...]}
	tasks   map[planTask][]byte // one plan each
}

// flight is one snapshot refresh; waiters block on done.
type flight struct {
	done chan struct{}
	snap *snapshot
	err  error
}

// snapshots caches the snapshot for ttl and runs at most one refresh at a
// time; requests that find it stale wait for the running refresh.
type snapshots struct {
	ttl     time.Duration
	timeout time.Duration
	build   func(ctx context.Context) (*snapshot, error)
	now     func() time.Time
	m       *metrics

	mu       sync.Mutex
	cur      *snapshot
	inflight *flight
}

// get returns a fresh snapshot. It blocks until the refresh it needs ends
// or ctx ends. The refresh itself runs on its own context bounded by
// timeout, so one impatient client does not fail the others.
func (c *snapshots) get(ctx context.Context) (*snapshot, error) {
	c.mu.Lock()
	if s := c.cur; s != nil && c.now().Before(s.expires) {
		c.mu.Unlock()
		c.m.snapshots.WithLabelValues("hit").Inc()
		return s, nil
	}
	f := c.inflight
	if f == nil {
		f = &flight{done: make(chan struct{})}
		c.inflight = f
		go c.refresh(f)
		c.m.snapshots.WithLabelValues("refreshed").Inc()
	} else {
		c.m.snapshots.WithLabelValues("shared").Inc()
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.snap, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *snapshots) refresh(f *flight) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	snap, err := c.build(ctx)
	c.mu.Lock()
	if err != nil {
		c.m.snapshots.WithLabelValues("failed").Inc()
	} else if c.inflight == f {
		// Not invalidated meanwhile: later requests may reuse it.
		snap.expires = c.now().Add(c.ttl)
		c.cur = snap
	}
	if c.inflight == f {
		c.inflight = nil
	}
	c.mu.Unlock()
	f.snap, f.err = snap, err
	close(f.done)
}

// invalidate drops the snapshot and detaches a running refresh, which may
// have read the store before a write: the next get reads again.
func (c *snapshots) invalidate() {
	c.mu.Lock()
	c.cur, c.inflight = nil, nil
	c.mu.Unlock()
}

// buildSnapshot reads the current plans and overrides and applies the
// overrides to each task's plan.
func buildSnapshot(ctx context.Context, store Store, now time.Time) (*snapshot, error) {
	stored, err := store.Plans.CurrentPlans(ctx, now)
	if err != nil {
		return nil, fmt.Errorf("read current plans: %w", err)
	}
	ovs, err := store.Plans.Overrides(ctx)
	if err != nil {
		return nil, fmt.Errorf("read overrides: %w", err)
	}
	byTask := map[planTask]*plans.Plan{}
	for i := range stored {
		p := &stored[i]
		byTask[planTask{p.JobID, p.TaskName}] = p
	}
	ovsByTask := map[planTask][]plans.Override{}
	for _, o := range ovs {
		t := planTask{o.JobID, o.TaskName}
		ovsByTask[t] = append(ovsByTask[t], o)
	}
	ids := make([]planTask, 0, len(byTask)+len(ovsByTask))
	for t := range byTask {
		ids = append(ids, t)
	}
	for t := range ovsByTask {
		if byTask[t] == nil {
			ids = append(ids, t)
		}
	}
	slices.SortFunc(ids, func(a, b planTask) int {
		return cmp.Or(cmp.Compare(a.job, b.job), cmp.Compare(a.task, b.task))
	})
	snap := &snapshot{tasks: make(map[planTask][]byte, len(ids))}
	var all bytes.Buffer
	all.WriteString(`{"plans":[`)
	n := 0
	for _, t := range ids {
		p := servedPlan(byTask[t], ovsByTask[t])
		if p == nil {
			continue
		}
		body, err := encodeJSON(p)
		if err != nil {
			return nil, fmt.Errorf("encode plan %s: %w", plans.Key(t.job, t.task), err)
		}
		snap.tasks[t] = body
		if n > 0 {
			all.WriteByte(',')
		}
		all.Write(bytes.TrimSuffix(body, []byte("\n")))
		n++
	}
	all.WriteString("]}\n")
	snap.all = all.Bytes()
	return snap, nil
}

// servedPlan is the plan served for a task: the stored plan (nil when the
// task has none) with the overrides applied by plans.Apply.
//
// The stored plan is what skewlens run published, which already includes
// the overrides it has picked up. When applying the overrides again
// changes nothing material, the stored version stands; otherwise the
// plan is served as the next version, which is the one skewlens run
// publishes once it picks the overrides up, so clients see one version
// change, not two.
func servedPlan(stored *plans.Plan, ovs []plans.Override) *plans.Plan {
	p := plans.Apply(stored, ovs)
	if p == nil || stored == nil {
		return p
	}
	if plans.SameMaterial(p, stored) {
		p.Version, p.GeneratedAt = stored.Version, stored.GeneratedAt
	} else {
		p.Version = stored.Version + 1
	}
	return p
}
