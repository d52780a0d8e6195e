package stream

import (
	"context"
	"fmt"
	"time"
)

// batchMax and batchWait bound one hand-off from the fetcher: a batch is
// sent when it has batchMax messages or batchWait after its first one, so
// batching adds at most batchWait of latency.
const (
	batchMax  = 256
	batchWait = 5 * time.Millisecond
)

// fetch runs in its own goroutine, fetching batches into queue until ctx
// ends or the source fails; then it closes queue, after reporting the error
// on errc. A full queue blocks it: back-pressure, never dropping.
//
// Batches come from spare, where the actor returns those it processed, when
// it has one: a fleet's metrics are millions of messages a minute, and a
// new batch each time was a fifth of all the process allocated.
func (r *Runner) fetch(ctx context.Context, queue chan<- []Message, spare <-chan []Message, errc chan<- error) {
	defer close(queue)
	send := func(batch []Message) bool {
		if len(batch) == 0 {
			return true
		}
		select {
		case queue <- batch:
			return true
		case <-ctx.Done():
			return false
		}
	}
	fail := func(batch []Message, err error) {
		if send(batch) && ctx.Err() == nil {
			errc <- fmt.Errorf("fetch: %w", err)
		}
	}
	for {
		msg, err := r.src.Fetch(ctx) // wait as long as it takes for the first
		if err != nil {
			fail(nil, err)
			return
		}
		var batch []Message
		select {
		case batch = <-spare:
		default:
			batch = make([]Message, 0, batchMax)
		}
		batch = append(batch, msg)
		bctx, bcancel := context.WithTimeout(ctx, batchWait)
		for len(batch) < batchMax {
			msg, err := r.src.Fetch(bctx)
			if err != nil {
				if bctx.Err() != nil && ctx.Err() == nil {
					break // the batch's time is up
				}
				bcancel()
				fail(batch, err)
				return
			}
			batch = append(batch, msg)
		}
		bcancel()
		if !send(batch) {
			return
		}
	}
}
