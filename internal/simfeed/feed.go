package simfeed

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/knob"
	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/pipeline/kafkasrc"
	"github.com/skewlens/skewlens/pipeline/simulate"
)

// Config configures a Feed. Its tags declare each setting once
// (internal/knob).
type Config struct {
	// Brokers to write to (required).
	Brokers []string `kong:"-"`
	// MetricsTopic and SamplesTopic default to the topics the pipeline
	// reads by default (kafkasrc).
	MetricsTopic, SamplesTopic string `kong:"-"`
	// Speed divides the wall-clock time between reporting intervals.
	Speed float64 `name:"speed" default:"1" range:"(0,]" help:"Speed-up of the simulated incidents over real time."`
	// Backlog is how much simulated time, from the start, is written at
	// once, before the pacing at Speed begins: a consumer then starts on
	// a backlog and goes on reading live.
	Backlog time.Duration `kong:"-" range:"[0s,]"`
	// Jobs are the simulated jobs, played side by side (required).
	Jobs []simulate.Config `kong:"-"`
}

// DefaultConfig returns the defaults (no brokers and no jobs, which are
// required).
func DefaultConfig() Config {
	c := knob.Defaults[Config]()
	topics := kafkasrc.DefaultConfig().Topics
	c.MetricsTopic, c.SamplesTopic = topics[0], topics[len(topics)-1]
	return c
}

// ready is Validate and what New needs besides: the brokers and the jobs
// (a command line checks its settings before it has them).
func (c Config) ready() error {
	errs := []error{c.Validate()}
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("simfeed: no brokers"))
	}
	if len(c.Jobs) == 0 {
		errs = append(errs, errors.New("simfeed: no jobs"))
	}
	return errors.Join(errs...)
}

// Validate reports every invalid setting; it changes nothing.
func (c Config) Validate() error {
	errs := []error{knob.Check(c)}
	if c.MetricsTopic == "" || c.SamplesTopic == "" {
		errs = append(errs, fmt.Errorf("topics %q, %q: both must be set", c.MetricsTopic, c.SamplesTopic))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("simfeed: %w", err)
	}
	return nil
}

// Feed writes simulated jobs to Kafka.
type Feed struct {
	cfg  Config
	gens []*simulate.Generator
	w    *kafka.Writer
	log  *slog.Logger
	stop chan struct{}
	once sync.Once
	// Sent counts the records written so far; read it after Run returns.
	Sent int
}

// New prepares the generators; nothing is written until Run.
func New(cfg Config, log *slog.Logger) (*Feed, error) {
	if err := cfg.ready(); err != nil {
		return nil, err
	}
	f := &Feed{cfg: cfg, log: log, stop: make(chan struct{})}
	for _, jc := range cfg.Jobs {
		g, err := simulate.New(jc)
		if err != nil {
			return nil, fmt.Errorf("simfeed job %s: %w", jc.Scenario, err)
		}
		f.gens = append(f.gens, g)
	}
	f.w = kafkaclient.NewWriter(kafkaclient.WriterConfig{
		Brokers:      cfg.Brokers,
		BatchSize:    1000,
		BatchTimeout: 20 * time.Millisecond,
	})
	return f, nil
}

// Truths returns the ground truth of every simulated job, in Jobs order.
func (f *Feed) Truths() []simulate.Truth {
	out := make([]simulate.Truth, len(f.gens))
	for i, g := range f.gens {
		out[i] = g.Truth()
	}
	return out
}

// Stop ends Run at the next interval.
func (f *Feed) Stop() { f.once.Do(func() { close(f.stop) }) }

// maxBatch bounds the messages Run holds at once: a fleet's interval (1.5 M
// lines at 100k subtasks) is written in batches of this many, so the feed's
// memory does not grow with the fleet.
const maxBatch = 10000

// Run writes one reporting interval of every job, interval n at
// (n*Interval-Backlog)/Speed after Run started, on one clock from the
// earliest job's Start (a job that starts later begins that much later;
// a fleet that takes longer
// to write than its interval falls behind and then writes without
// waiting), until every job's Duration is over, Stop is called or ctx is
// done.
func (f *Feed) Run(ctx context.Context) error {
	defer f.w.Close()
	var buf []byte
	msgs := make([]kafka.Message, 0, maxBatch)
	flush := func() error {
		if len(msgs) == 0 {
			return nil
		}
		if err := f.write(ctx, msgs); err != nil {
			return err
		}
		f.Sent += len(msgs)
		clear(msgs) // drop the references to the lines written
		msgs = msgs[:0]
		return nil
	}
	began := time.Now()
	// The jobs share one clock, from the earliest Start: a job whose Start
	// is later (the next run of a restarted job, say) begins that much
	// later, so that each partition's records come in event-time order.
	first := f.gens[0].Config().Start
	for _, g := range f.gens {
		first = min(first, g.Config().Start)
	}
	next := make([]int64, len(f.gens)) // each job's next interval's offset from first, ms
	done := make([]bool, len(f.gens))
	for i, g := range f.gens {
		next[i] = g.Config().Start - first
	}
	var elapsed time.Duration // simulated time played
	for {
		more := false
		var interval time.Duration
		for i, g := range f.gens {
			if done[i] {
				continue
			}
			if next[i] > elapsed.Milliseconds() {
				more = true
				continue // not started yet
			}
			var ok bool
			buf, ok = g.Next(buf[:0])
			if !ok {
				done[i] = true
				continue
			}
			more = true
			next[i] += g.Config().Interval.Milliseconds()
			interval = max(interval, g.Config().Interval)
			tr := g.Truth()
			key := []byte(cmp.Or(tr.JobName, tr.JobID))
			// The lines are copied: buf is reused for the next job.
			for _, line := range bytes.Split(bytes.TrimSuffix(bytes.Clone(buf), []byte("\n")), []byte("\n")) {
				topic := f.cfg.MetricsTopic
				if bytes.Contains(line, []byte(`"key":`)) && bytes.HasPrefix(line, []byte(`{"ts":`)) {
					topic = f.cfg.SamplesTopic
				}
				msgs = append(msgs, kafka.Message{Topic: topic, Key: key, Value: line})
				if len(msgs) == maxBatch {
					if err := flush(); err != nil {
						return err
					}
				}
			}
		}
		if !more {
			return nil
		}
		if err := flush(); err != nil {
			return err
		}
		if interval == 0 { // no job was due: the clock moves on by the shortest interval
			interval = f.gens[0].Config().Interval
			for _, g := range f.gens {
				interval = min(interval, g.Config().Interval)
			}
		}
		elapsed += interval
		paced := max(0, elapsed-f.cfg.Backlog)
		select {
		case <-time.After(time.Until(began.Add(time.Duration(float64(paced) / f.cfg.Speed)))):
		case <-f.stop:
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// write retries retryable failures (a broker restarting, topics not yet
// visible to the writer's metadata) until ctx is done (retry.Pipeline());
// an error no retry can fix (a record too large) ends Run.
func (f *Feed) write(ctx context.Context, msgs []kafka.Message) error {
	err := retry.Do(ctx, retry.Pipeline(), func(_ int, wait time.Duration, err error) {
		if f.log != nil {
			f.log.Warn("simfeed write failed; retrying", "err", err, "in", wait)
		}
	}, func(ctx context.Context) error {
		return kafkaclient.Classify("simfeed write", f.w.WriteMessages(ctx, msgs...))
	})
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
