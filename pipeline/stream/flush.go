package stream

import (
	"context"
	"fmt"
	"math"
	"time"
)

// flush writes pending findings, then commits every offset that no open
// window holds any more.
//
// The actor consumes nothing meanwhile, so no partition can deliver: the
// time in a flush (writing, retrying, committing across a broker restart)
// counts toward no partition's idleness.
func (r *Runner) flush(ctx context.Context) error {
	r.wms.Pause()
	defer r.wms.Resume()
	start := r.now()
	if len(r.pending) > 0 {
		write := func(ctx context.Context) error {
			return r.sink.Write(ctx, uint64(r.now().UnixNano()), r.pending)
		}
		if err := r.retry(ctx, fmt.Sprintf("write %d findings", len(r.pending)), write); err != nil {
			return err
		}
		r.lastWrite = r.now()
		r.written.Add(int64(len(r.pending)))
		for i := range r.pending {
			f := &r.pending[i]
			r.m.findings.WithLabelValues(f.Kind).Inc()
			if r.onFind != nil {
				r.onFind(f)
			}
		}
		clear(r.pending)
		r.pending = r.pending[:0]
		r.m.pending.Set(0)
	}
	// Windows before the watermark's window are closed and now written.
	wm := r.stage.Watermark()
	r.m.watermark.Set(float64(wm))
	closedUpTo := r.stage.WindowStart(wm)
	if wm == math.MinInt64 {
		closedUpTo = wm
	}
	// The engine's state changes only when windows close. Save it after
	// their findings and before the offsets they free are committed:
	// a restart then resumes from a state that matches the committed
	// offsets (see skew.Engine.Snapshot).
	if closedUpTo > r.savedUpTo {
		if r.state != nil {
			r.states = r.stage.Snapshot(r.states[:0])
			if len(r.states) > 0 {
				save := func(ctx context.Context) error {
					return r.state.SaveState(ctx, r.cfg.Group, uint64(r.now().UnixNano()), r.states)
				}
				if err := r.retry(ctx, fmt.Sprintf("save engine state of %d jobs", len(r.states)), save); err != nil {
					return err
				}
				r.m.stateSaves.Inc()
			}
		}
		if adv, ok := r.sink.(Advancer); ok {
			advance := func(ctx context.Context) error { return adv.Advance(ctx, time.UnixMilli(closedUpTo)) }
			if err := r.retry(ctx, "advance the sink's event time", advance); err != nil {
				return err
			}
		}
		r.savedUpTo = closedUpTo
	}
	r.ledger.release(closedUpTo)
	cps := r.ledger.pending()
	if len(cps) > 0 {
		msgs := make([]Message, len(cps))
		for i, cp := range cps {
			// Commit takes the last message to commit, not the next to read.
			msgs[i] = Message{Topic: cp.topic, Partition: cp.partition, Offset: cp.next - 1}
		}
		if err := r.src.Commit(ctx, msgs...); err != nil {
			return fmt.Errorf("commit offsets: %w", err)
		}
		r.ledger.committed(cps)
		r.m.commits.Inc()
	}
	r.m.flush.Observe(r.now().Sub(start).Seconds())
	return nil
}
