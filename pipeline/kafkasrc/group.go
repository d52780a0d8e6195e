package kafkasrc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/pipeline/stream"
)

// ErrGenerationEnded is returned (wrapped) by Commit for records of a
// consumer-group generation that ended: their partitions may belong to
// another member now, which reads them again from the last commit. It
// wraps stream.ErrGenerationEnded.
var ErrGenerationEnded = fmt.Errorf("kafkasrc: %w", stream.ErrGenerationEnded)

// generation is one generation of the consumer group, as this member
// sees it.
type generation struct {
	id    int64
	g     *kafka.Generation
	ended atomic.Bool
}

// fetched is one item of the Source's queue: a record read in generation
// gen, or a fetch error that no retry fixes.
type fetched struct {
	msg kafka.Message
	gen int64
	err error
}

// start joins the consumer group, once: on the first Fetch, or when the
// runner asks for the rebalances (so that it hears of the first
// generation).
func (s *Source) start() error {
	s.startOnce.Do(func() {
		s.group, s.startErr = kafka.NewConsumerGroup(s.groupConfig())
		if s.startErr != nil {
			s.startErr = fmt.Errorf("kafkasrc: consumer group: %w", s.startErr)
			close(s.runDone)
			return
		}
		go s.run()
	})
	return s.startErr
}

func (s *Source) groupConfig() kafka.ConsumerGroupConfig {
	start := kafka.FirstOffset
	if s.cfg.StartFromLatest {
		start = kafka.LastOffset
	}
	return kafka.ConsumerGroupConfig{
		ID:      s.cfg.GroupID,
		Brokers: s.cfg.Brokers,
		Topics:  s.cfg.Topics,
		// Range assignment gives partition i of every topic to the same
		// member when the topics have equal partition counts. Producers key
		// by job_id, so a job's metrics and key samples (two topics) meet on
		// one instance, which the diagnosis needs. Round-robin would split
		// them.
		GroupBalancers:    []kafka.GroupBalancer{kafka.RangeGroupBalancer{}},
		HeartbeatInterval: time.Second,
		SessionTimeout:    10 * time.Second,
		RebalanceTimeout:  rebalanceTimeout,
		JoinGroupBackoff:  time.Second,
		StartOffset:       start,
		Logger:            s.debugLogger(),
		ErrorLogger:       s.errorLogger(),
	}
}

// rebalanceTimeout is how long the group waits for its members to rejoin
// in a rebalance; Config.RevokeTimeout stays below it.
const rebalanceTimeout = 10 * time.Second

// run takes the group's generations one after another until Close.
func (s *Source) run() {
	defer close(s.runDone)
	for {
		g, err := s.group.Next(s.runCtx)
		switch {
		case err == nil:
			s.generation(g)
		case s.runCtx.Err() != nil, errors.Is(err, kafka.ErrGroupClosed):
			return
		default:
			// kafka-go backs off before joining again.
			s.failures.Add(1)
			s.m.fetchErrors.WithLabelValues("transient").Inc()
			s.log.Warn("joining the consumer group failed; retrying", "group", s.cfg.GroupID, "err", err)
		}
	}
}

// generation starts reading the partitions assigned in g, after telling
// the runner, and arranges that its end is told the runner before the
// member rejoins.
func (s *Source) generation(g *kafka.Generation) {
	gen := &generation{id: int64(g.ID), g: g}
	var parts []stream.Partition
	for topic, as := range g.Assignments {
		for _, a := range as {
			parts = append(parts, stream.Partition{Topic: topic, ID: a.ID})
		}
	}
	slices.SortFunc(parts, func(a, b stream.Partition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.ID, b.ID))
	})
	s.m.rebalances.Inc()
	s.log.Info("consumer group generation started", "group", s.cfg.GroupID, "generation", g.ID, "member", g.MemberID, "partitions", len(parts))
	s.current.Store(gen)
	if s.listening.Load() {
		select {
		case s.events <- stream.Rebalance{Generation: gen.id, Assigned: parts}:
		case <-s.runCtx.Done():
			return
		}
	}
	fctx, stop := context.WithCancel(s.runCtx)
	var readers sync.WaitGroup
	for topic, as := range g.Assignments {
		for _, a := range as {
			readers.Add(1)
			go func() {
				defer readers.Done()
				s.readPartition(fctx, gen, topic, a)
			}()
		}
	}
	// The group waits for this function before the member rejoins: the
	// runner stops writing what depends on these partitions first.
	g.Start(func(ctx context.Context) {
		<-ctx.Done()
		gen.ended.Store(true)
		s.log.Info("consumer group generation ended; partitions revoked", "group", s.cfg.GroupID, "generation", g.ID)
		if s.listening.Load() && !s.closed.Load() {
			s.revoke(gen)
		}
		stop()
		readers.Wait()
	})
}

// revoke tells the runner that gen ended and waits, up to
// Config.RevokeTimeout, until it has stopped writing.
func (s *Source) revoke(gen *generation) {
	done := make(chan struct{})
	var once sync.Once
	ev := stream.Rebalance{Generation: gen.id, Revoked: true, Done: func() { once.Do(func() { close(done) }) }}
	timer := time.NewTimer(s.cfg.RevokeTimeout)
	defer timer.Stop()
	select {
	case s.events <- ev:
	case <-timer.C:
		s.log.Warn("the pipeline did not take the revocation in time; rejoining the group", "generation", gen.id, "timeout", s.cfg.RevokeTimeout)
		return
	case <-s.runCtx.Done():
		return
	}
	select {
	case <-done:
	case <-timer.C:
		s.log.Warn("the pipeline did not stop writing in time; rejoining the group", "generation", gen.id, "timeout", s.cfg.RevokeTimeout)
	case <-s.runCtx.Done():
	}
}

// readPartition reads one assigned partition from the group's committed
// offset into the Source's queue until ctx ends (the generation ended or
// the Source closed). Each record is fetched with retry.Do: transient
// errors are retried, logged and counted, the backoff starting again at
// each record; others are queued for Fetch to return.
func (s *Source) readPartition(ctx context.Context, gen *generation, topic string, a kafka.PartitionAssignment) {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:   s.cfg.Brokers,
		Topic:     topic,
		Partition: a.ID,
		MinBytes:  s.cfg.MinBytes,
		MaxBytes:  s.cfg.MaxBytes,
		MaxWait:   s.cfg.MaxWait,
		// Below MaxWait kafka-go would cut fetches short; above it a dead
		// connection is noticed late. MaxWait + 10 s is kafka-go's own rule.
		ReadBatchTimeout: s.cfg.MaxWait + 10*time.Second,
		QueueCapacity:    partitionQueue,
		ReadBackoffMin:   100 * time.Millisecond,
		ReadBackoffMax:   time.Second,
		MaxAttempts:      3,
		Logger:           s.debugLogger(),
		ErrorLogger:      s.errorLogger(),
	})
	defer r.Close()
	s.m.reader.add(r)
	defer s.m.reader.remove(r)
	if err := r.SetOffset(a.Offset); err != nil {
		s.queue(ctx, fetched{gen: gen.id, err: retry.Permanent("set offset", err)})
		return
	}
	op := fmt.Sprintf("fetch from %s/%d", topic, a.ID)
	var msg kafka.Message
	fetch := func(ctx context.Context) (err error) {
		msg, err = r.FetchMessage(ctx)
		if err != nil && ctx.Err() == nil {
			err = kafkaclient.Classify(op, err)
		}
		return err
	}
	notify := func(_ int, wait time.Duration, err error) {
		s.failures.Add(1)
		s.m.fetchErrors.WithLabelValues("transient").Inc()
		s.log.Warn("kafka fetch failed; retrying", "topic", topic, "partition", a.ID, "err", err, "backoff", wait)
	}
	for {
		err := retry.Do(ctx, retry.Pipeline(), notify, fetch)
		if err == nil {
			if !s.queue(ctx, fetched{msg: msg, gen: gen.id}) {
				return
			}
			continue
		}
		if ctx.Err() == nil { // a permanent error: the policy has no bound
			s.queue(ctx, fetched{gen: gen.id, err: err})
		}
		return
	}
}

// partitionQueue bounds the records each partition's reader holds ahead
// of the Source's queue (Config.QueueCapacity).
const partitionQueue = 100

// queue hands f to Fetch, waiting while the queue is full
// (back-pressure), and reports false if ctx ended first.
func (s *Source) queue(ctx context.Context, f fetched) bool {
	select {
	case s.msgs <- f:
		return true
	case <-ctx.Done():
		return false
	}
}

// fetch returns the next record of the current generation and the
// generation's number. Records of a generation that ended before they
// were taken are dropped: their partitions' owner reads them again.
func (s *Source) fetch(ctx context.Context) (kafka.Message, int64, error) {
	if s.closed.Load() {
		return kafka.Message{}, 0, ErrClosed
	}
	if err := s.start(); err != nil {
		return kafka.Message{}, 0, err
	}
	for {
		select {
		case <-ctx.Done():
			return kafka.Message{}, 0, fmt.Errorf("kafkasrc: fetch: %w", ctx.Err())
		case <-s.runDone:
			return kafka.Message{}, 0, ErrClosed
		case f := <-s.msgs:
			if f.err != nil {
				s.m.fetchErrors.WithLabelValues("fatal").Inc()
				return kafka.Message{}, 0, fmt.Errorf("kafkasrc: %w", f.err)
			}
			if cur := s.current.Load(); cur == nil || cur.id != f.gen {
				continue
			}
			s.observe(&f.msg)
			return f.msg, f.gen, nil
		}
	}
}

// commit commits the offsets after msgs in generation gen, or, with gen
// 0, in the current generation, waiting for the next one when it ended
// (a rebalance or a broker restart): a retried commit may then store an
// offset for a partition another member reads now, a possible duplicate,
// never a loss. With a gen, a generation that ended (or that the broker
// no longer knows) gives ErrGenerationEnded at once: the runner leaves
// those records to the partitions' next owner.
func (s *Source) commit(ctx context.Context, gen int64, msgs []kafka.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	if s.closed.Load() {
		return ErrClosed
	}
	offsets := map[string]map[int]int64{}
	for _, m := range msgs {
		if offsets[m.Topic] == nil {
			offsets[m.Topic] = map[int]int64{}
		}
		offsets[m.Topic][m.Partition] = max(offsets[m.Topic][m.Partition], m.Offset+1)
	}
	ended := func(cur *generation) bool { return cur == nil || gen != 0 && cur.id != gen || cur.ended.Load() }
	start := time.Now()
	err := retry.Do(ctx, retry.Pipeline(), func(_ int, wait time.Duration, err error) {
		s.m.commitRetries.Inc()
		s.log.Warn("kafka commit failed; retrying", "err", err, "backoff", wait)
	}, func(context.Context) error {
		cur := s.current.Load()
		switch {
		case s.closed.Load():
			return retry.Permanent("", ErrClosed)
		case ended(cur) && gen != 0:
			return retry.Permanent("", ErrGenerationEnded)
		case ended(cur):
			return errors.New("no consumer group generation: waiting for the next one")
		}
		err := cur.g.CommitOffsets(offsets)
		var kerr kafka.Error
		switch {
		case err == nil:
			return nil
		case s.closed.Load():
			return retry.Permanent("", ErrClosed)
		case gen != 0 && (cur.ended.Load() || errors.As(err, &kerr) &&
			(kerr == kafka.RebalanceInProgress || kerr == kafka.IllegalGeneration || kerr == kafka.UnknownMemberId)):
			return retry.Permanent("", fmt.Errorf("%w (%w)", ErrGenerationEnded, err))
		}
		return kafkaclient.Classify("commit", err)
	})
	s.m.commitLatency.Observe(time.Since(start).Seconds())
	if err == nil {
		s.m.commits.WithLabelValues("ok").Inc()
		return nil
	}
	s.m.commits.WithLabelValues("error").Inc()
	switch {
	case errors.Is(err, ErrClosed):
		err = ErrClosed
	case ctx.Err() != nil && !errors.Is(err, ErrGenerationEnded):
		err = ctx.Err()
	}
	return fmt.Errorf("kafkasrc: commit %d records: %w", len(msgs), err)
}
