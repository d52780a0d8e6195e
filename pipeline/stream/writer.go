package stream

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// writer runs in its own goroutine: it does the jobs in order until jobs is
// closed or one fails, and reports each job's result on results (nil or
// the error; it stops after an error, but for ErrGenerationEnded: the
// jobs of a revoked generation are abandoned, the next ones done). ctx bounds its calls to the sink
// and the source. The writer and the actor share nothing else but the
// atomic counters and the metrics, which are safe for concurrent use.
func (r *Runner) writer(ctx context.Context, finished chan<- struct{}) {
	defer close(finished)
	for job := range r.jobs {
		jctx := job.ctx
		if jctx == nil {
			jctx = ctx
		}
		err := r.do(jctx, job)
		if err != nil && jctx.Err() != nil && errors.Is(context.Cause(jctx), ErrGenerationEnded) {
			err = fmt.Errorf("%w: %w", ErrGenerationEnded, err)
		}
		r.results <- err // never blocks: it holds as many as can be in flight
		if err != nil && !errors.Is(err, ErrGenerationEnded) {
			return
		}
	}
}

// do runs one job: write the findings, save the engine state, advance the
// sink's event time, commit the offsets, each retried (see retry) before
// the next starts.
func (r *Runner) do(ctx context.Context, job *flushJob) error {
	start := time.Now()
	if len(job.findings) > 0 {
		write := func(ctx context.Context) error {
			return r.sink.Write(ctx, uint64(time.Now().UnixNano()), job.findings)
		}
		if err := r.retry(ctx, fmt.Sprintf("write %d findings", len(job.findings)), write); err != nil {
			return err
		}
		r.written.Add(int64(len(job.findings)))
		r.m.stopped.written(job.findings, time.Now())
		for i := range job.findings {
			f := &job.findings[i]
			r.m.findings.WithLabelValues(f.Kind).Inc()
			if r.onFind != nil {
				r.onFind(f)
			}
		}
	}
	if len(job.states) > 0 {
		save := func(ctx context.Context) error {
			return r.state.SaveState(ctx, r.cfg.Group, uint64(time.Now().UnixNano()), job.states)
		}
		if err := r.retry(ctx, fmt.Sprintf("save engine state of %d jobs", len(job.states)), save); err != nil {
			return err
		}
		r.m.stateSaves.Inc()
		r.m.savedJobs(job.states)
	}
	if adv, ok := r.sink.(Advancer); ok && job.advance {
		advance := func(ctx context.Context) error { return adv.Advance(ctx, time.UnixMilli(job.advanceTo)) }
		if err := r.retry(ctx, "advance the sink's event time", advance); err != nil {
			return err
		}
	}
	if len(job.commits) > 0 {
		msgs := make([]Message, len(job.commits))
		for i, cp := range job.commits {
			// Commit takes the last message to commit, not the next to read.
			msgs[i] = Message{Topic: cp.topic, Partition: cp.partition, Offset: cp.next - 1, Generation: job.gen}
		}
		if err := r.src.Commit(ctx, msgs...); err != nil {
			return fmt.Errorf("commit offsets: %w", err)
		}
		r.m.commits.Inc()
	}
	r.m.flush.Observe(time.Since(start).Seconds())
	return nil
}
