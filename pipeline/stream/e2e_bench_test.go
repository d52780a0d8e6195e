package stream_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/skewlens/skewlens/deploy/testenv/chtest"
	"github.com/skewlens/skewlens/pipeline/kafkasrc"
	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/pipeline/stream"
	"github.com/skewlens/skewlens/pipeline/window"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/store/clickhouse"
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
// ends when the corpus is consumed; last is when the last one was fetched.
type limited struct {
	stream.Source
	n    int
	last time.Time
}

func (l *limited) Fetch(ctx context.Context) (stream.Message, error) {
	if l.n == 0 {
		return stream.Message{}, io.EOF
	}
	msg, err := l.Source.Fetch(ctx)
	if err == nil {
		l.n-- // only messages count: a fetch may end at a batch deadline
		if l.n == 0 {
			l.last = time.Now()
		}
	}
	return msg, err
}

// BenchmarkEndToEnd compares, in one run, a bare kafka-go group consumer
// reading the key-sample topic (the ceiling) with the whole pipeline: the
// same consumer, decode, windows, engine, findings written to a real
// ClickHouse and offsets committed. Both read the same corpus from kfake.
// The ClickHouse schema is created once, outside the timing. Besides the
// total rate (until the last findings are in ClickHouse and the offsets
// committed) it reports the streaming rate: until the last sample is
// fetched, which leaves out the final write. That write waits for the
// sink's pacing (at most one insert per second per table), up to a second
// that a finite corpus pays once and a running pipeline does not.
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
		src, err := kafkasrc.New(kafkasrc.Config{Brokers: brokers, GroupID: fmt.Sprintf("bench-%d", group), Topics: []string{"samples"},
			DeadLetterTopic: "dead"}, quiet, nil)
		if err != nil {
			b.Fatal(err)
		}
		return src
	}
	b.Run("bare-consumer", func(b *testing.B) {
		b.SetBytes(int64(size))
		for b.Loop() {
			src := newSource(b)
			for range msgs {
				if _, err := src.Fetch(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			src.Close()
		}
		b.ReportMetric(float64(len(msgs)*b.N)/b.Elapsed().Seconds(), "samples/s")
	})
	b.Run("pipeline", func(b *testing.B) {
		b.SetBytes(int64(size))
		var streaming time.Duration
		setup, err := clickhouse.New(clickhouse.Config{Addr: chAddr, Database: "bench"}, quiet, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := setup.Migrate(context.Background()); err != nil {
			b.Fatal(err)
		}
		setup.Close()
		for b.Loop() {
			src := newSource(b)
			sink, err := clickhouse.New(clickhouse.Config{Addr: chAddr, Database: "bench"}, quiet, prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			dead, _ := kafkasrc.NewDeadLetters(kafkasrc.Config{Brokers: brokers, Topics: []string{"samples"}, DeadLetterTopic: "dead"}, quiet, nil)
			eng, _ := skew.New(skew.Config{})
			wms, _ := window.NewWatermarks(window.WatermarkConfig{}, time.Now)
			stage, _ := window.NewPartitioned(window.Config{}, eng, wms)
			lim := &limited{Source: kafkasrc.ForStream(src), n: len(msgs)}
			r, err := stream.New(stream.Config{}, lim, stage, sink.Writer(), nil, kafkasrc.DeadLettersForStream(dead), nil, prometheus.NewRegistry())
			if err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			if err := r.Run(context.Background()); err != nil {
				b.Fatal(err)
			}
			streaming += lim.last.Sub(start)
			if n, written := r.Progress(); n != int64(len(msgs)) || written == 0 {
				b.Fatalf("processed %d of %d, wrote %d findings", n, len(msgs), written)
			}
			src.Close()
			dead.Close()
			sink.Close()
		}
		b.ReportMetric(float64(len(msgs)*b.N)/b.Elapsed().Seconds(), "samples/s")
		b.ReportMetric(float64(len(msgs)*b.N)/streaming.Seconds(), "streaming-samples/s")
	})
}
