package serve

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew/plans"
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
	// served is the plan served for each task (GET /v1/actions reads
	// which plans are in force); not to be modified.
	served map[planTask]*plans.Plan
	// named are the served plans that carry a job name: plans.Lineage's
	// candidates for a new run of a job; not to be modified.
	named []*plans.Plan
	// staleSince is set on the copy of the last good snapshot that get
	// hands out while the store is unavailable: since when it has been.
	staleSince time.Time
}

// flight is one snapshot refresh; waiters block on done.
type flight struct {
	done chan struct{}
	snap *snapshot
	err  error
}

// snapshots caches the snapshot for ttl and runs at most one refresh at a
// time; requests that find it stale wait for the running refresh.
//
// While the store is unavailable (a refresh failed with an error that is
// not permanent, and none succeeded since), requests are answered at
// once from the last good snapshot, marked with since when, and a
// refresh keeps running in the background (one at a time): pollers keep
// the plan they were given instead of waiting for a timeout each, and
// the first refresh that succeeds ends it. Before any good snapshot
// there is nothing to fall back on, and the error is returned.
type snapshots struct {
	ttl     time.Duration
	timeout time.Duration
	build   func(ctx context.Context) (*snapshot, error)
	now     func() time.Time
	m       *metrics

	mu       sync.Mutex
	cur      *snapshot
	inflight *flight
	// last is the last good snapshot, kept past its expiry and past
	// invalidate; downSince is when the first refresh that failed since
	// it started (zero while the store answers).
	last      *snapshot
	downSince time.Time
}

// get returns a fresh snapshot, or, while the store is unavailable, a
// copy of the last good one with staleSince set. It blocks until the
// refresh it needs ends or ctx ends, but not while the store is known
// to be unavailable. The refresh itself runs on its own context bounded
// by timeout, so one impatient client does not fail the others.
func (c *snapshots) get(ctx context.Context) (*snapshot, error) {
	c.mu.Lock()
	if s := c.cur; s != nil && c.now().Before(s.expires) {
		c.mu.Unlock()
		c.m.snapshots.WithLabelValues("hit").Inc()
		return s, nil
	}
	// While the store is unavailable the answer is the stale copy, and
	// a refresh runs (or keeps running) in the background to find out
	// when it is back.
	stale := c.staleLocked()
	f := c.inflight
	if f == nil {
		f = &flight{done: make(chan struct{})}
		c.inflight = f
		go c.refresh(f)
		if stale == nil {
			c.m.snapshots.WithLabelValues("refreshed").Inc()
		}
	} else if stale == nil {
		c.m.snapshots.WithLabelValues("shared").Inc()
	}
	c.mu.Unlock()
	if stale != nil {
		c.m.snapshots.WithLabelValues("stale").Inc()
		return stale, nil
	}
	select {
	case <-f.done:
		if f.err != nil {
			c.mu.Lock()
			stale := c.staleLocked()
			c.mu.Unlock()
			if stale != nil {
				c.m.snapshots.WithLabelValues("stale").Inc()
				return stale, nil
			}
		}
		return f.snap, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// staleLocked returns a copy of the last good snapshot marked stale
// while the store is unavailable, else nil. c.mu is held.
func (c *snapshots) staleLocked() *snapshot {
	if c.last == nil || c.downSince.IsZero() {
		return nil
	}
	s := *c.last
	s.staleSince = c.downSince
	return &s
}

func (c *snapshots) refresh(f *flight) {
	started := c.now()
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	snap, err := c.build(ctx)
	c.mu.Lock()
	switch {
	case err != nil:
		c.m.snapshots.WithLabelValues("failed").Inc()
		// A permanent error (bad data, a missing table) is no outage:
		// it is answered as it is, not papered over with old plans.
		if !retry.IsPermanent(err) && c.downSince.IsZero() {
			c.downSince = started
		}
	case c.inflight == f:
		// Not invalidated meanwhile: later requests may reuse it.
		snap.expires = c.now().Add(c.ttl)
		c.cur, c.last = snap, snap
		c.downSince = time.Time{}
	default:
		// Read before a write through this server: not to be reused,
		// but the store answers again.
		c.downSince = time.Time{}
	}
	if c.inflight == f {
		c.inflight = nil
	}
	c.mu.Unlock()
	f.snap, f.err = snap, err
	close(f.done)
}

// invalidate drops the snapshot and detaches a running refresh, which may
// have read the store before a write: the next get reads again. A write
// just succeeded, so the store answers: that get waits for its read
// rather than answer stale, and sees the write. The last good snapshot
// stays, for answers should the store go away again.
func (c *snapshots) invalidate() {
	c.mu.Lock()
	c.cur, c.inflight = nil, nil
	c.downSince = time.Time{}
	c.mu.Unlock()
}

// buildSnapshot reads the current plans and overrides and applies the
// overrides to each task's plan.
func buildSnapshot(ctx context.Context, store servestore.Store, now time.Time) (*snapshot, error) {
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
	snap := &snapshot{tasks: make(map[planTask][]byte, len(ids)), served: make(map[planTask]*plans.Plan, len(ids))}
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
		snap.tasks[t], snap.served[t] = body, p
		if p.JobName != "" {
			snap.named = append(snap.named, p)
		}
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
