package kafkanotify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/alerttest"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/alert"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

// alerts returns a firing and then a resolved alert of one condition and
// a firing one of another, made by the real state machine.
func alerts(t *testing.T, job string) []alert.Alert {
	t.Helper()
	tr, err := alert.NewStateMachine(alert.Config{})
	if err != nil {
		t.Fatal(err)
	}
	it := alerttest.Incidents(t, -1)
	sub := 2
	slow := skew.Finding{Kind: skew.KindSaturation, JobID: job, TaskName: "Sink: es", SubtaskIndex: &sub, WindowStart: 0, WindowEnd: 10_000,
		Summary: "slow", Saturation: &skew.Saturation{Cause: skew.CauseSlowSubtask, Host: "h1", Evidence: &skew.Evidence{BusyMsPerSecond: 990}}}
	hot := skew.Finding{Kind: skew.KindHotKey, JobID: job, TaskName: "agg", SubtaskIndex: &sub, WindowStart: 0, WindowEnd: 10_000,
		HotKey: &skew.HotKey{Key: "u42", Share: 0.3}}
	var out []alert.Alert
	events := append(tr.Apply(it.Observe([]skew.Finding{slow, hot})), tr.Apply(it.Advance(100_000))...)
	for _, e := range events {
		if e.Kind == alert.EventFiring || e.Kind == alert.EventResolved && e.Alert.Labels["cause"] == skew.CauseSlowSubtask {
			out = append(out, e.Alert)
		}
	}
	if len(out) != 3 {
		t.Fatalf("%d alerts, want 3", len(out))
	}
	return out
}

// testNotifier is a Notifier whose Notify is retried with a policy, as
// alertdeliver.Fanout retries a notifier.
type testNotifier struct {
	*Notifier
	policy retry.Policy
}

func (n testNotifier) Notify(ctx context.Context, alerts []alert.Alert) error {
	return retry.Do(ctx, n.policy, nil, func(ctx context.Context) error { return n.Notifier.Notify(ctx, alerts) })
}

func newNotifier(t *testing.T, brokers []string, topic string, policy retry.Policy) testNotifier {
	t.Helper()
	if policy.MinBackoff == 0 {
		policy = retry.Policy{MaxRetries: 20, MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond}
	}
	n, err := New(Config{Brokers: brokers, Topic: topic, Partitions: 2, WriteTimeout: 5 * time.Second}, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return testNotifier{n, policy}
}

// readN reads every message of the topic's two partitions (up to their
// end offsets now) and checks there are n.
func readN(t *testing.T, brokers []string, topic string, n int) []kafka.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A transport of its own: kafka.DefaultTransport may hold a
	// connection that a broker restart broke.
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	cl := &kafka.Client{Addr: kafka.TCP(brokers...), Transport: tr}
	var offs *kafka.ListOffsetsResponse
	var err error
	defer func() {
		if t.Failed() && err != nil {
			t.Logf("list offsets: %v", err)
		}
	}()
	testenv.Eventually(t, 10*time.Second, "the topic's end offsets", func() bool {
		offs, err = cl.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
			topic: {kafka.LastOffsetOf(0), kafka.LastOffsetOf(1)},
		}})
		return err == nil
	})
	var out []kafka.Message
	for _, po := range offs.Topics[topic] {
		if po.Error != nil {
			t.Fatalf("list offsets of partition %d: %v", po.Partition, po.Error)
		}
		if po.LastOffset == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: po.Partition, MaxWait: 50 * time.Millisecond})
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("read partition %d: %v", po.Partition, err)
			}
			out = append(out, m)
			if m.Offset == po.LastOffset-1 {
				break
			}
		}
		r.Close()
	}
	if len(out) != n {
		t.Fatalf("read %d messages from %s, want %d", len(out), topic, n)
	}
	return out
}

// TestNotifyRealBroker writes alerts to a real Kafka broker and reads
// them back: key = alert id, value = alert JSON, status header, one
// alert's messages in order on one partition.
func TestNotifyRealBroker(t *testing.T) {
	brokers := kafkatest.Start(t)
	topic := fmt.Sprintf("alerts-%d", time.Now().UnixNano())
	n := newNotifier(t, brokers, topic, retry.Policy{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := n.EnsureTopic(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.EnsureTopic(ctx); err != nil { // exists already: fine
		t.Fatalf("second EnsureTopic: %v", err)
	}
	sent := alerts(t, "job-a")
	if err := n.Notify(ctx, sent); err != nil {
		t.Fatal(err)
	}
	got := readN(t, brokers, topic, 3)
	byKey := map[string][]alert.Alert{}
	partitionOf := map[string]int{}
	for _, m := range got {
		var a alert.Alert
		if err := json.Unmarshal(m.Value, &a); err != nil {
			t.Fatalf("value %s: %v", m.Value, err)
		}
		if string(m.Key) != a.ID {
			t.Errorf("key %q, want the alert id %q", m.Key, a.ID)
		}
		if len(m.Headers) != 1 || m.Headers[0].Key != StatusHeader || string(m.Headers[0].Value) != a.Status {
			t.Errorf("headers %v, want %s=%s", m.Headers, StatusHeader, a.Status)
		}
		if p, ok := partitionOf[a.ID]; ok && p != m.Partition {
			t.Errorf("alert %s on partitions %d and %d", a.ID, p, m.Partition)
		}
		partitionOf[a.ID] = m.Partition
		byKey[a.ID] = append(byKey[a.ID], a)
	}
	slow := byKey["job-a/Sink: es/2/slow_subtask"]
	if len(slow) != 2 || slow[0].Status != alert.StatusFiring || slow[1].Status != alert.StatusResolved {
		t.Fatalf("slow_subtask messages %+v, want firing then resolved", slow)
	}
	if slow[0].Labels["alertname"] != alert.NameSlowSubtask || slow[0].Annotations["summary"] != "slow" || slow[0].Finding.Evidence.BusyMsPerSecond != 990 {
		t.Errorf("decoded alert %+v", slow[0])
	}
	if hot := byKey["job-a/agg/2/hot_key"]; len(hot) != 1 || hot[0].Labels["alertname"] != alert.NameHotKey {
		t.Errorf("hot_key messages %+v", hot)
	}
	if m, ok := testutil.ToFloat64(n.m.messages), testutil.ToFloat64(n.m.writes.WithLabelValues("ok")); m != 3 || ok != 1 {
		t.Errorf("metrics: %v messages in %v writes, want 3 in 1", m, ok)
	}
}

// TestNotifyAfterBrokerRestart checks that the first write after a broker
// restart (whose stale connection gives EOF) is retried and succeeds.
func TestNotifyAfterBrokerRestart(t *testing.T) {
	brokers := kafkatest.Start(t)
	topic := fmt.Sprintf("alerts-restart-%d", time.Now().UnixNano())
	n := newNotifier(t, brokers, topic, retry.Policy{})
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	if err := n.EnsureTopic(ctx); err != nil {
		t.Fatal(err)
	}
	sent := alerts(t, "job-r")
	if err := n.Notify(ctx, sent[:1]); err != nil {
		t.Fatal(err)
	}
	kafkatest.Restart(t)
	if err := n.Notify(ctx, sent[1:]); err != nil {
		t.Fatalf("write after restart: %v\n%s", err, kafkatest.ServerLogTail(20))
	}
	readN(t, brokers, topic, 3)
}

// TestNotifyPermanent checks that a message the broker refuses for good is
// a permanent error at once, and that a missing topic is retried (not
// permanent).
func TestNotifyPermanent(t *testing.T) {
	brokers := kafkatest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	small := fmt.Sprintf("alerts-small-%d", time.Now().UnixNano())
	n := newNotifier(t, brokers, small, retry.Policy{MaxRetries: 5, MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	if err := n.EnsureTopic(ctx, kafka.ConfigEntry{ConfigName: "max.message.bytes", ConfigValue: "200"}); err != nil {
		t.Fatal(err)
	}
	big := alerts(t, "job-f")[:1]
	big[0].Annotations["padding"] = strings.Repeat("x", 2000)
	start := time.Now()
	err := n.Notify(ctx, big)
	var werrs kafka.WriteErrors
	if err == nil || !retry.IsPermanent(err) || !errors.As(err, &werrs) || !errors.Is(werrs[0], kafka.MessageSizeTooLarge) {
		t.Fatalf("err = %v (permanent %v), want a permanent MessageSizeTooLarge", err, retry.IsPermanent(err))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("permanent error took %s: retried?", d)
	}
	if m, failed := testutil.ToFloat64(n.m.messages), testutil.ToFloat64(n.m.writes.WithLabelValues("error")); m != 0 || failed < 1 {
		t.Errorf("metrics: %v messages, %v failed writes; want none and some", m, failed)
	}

	missing := newNotifier(t, brokers, fmt.Sprintf("alerts-missing-%d", time.Now().UnixNano()),
		retry.Policy{MaxRetries: 1, MinBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	err = missing.Notify(ctx, alerts(t, "job-m")[:1])
	if err == nil || retry.IsPermanent(err) {
		t.Fatalf("missing topic: err = %v (permanent %v), want a retryable error", err, retry.IsPermanent(err))
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg     Config
		wantErr string
	}{
		{Config{Brokers: []string{"127.0.0.1:9092"}}, ""},
		{Config{}, "brokers"},
		{Config{Brokers: []string{"nohost"}}, "nohost"},
		{Config{Brokers: []string{"h:1"}, Partitions: -1}, "partitions"},
	} {
		err := tt.cfg.withDefaults().Validate() // as New sees it
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.cfg, err, tt.wantErr)
		}
	}
	c := Config{Brokers: []string{"h:1"}}
	if err := c.Validate(); err == nil {
		t.Errorf("Validate accepted %+v without defaults", c)
	}
	c = c.withDefaults()
	if err := c.Validate(); err != nil || c.Topic != DefaultConfig().Topic {
		t.Errorf("defaults: %+v %v", c, err)
	}
	d := DefaultConfig()
	d.Brokers = c.Brokers
	if !reflect.DeepEqual(c, d) {
		t.Errorf("zero fields filled with %+v, want DefaultConfig %+v", c, d)
	}
	if d.Partitions != 1 || d.ReplicationFactor != -1 || d.WriteTimeout != 10*time.Second || d.DialTimeout != 5*time.Second {
		t.Errorf("defaults: %+v", d)
	}
}
