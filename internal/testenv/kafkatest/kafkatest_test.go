package kafkatest_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

// TestBroker starts the real broker, creates a topic, round-trips a record
// and survives a restart.
func TestBroker(t *testing.T) {
	brokers := kafkatest.Start(t)
	if len(brokers) == 0 {
		t.Fatal("no brokers")
	}
	if again := kafkatest.Start(t); again[0] != brokers[0] {
		t.Fatalf("second Start gave %v, want %v", again, brokers)
	}
	kafkatest.CreateTopics(t, brokers, "kafkatest-a", "kafkatest-b")
	kafkatest.CreateTopics(t, brokers, "kafkatest-a") // idempotent

	roundTrip := func(value string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		w := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: "kafkatest-a", BatchSize: 1, RequiredAcks: kafka.RequireAll}
		defer w.Close()
		var err error
		defer func() {
			if t.Failed() && err != nil {
				t.Logf("write: %v\n%s", err, kafkatest.ServerLogTail(20))
			}
		}()
		// The first request after a restart may hit a stale connection.
		testenv.Eventually(t, 30*time.Second, "a write", func() bool {
			err = w.WriteMessages(ctx, kafka.Message{Value: []byte(value)})
			return err == nil
		})
	}
	roundTrip("one")
	kafkatest.Restart(t)
	if c, err := net.DialTimeout("tcp", brokers[0], time.Second); err != nil {
		t.Fatalf("after restart: %v", err)
	} else {
		c.Close()
	}
	roundTrip("two")

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: "kafkatest-a", MaxWait: 100 * time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, want := range []string{"one", "two"} {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		if string(m.Value) != want {
			t.Fatalf("read %d = %q, want %q (data kept across the restart)", i, m.Value, want)
		}
	}
}
