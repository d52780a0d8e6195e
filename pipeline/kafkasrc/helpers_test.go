package kafkasrc

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

// testLogger logs to the test's output.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fakeCluster starts a one-broker kfake cluster with the topics seeded
// (one partition each) and returns its addresses.
func fakeCluster(t testing.TB, topics ...string) []string {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(1, topics...))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// produce writes n records "topic-i" (key "k<i%7>") to topic, retrying
// transient errors, and fails t otherwise.
func produce(t testing.TB, brokers []string, topic string, from, n int) {
	t.Helper()
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{Key: fmt.Appendf(nil, "k%d", (from+i)%7), Value: fmt.Appendf(nil, "%s-%d", topic, from+i)}
	}
	produceMsgs(t, brokers, topic, msgs)
}

func produceMsgs(t testing.TB, brokers []string, topic string, msgs []kafka.Message) {
	t.Helper()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, BatchSize: 1000, BatchTimeout: time.Millisecond,
		RequiredAcks: kafka.RequireAll, Transport: tr}
	defer w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var err error
	testenv.Eventually(t, 60*time.Second, fmt.Sprintf("produce %d to %s", len(msgs), topic), func() bool {
		err = w.WriteMessages(ctx, msgs...)
		return err == nil || !kafkaclient.Retryable(err)
	})
	if err != nil {
		t.Fatalf("produce %d to %s: %v", len(msgs), topic, err)
	}
}

// metricValue returns the value of the metric name{labels} in reg.
func metricValue(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				return m.Counter.GetValue()
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount())
			}
		}
	}
	t.Fatalf("metric %s%v not found", name, labels)
	return 0
}
