package stream

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// ErrGenerationEnded reports that the consumer-group generation a write or
// commit belongs to is over: its partitions may have moved to another
// instance, which reads their uncommitted records again. The runner
// abandons such work instead of failing (see GroupSource).
var ErrGenerationEnded = errors.New("stream: the consumer group generation ended (partitions revoked)")

// Rebalance is what a GroupSource tells the runner of its consumer group:
// a new generation's assignment, or the end of a generation.
type Rebalance struct {
	// Generation numbers the generation; later generations have larger
	// numbers, and the Messages read in it carry it.
	Generation int64
	// Revoked is set when the generation ended: every partition of it
	// is revoked. Otherwise the generation starts, with the partitions
	// in Assigned (possibly none).
	Revoked  bool
	Assigned []Partition
	// Done, set on revocations, is called by the runner once it writes
	// nothing more of the generation. The source holds back rejoining the
	// group until then (for a bounded time), so that the partitions'
	// next owner starts only once this instance has stopped writing.
	Done func()
}

// GroupSource is a Source whose partitions move between the instances of
// a consumer group (kafkasrc). Rebalances returns the channel of its
// assignments and revocations, in order; the runner calls it once, before
// the first Fetch, and from then on must read it (the source waits for a
// revocation's Done). An assignment is sent before any Message of its
// generation is returned by Fetch. Commit refuses the Messages of a
// generation that ended with an error wrapping ErrGenerationEnded.
type GroupSource interface {
	Source
	Rebalances() <-chan Rebalance
}

// StateLoader is implemented by StateStores that read the saved engine
// state back (the ClickHouse store's Writer). With a GroupSource, the
// runner loads the group's saved state each time partitions are assigned.
type StateLoader interface {
	// LoadState returns the saved states, and those it could not read,
	// each refused with its job (they cost that job its history only).
	LoadState(ctx context.Context, group string) ([]skew.JobState, []skew.RefusedJob, error)
}

// Resumer is implemented by sinks that keep state of the jobs they see
// (open incidents, alerts): Resume drops all of it and loads again what
// is saved of the jobs that owns reports true for, as at a restart. The
// runner calls it, retrying failures as it retries writes, each time
// partitions are assigned and before it processes their records; a
// failure that is permanent stops the runner. Resume must be safe to
// call again after it failed.
//
// owns tells whether this instance owns a job now: whether the runner
// restored the job's engine state (see Owned). A job it does not own is
// another instance's, or over; a sink restores nothing of it. owns is
// safe for concurrent use, and valid until the next Resume.
type Resumer interface {
	Resume(ctx context.Context, owns func(jobID string) bool) error
}

// Owned returns the jobs of states whose sources include one of parts:
// the jobs an instance that reads parts restores. A state saved before
// sources were kept counts as read from partition 0 of its topics, which
// one instance reads (the group's assignment is by range). The result is
// a new slice; states is not changed.
func Owned(states []skew.JobState, parts []Partition) []skew.JobState {
	read := make(map[Partition]bool, len(parts))
	zero := false
	for _, p := range parts {
		read[p] = true
		zero = zero || p.ID == 0
	}
	var out []skew.JobState
	for _, st := range states {
		own := len(st.Sources) == 0 && zero
		for _, src := range st.Sources {
			own = own || read[Partition{Topic: src.Topic, ID: int(src.Partition)}]
		}
		if own {
			out = append(out, st)
		}
	}
	return out
}

// rebalance handles one event of the GroupSource.
func (r *Runner) rebalance(ctx context.Context, ev Rebalance) error {
	if ev.Revoked {
		var err error
		if ev.Generation >= r.gen {
			err = r.fence(ev.Generation)
		}
		if ev.Done != nil {
			ev.Done()
		}
		return err
	}
	if ev.Generation <= r.gen {
		return nil // an assignment older than the current one: never sent by a source that keeps order
	}
	// A revocation the source did not wait for (or did not send) ends the
	// current generation here.
	if err := r.fence(r.gen); err != nil {
		return err
	}
	return r.assign(ctx, ev)
}

// fence ends the current generation: from now on nothing that depends on
// its records is written. The findings not yet handed to the writer are
// dropped (they may belong to windows that close only because revoked
// partitions stopped delivering); the jobs handed before hold windows
// that closed while the partitions were still read, and the writer may
// finish them for up to RevokeTimeout, then they are abandoned. Then the
// windows, the engine's state, the watermarks and the offset ledger are
// dropped: the next generation starts from the committed offsets and the
// saved state.
func (r *Runner) fence(gen int64) error {
	if r.fenced {
		return nil
	}
	r.fenced = true
	if n := len(r.pending); n > 0 {
		r.m.revokedFindings.Add(float64(n))
		r.log.Info("partitions revoked: findings not written; the partitions' next owner writes them", "generation", gen, "findings", n)
	}
	r.pending = nil
	timer := time.NewTimer(r.cfg.RevokeTimeout)
	defer timer.Stop()
	for r.inflight > 0 {
		select {
		case err := <-r.results:
			if err := r.done(err); err != nil {
				return err
			}
		case <-timer.C:
			r.gcancel(ErrGenerationEnded)
		}
	}
	r.gcancel(ErrGenerationEnded)
	r.gctx, r.gcancel = context.WithCancelCause(r.wctx)
	r.feeder.Reset()
	r.ledger = newLedger()
	r.savedUpTo = math.MinInt64
	r.m.pending.Set(0)
	return nil
}

// assign starts generation ev: its partitions hold the watermark until
// they deliver, and the group's saved engine state (and the sink's, with
// a Resumer) is loaded before any of their records is processed, so that
// a job that moved here resumes where its last owner saved it.
func (r *Runner) assign(ctx context.Context, ev Rebalance) error {
	first := !r.assigned
	r.assigned = true
	for _, p := range ev.Assigned {
		// A partition of the first generation has a backlog when Backlog
		// says so; later, the committed offset of a partition that moved
		// is behind its end as a rule.
		backlog := !first || r.cfg.Backlog == nil || slices.Contains(r.cfg.Backlog, p)
		r.wms.Expect(window.Partition{Topic: p.Topic, ID: p.ID}, backlog)
	}
	jobs := 0
	if !(first && r.cfg.Afresh) {
		var err error
		if jobs, err = r.load(ctx, ev.Assigned); err != nil {
			return err
		}
	}
	r.gen, r.fenced = ev.Generation, false
	r.m.generation.Set(float64(ev.Generation))
	r.log.Info("partitions assigned", "generation", ev.Generation, "partitions", len(ev.Assigned), "resumed_jobs", jobs)
	return nil
}

// load restores into the (reset) feeder the group's saved engine state of
// the jobs whose sources are among parts (see Owned), and resumes the
// sink's state of those jobs. It returns how many jobs it restored.
func (r *Runner) load(ctx context.Context, parts []Partition) (int, error) {
	var states []skew.JobState
	if l, ok := r.state.(StateLoader); ok {
		var unread []skew.RefusedJob
		err := r.retry(ctx, "load the engine state of group "+r.cfg.Group, func(ctx context.Context) (err error) {
			states, unread, err = l.LoadState(ctx, r.cfg.Group)
			return err
		})
		if err != nil {
			return 0, err
		}
		states = Owned(states, parts)
		refused, err := r.feeder.Restore(states)
		if err != nil {
			return 0, fmt.Errorf("engine state of group %s: %w", r.cfg.Group, err)
		}
		// A state that does not decode names no source: it counts as
		// partition 0's, as a state saved before sources were kept.
		for _, u := range unread {
			if len(Owned([]skew.JobState{{JobID: u.JobID}}, parts)) > 0 {
				refused = append(refused, u)
			}
		}
		r.refused(refused)
		states = slices.DeleteFunc(states, func(st skew.JobState) bool {
			return slices.ContainsFunc(refused, func(x skew.RefusedJob) bool { return x.JobID == st.JobID })
		})
	}
	owned := make(map[string]bool, len(states))
	for _, st := range states {
		owned[st.JobID] = true
	}
	if rs, ok := r.sink.(Resumer); ok {
		resume := func(ctx context.Context) error {
			return rs.Resume(ctx, func(job string) bool { return owned[job] })
		}
		if err := r.retry(ctx, "resume the sink's state", resume); err != nil {
			return 0, err
		}
	}
	return len(states), nil
}

// refused reports the saved job states that did not restore: each job
// starts afresh, without its history, and the others go on. A job whose
// state cannot be read never stops the runner (a crash loop at every
// start would cost every job).
func (r *Runner) refused(refused []skew.RefusedJob) {
	for _, x := range refused {
		r.m.refusedStates.Inc()
		WarnRefusedState(r.log, "engine", x.JobID, x.Err, "group", r.cfg.Group)
	}
}

// accept reports whether msg belongs to the generation being processed,
// first taking the assignment of a newer generation (which the source
// sent before the message). Messages of a generation that ended are not
// processed: their partitions' owner reads them again.
func (r *Runner) accept(ctx context.Context, msg *Message) (bool, error) {
	if r.events == nil || msg.Generation == r.gen && !r.fenced {
		return true, nil
	}
	for msg.Generation > r.gen {
		select {
		case ev := <-r.events:
			if err := r.rebalance(ctx, ev); err != nil {
				return false, err
			}
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	if msg.Generation != r.gen || r.fenced {
		r.m.revokedMessages.Inc()
		return false, nil
	}
	return true, nil
}
