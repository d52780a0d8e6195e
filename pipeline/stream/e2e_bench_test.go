package stream_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/pipeline/kafkasrc"
	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/pipeline/stream"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/sinks/clickhouse"
	"github.com/skewlens/skewlens/skew"
)

// TestMain stops the ClickHouse server the benchmark may have started.
func TestMain(m *testing.M) {
	code := m.Run()
	if err := chtest.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// limited ends a Source with io.EOF after n messages, so a benchmark run
// ends when the corpus is consumed; first is when the first message was
// fetched. The fetcher goroutine alone calls Fetch; first is read after
// Run has returned.
type limited struct {
	stream.Source
	n     int
	first time.Time
}

func (l *limited) Fetch(ctx context.Context) (stream.Message, error) {
	if l.n == 0 {
		return stream.Message{}, io.EOF
	}
	msg, err := l.Source.Fetch(ctx)
	if err == nil {
		if l.first.IsZero() {
			l.first = time.Now()
		}
		l.n-- // only messages count: a fetch may end at a batch deadline
	}
	return msg, err
}

// timedSink notes when the last successful Write returned: from then on
// every finding the sink was given is durable in ClickHouse. The runner's
// writer goroutine alone calls Write; last is read after Run has returned.
// It hides nothing the runner looks for: clickhouse.Writer is no
// stream.Advancer.
type timedSink struct {
	stream.Sink
	last time.Time
}

func (t *timedSink) Write(ctx context.Context, version uint64, fs []skew.Finding) error {
	err := t.Sink.Write(ctx, version, fs)
	if err == nil {
		t.last = time.Now()
	}
	return err
}

// whenProcessed polls r.Progress until n messages have been processed and
// returns when it saw that; the zero time if Run returned (done closed)
// with fewer. The runner counts a message as it starts processing it; one
// message of one line takes microseconds, so the poll interval (0.5 ms) is
// the error. Run returns only after its final write to ClickHouse, which
// takes far longer than that, so the poll sees the count before done.
func whenProcessed(r *stream.Runner, n int64, done <-chan struct{}) time.Time {
	tick := time.NewTicker(500 * time.Microsecond)
	defer tick.Stop()
	for {
		if got, _ := r.Progress(); got >= n {
			return time.Now()
		}
		select {
		case <-done:
			if got, _ := r.Progress(); got >= n {
				return time.Now()
			}
			return time.Time{}
		case <-tick.C:
		}
	}
}

// BenchmarkEndToEnd compares, in one run, a bare kafka-go group consumer
// reading the key-sample topic (the ceiling) with the whole pipeline: the
// same consumer, decode, windows, engine, findings written to a real
// ClickHouse and offsets committed. Both read the same corpus from kfake.
// The ClickHouse schema is created once, outside the timing.
//
// Both sides are timed over the same span, from the first message fetched
// to the last message processed (for the bare consumer: fetched), and
// report the messages after the first over it as samples/s: joining the
// group before and closing the reader and leaving the group after are
// outside it for both. The pipeline also reports durable-samples/s, timed
// from the first message fetched until the last findings are durable in
// ClickHouse (the sink's last write returned). That includes the final
// write's wait for the sink's pacing (at most one insert per second per
// table): up to a second that a finite corpus pays once and a running
// pipeline does not. x-bare and durable-x-bare are the pipeline's two
// rates over the bare consumer's (when it ran): over the median of its
// runs, since with -count the testing package runs each sub-benchmark
// count times in a row, all bare-consumer runs before the first pipeline
// run.
func BenchmarkEndToEnd(b *testing.B) {
	const intervals, perInterval = 10, 50000
	g, err := simulate.New(simulate.Config{Scenario: simulate.HotKey, Duration: intervals * 10 * time.Second, SamplesPerInterval: perInterval})
	if err != nil {
		b.Fatal(err)
	}
	var msgs []kafka.Message
	size := 0
	for {
		buf, ok := g.Next(nil)
		if !ok {
			break
		}
		for _, l := range bytes.Split(bytes.TrimSuffix(buf, []byte("\n")), []byte("\n")) {
			if bytes.HasPrefix(l, []byte(`{"ts":`)) {
				msgs = append(msgs, kafka.Message{Key: []byte("job"), Value: l})
				size += len(l)
			}
		}
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "samples", "dead"))
	if err != nil {
		b.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: "samples", Balancer: &kafka.Hash{}, BatchSize: 5000,
		BatchTimeout: time.Millisecond, RequiredAcks: kafka.RequireAll}
	for i := 0; i < len(msgs); i += 5000 {
		if err := w.WriteMessages(context.Background(), msgs[i:min(i+5000, len(msgs))]...); err != nil {
			b.Fatal(err)
		}
	}
	w.Close()
	chAddr := chtest.Start(b)

	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	group := 0
	newSource := func(b *testing.B) *kafkasrc.Source {
		group++
		src, err := kafkasrc.New(context.Background(), kafkasrc.Config{Brokers: brokers, GroupID: fmt.Sprintf("bench-%d", group), Topics: []string{"samples"},
			DeadLetterTopic: "dead"}, quiet, nil)
		if err != nil {
			b.Fatal(err)
		}
		return src
	}
	var bareRates []float64 // the bare consumer's samples/s, one per run
	b.Run("bare-consumer", func(b *testing.B) {
		b.SetBytes(int64(size))
		var span time.Duration
		for b.Loop() {
			src := newSource(b)
			var first time.Time
			for i := range msgs {
				if _, err := src.Fetch(context.Background()); err != nil {
					b.Fatal(err)
				}
				if i == 0 {
					first = time.Now()
				}
			}
			span += time.Since(first)
			src.Close()
		}
		rate := float64((len(msgs)-1)*b.N) / span.Seconds()
		bareRates = append(bareRates, rate)
		b.ReportMetric(rate, "samples/s")
	})
	b.Run("pipeline", func(b *testing.B) {
		b.SetBytes(int64(size))
		var span, durable time.Duration
		setup, err := clickhouse.New(context.Background(), clickhouse.Config{Addr: chAddr, Database: "bench"}, quiet, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := setup.Migrate(context.Background()); err != nil {
			b.Fatal(err)
		}
		setup.Close()
		for b.Loop() {
			src := newSource(b)
			sink, err := clickhouse.New(context.Background(), clickhouse.Config{Addr: chAddr, Database: "bench"}, quiet, prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			dead, _ := kafkasrc.NewDeadLetters(kafkasrc.Config{Brokers: brokers, Topics: []string{"samples"}, DeadLetterTopic: "dead"}, quiet, nil)
			eng, _ := skew.New(skew.Config{})
			wms, _ := window.NewWatermarks(window.WatermarkConfig{}, time.Now)
			stage, _ := window.NewPartitioned(window.Config{}, eng, wms)
			lim := &limited{Source: kafkasrc.ForStream(src), n: len(msgs)}
			ts := &timedSink{Sink: sink.Writer()}
			r, err := stream.New(stream.Config{}, lim, stage, ts, nil, kafkasrc.DeadLettersForStream(dead), nil, prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			done := make(chan struct{})
			processed := make(chan time.Time, 1)
			go func() { processed <- whenProcessed(r, int64(len(msgs)), done) }()
			err = r.Run(context.Background())
			close(done)
			last := <-processed
			if err != nil {
				b.Fatal(err)
			}
			if n, written := r.Progress(); n != int64(len(msgs)) || written == 0 || last.IsZero() || ts.last.IsZero() {
				b.Fatalf("processed %d of %d, wrote %d findings", n, len(msgs), written)
			}
			span += last.Sub(lim.first)
			durable += ts.last.Sub(lim.first)
			src.Close()
			dead.Close()
			sink.Close()
		}
		rate := float64((len(msgs)-1)*b.N) / span.Seconds()
		durableRate := float64((len(msgs)-1)*b.N) / durable.Seconds()
		b.ReportMetric(rate, "samples/s")
		b.ReportMetric(durableRate, "durable-samples/s")
		if len(bareRates) > 0 {
			bare := median(bareRates)
			b.ReportMetric(rate/bare, "x-bare")
			b.ReportMetric(durableRate/bare, "durable-x-bare")
		}
	})
}

// median returns the median of xs (not empty), without reordering xs.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{2, 2, 9, 1, 7}, 2},
	} {
		in := slices.Clone(tc.in)
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("median reordered %v to %v", in, tc.in)
		}
	}
}
