package stream

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// flushJob is one hand-off from the actor to the writer: findings to
// write, then (when windows closed) the engine state to save and the event
// time to advance the sink to, then the offsets to commit. The writer does
// the jobs in order, so offsets are committed only after everything they
// depend on is stored.
type flushJob struct {
	// ctx is the writer's context for the job's generation (see fence),
	// gen the generation whose offsets it commits.
	ctx       context.Context
	gen       int64
	findings  []skew.Finding
	states    []skew.JobState
	advance   bool
	advanceTo int64 // the end of the last closed window, epoch ms
	commits   []commitPoint
}

func (j *flushJob) empty() bool {
	return len(j.findings) == 0 && len(j.states) == 0 && !j.advance && len(j.commits) == 0
}

// flush hands the writer what is ready: pending findings, and, when
// windows have closed since the last flush, the engine's state and the
// offsets those windows free. It blocks while the writer has a job waiting
// already (the sink is slow or away): consumption pauses, the fetch queue
// fills, the fetcher waits, and memory stays bounded. It returns the
// writer's error if a job failed.
func (r *Runner) flush() error {
	if err := r.reap(false); err != nil {
		return err
	}
	if r.fenced {
		return nil // the generation ended: nothing of it is written any more
	}
	job := &flushJob{ctx: r.gctx, gen: r.gen}
	if len(r.pending) > 0 {
		job.findings = r.pending
		r.handed += int64(len(job.findings))
		r.pending = nil
		r.lastWrite = r.now()
		r.m.pending.Set(0)
	}
	// Windows before the watermark's window are closed: their findings
	// are in this job or an earlier one.
	wm := r.feeder.Watermark()
	r.m.watermark.Set(float64(wm))
	r.m.engine(r.feeder.Jobs(), r.feeder.RefusedJobs())
	stalled, warn := r.stall.check(r.now(), wm, r.messages.Load())
	r.m.watermarkStalled.Set(stalled.Seconds())
	if warn {
		r.warnStall(stalled, wm)
	}
	closedUpTo := r.feeder.WindowStart(wm)
	if wm == math.MinInt64 {
		closedUpTo = wm
	}
	// The engine's state changes only when windows close. It is saved
	// after their findings and before the offsets they free are committed:
	// a restart then resumes from a state that matches the committed
	// offsets (see skew.Engine.Snapshot).
	if closedUpTo > r.savedUpTo {
		if r.state != nil {
			job.states = r.feeder.Snapshot(nil) // the writer's own copy
		}
		job.advance, job.advanceTo = true, closedUpTo
		r.savedUpTo = closedUpTo
	}
	r.ledger.release(closedUpTo)
	job.commits = r.ledger.pending()
	// Counted as committed once handed over: a failed job stops the
	// runner, and a restart reads from what was really committed.
	r.ledger.committed(job.commits)
	if job.empty() {
		return nil
	}
	// In flight from now on: the pause must start before the writer can
	// take the job, or time the writer spends on it could escape it.
	r.inflight++
	if r.inflight == 1 {
		r.wms.Pause()
	}
	for {
		select {
		case r.jobs <- job:
			return nil
		case err := <-r.results:
			if err := r.done(err); err != nil {
				return err
			}
		case ev := <-r.events:
			// A rebalance while the writer is busy: a revocation drops
			// this job (its windows are read again by the partitions'
			// next owner) and waits for the writer.
			r.inflight-- // not handed: fence must not wait for it
			if r.inflight == 0 {
				r.wms.Resume()
			}
			if err := r.rebalance(r.runCtx, ev); err != nil {
				return err
			}
			if r.fenced || r.gen != job.gen {
				return nil
			}
			r.inflight++
			if r.inflight == 1 {
				r.wms.Pause()
			}
		case <-r.wctx.Done():
			return fmt.Errorf("hand %d findings to the writer: %w", len(job.findings), r.wctx.Err())
		}
	}
}

// done takes one job's result from the writer. The time from handing a
// job to an idle writer until the writer is idle again is a pause of the
// watermarks: as when the actor wrote itself, no partition may go idle
// while the sink takes a write or a commit waits across a broker restart
// (the fetcher is stalled then too), or the first partition to deliver
// afterwards would move the watermark past the others' records.
//
// A job of a revoked generation that could not be finished
// (ErrGenerationEnded) is no error: its offsets stay uncommitted, and the
// partitions' next owner reads their records again.
func (r *Runner) done(err error) error {
	r.inflight--
	if r.inflight == 0 {
		r.wms.Resume()
	}
	if errors.Is(err, ErrGenerationEnded) {
		r.m.revokedJobs.Inc()
		r.log.Info("a write of a revoked generation was abandoned; the partitions' next owner reads their records again", "err", err)
		return nil
	}
	return err
}

// reap takes the results of the jobs the writer finished; with wait, it
// waits until the writer has done every job handed to it. It returns the
// first error: the writer stops there, and the jobs after it never end.
func (r *Runner) reap(wait bool) error {
	for r.inflight > 0 {
		if wait {
			if err := r.done(<-r.results); err != nil {
				return err
			}
			continue
		}
		select {
		case err := <-r.results:
			if err := r.done(err); err != nil {
				return err
			}
		default:
			return nil
		}
	}
	return nil
}

// finalFlush is the drain when Run ends: it hands the writer its last
// job and waits until the writer has done them all. The writer outlives
// ctx (the caller's cancellation is what ended Run) but not
// DrainTimeout after it: then its context ends, and what is not written
// is read again after a restart (Run logs how much).
func (r *Runner) finalFlush() error {
	start, before := time.Now(), r.written.Load()
	if err := r.flush(); err != nil {
		return err // the writer has stopped, or its time is up
	}
	r.closeJobs()
	if err := r.reap(true); err != nil {
		return err
	}
	r.log.Info("drained: the findings of closed windows are written and their offsets committed",
		"findings", r.written.Load()-before, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// warnStall logs that the watermark has stood still for d while messages
// kept arriving, and which partition holds it.
func (r *Runner) warnStall(d time.Duration, wm int64) {
	attrs := []any{"for", d.Round(time.Second), "watermark", time.UnixMilli(wm).UTC().Format(time.RFC3339)}
	p, ts, waiting, ok := r.wms.Holder()
	switch {
	case !ok:
		attrs = append(attrs, "held_by", "no partition with an event time")
	case waiting:
		attrs = append(attrs, "held_by", fmt.Sprintf("%s/%d", p.Topic, p.ID), "reason", "expected partition has delivered nothing yet")
	default:
		attrs = append(attrs, "held_by", fmt.Sprintf("%s/%d", p.Topic, p.ID),
			"partition_event_time", time.UnixMilli(ts).UTC().Format(time.RFC3339),
			"reason", "the lowest event time of the partitions that delivered one within the idle timeout")
	}
	r.log.Warn("watermark stands still while messages arrive: no window closes", attrs...)
}
