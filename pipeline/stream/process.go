package stream

import (
	"bytes"
	"context"
	"fmt"
	"math"

	"github.com/skewlens/skewlens/pipeline/decode"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
)

// process decodes one message (one or more lines) into the window feeder.
func (r *Runner) process(ctx context.Context, msg Message) error {
	r.m.message(msg.Topic).Inc()
	r.messages.Add(1)
	k := partKey{msg.Topic, msg.Partition}
	wp := window.Partition{Topic: msg.Topic, ID: msg.Partition}
	src := skew.Source{Topic: msg.Topic, Partition: int32(msg.Partition)}
	r.ledger.consumed(k, msg.Offset)
	r.dec.DefaultTS = msg.Time.UnixMilli()
	rest := msg.Value
	for len(rest) > 0 {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		kind, err := r.dec.Decode(line)
		if err != nil {
			reason, _ := decode.ReasonOf(err)
			r.m.lines.WithLabelValues(reason.String()).Inc()
			if derr := r.dead.Send(ctx, msg, reason.String(), err.Error()); derr != nil {
				// The message is unfinished: it holds its offset in a window
				// that never closes, so no commit passes it (Run may still
				// drain, when it is stopping) and a restart reads it again.
				r.ledger.hold(k, math.MaxInt64, msg.Offset)
				return fmt.Errorf("dead-letter offset %d of %s/%d: %w", msg.Offset, msg.Topic, msg.Partition, derr)
			}
			continue
		}
		var ts int64
		var v skew.Verdict
		switch kind {
		case decode.KindKeySample:
			ts = r.dec.Sample.TS
			r.dec.Sample.Source = src
			r.pending, v = r.feeder.Sample(&r.dec.Sample, r.pending)
		case decode.KindMetric:
			ts = r.dec.Metric.TS
			r.dec.Metric.Source = src
			r.pending, v = r.feeder.Metric(&r.dec.Metric, r.pending)
		default:
			r.m.outcomeSkipped.Inc()
			continue
		}
		switch {
		case v == skew.Late:
			r.m.outcomeLate.Inc()
			continue
		case v == skew.Replayed:
			// Written before a restart; holds no window, so its offset may
			// be committed.
			r.m.outcomeReplayed.Inc()
			continue
		case v != skew.Accepted:
			r.m.outcomeRejected.Inc()
			continue
		case kind == decode.KindKeySample:
			r.m.outcomeSample.Inc()
		default:
			r.m.outcomeMetric.Inc()
		}
		r.ledger.hold(k, r.feeder.WindowStart(ts), msg.Offset)
		r.wms.Observe(wp, ts)
	}
	r.wms.Delivered(wp)
	r.advance()
	r.m.pending.Set(float64(len(r.pending)))
	return nil
}

// advance moves the watermark to the lowest event time over the active
// partitions, minus the feeder's delay (see window.Watermarks). Only
// accepted events count: a late, replayed or rejected one holds no window.
func (r *Runner) advance() {
	r.pending = r.feeder.Advance(r.pending)
}
