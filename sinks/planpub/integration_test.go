package planpub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/plans"
)

func testLog() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// readAll returns every message on partition 0 of topic, from the first
// offset the broker still has to the end.
func readAll(t *testing.T, brokers []string, topic string) []kafka.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := kafka.DialLeader(ctx, "tcp", brokers[0], topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	last, err := conn.ReadLastOffset()
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, Partition: 0, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffset(kafka.FirstOffset); err != nil {
		t.Fatal(err)
	}
	var out []kafka.Message
	for len(out) == 0 || out[len(out)-1].Offset < last-1 {
		if last == 0 {
			return nil
		}
		m, err := r.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("read %s after %d messages (end %d): %v", topic, len(out), last, err)
		}
		out = append(out, m)
	}
	return out
}

func newPublisher(t *testing.T, cfg Config, reg prometheus.Registerer) *Publisher {
	t.Helper()
	p, err := New(cfg, testLog(), reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// TestPublishReadBack publishes plan versions and a retirement to the
// real broker and reads them back in order.
func TestPublishReadBack(t *testing.T) {
	brokers := kafkatest.Start(t)
	reg := prometheus.NewRegistry()
	p := newPublisher(t, Config{Brokers: brokers, Topic: "planpub-readback"}, reg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for range 2 { // idempotent
		if err := p.EnsureTopic(ctx); err != nil {
			t.Fatal(err)
		}
	}
	agg := enginePlans(t, "0a1b", "agg")
	join := enginePlans(t, "0a1b", "join")
	calls := [][]plans.Change{
		{agg[0]},          // v1
		{agg[1], join[0]}, // v2 of agg and v1 of join in one call
		{agg[2]},          // agg retired
	}
	for i, cs := range calls {
		if err := p.Publish(ctx, cs); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	ms := readAll(t, brokers, "planpub-readback")
	want := []struct {
		key     string
		plan    *plans.Plan // nil: tombstone
		version string
	}{
		{"0a1b/agg", agg[0].Plan, "1"},
		{"0a1b/agg", agg[1].Plan, "2"},
		{"0a1b/join", join[0].Plan, "1"},
		{"0a1b/agg", nil, ""},
	}
	if len(ms) != len(want) {
		t.Fatalf("%d messages on the topic, want %d", len(ms), len(want))
	}
	for i, w := range want {
		m := ms[i]
		if string(m.Key) != w.key {
			t.Fatalf("message %d: key %q, want %q", i, m.Key, w.key)
		}
		if w.plan == nil {
			if m.Value != nil {
				t.Fatalf("message %d: tombstone has value %q", i, m.Value)
			}
			if v, _ := header(m, HeaderRetired); v != "true" {
				t.Fatalf("message %d: tombstone without %s header", i, HeaderRetired)
			}
			continue
		}
		var got plans.Plan
		if err := json.Unmarshal(m.Value, &got); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		wantJSON, _ := json.Marshal(w.plan)
		gotJSON, _ := json.Marshal(&got)
		if string(gotJSON) != string(wantJSON) || string(m.Value) != string(wantJSON) {
			t.Fatalf("message %d: value\n%s\nwant\n%s", i, m.Value, wantJSON)
		}
		if v, _ := header(m, HeaderVersion); v != w.version {
			t.Fatalf("message %d: version header %q, want %q", i, v, w.version)
		}
		if v, _ := header(m, HeaderSource); v != "engine" {
			t.Fatalf("message %d: source header %q", i, v)
		}
		if time.Since(m.Time) > time.Minute {
			t.Fatalf("message %d: timestamp %v is not the wall clock", i, m.Time)
		}
	}
	pol, err := describePolicy(ctx, brokers, "planpub-readback")
	if err != nil || pol != "compact" {
		t.Fatalf("cleanup.policy %q, %v; want compact", pol, err)
	}
	if got := testutil.ToFloat64(p.m.plans); got != 3 {
		t.Fatalf("plans published metric %v, want 3", got)
	}
	if got := testutil.ToFloat64(p.m.tombstones); got != 1 {
		t.Fatalf("tombstones metric %v, want 1", got)
	}
}

// adminClient returns a kafka.Client with a transport of its own: the
// default transport's pooled connections may be stale after the restart
// test. done closes its connections.
func adminClient(brokers []string) (*kafka.Client, func()) {
	tr := &kafka.Transport{DialTimeout: 5 * time.Second}
	return &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: tr}, tr.CloseIdleConnections
}

// describePolicy asks the broker for a topic's cleanup.policy with a
// client of its own (not the Publisher's).
func describePolicy(ctx context.Context, brokers []string, topic string) (string, error) {
	cl, done := adminClient(brokers)
	defer done()
	res, err := cl.DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{Resources: []kafka.DescribeConfigRequestResource{{
		ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{"cleanup.policy"},
	}}})
	if err != nil {
		return "", err
	}
	for _, r := range res.Resources {
		for _, e := range r.ConfigEntries {
			if e.ConfigName == "cleanup.policy" {
				return e.ConfigValue, r.Error
			}
		}
	}
	return "", errors.New("no cleanup.policy")
}

// TestEnsureTopicRefusesDeletePolicy: a plans topic that exists but is
// not compacted is a permanent error, not silently used.
func TestEnsureTopicRefusesDeletePolicy(t *testing.T) {
	brokers := kafkatest.Start(t)
	kafkatest.CreateTopics(t, brokers, "planpub-delete")
	p := newPublisher(t, Config{Brokers: brokers, Topic: "planpub-delete"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := p.EnsureTopic(ctx)
	if !retry.IsPermanent(err) {
		t.Fatalf("EnsureTopic on a delete-policy topic: %v, want a permanent error", err)
	}
	t.Log(err)
}

// TestPublishWaitsForTopic: a publish that starts before its topic exists
// fails with UnknownTopicOrPartition, retryable, so its caller's retries
// go on until the topic is created elsewhere.
func TestPublishWaitsForTopic(t *testing.T) {
	brokers := kafkatest.Start(t)
	p := newPublisher(t, Config{Brokers: brokers, Topic: "planpub-late", Retry: retry.Policy{MaxRetries: 100, MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan error, 1)
	var retries atomic.Int64
	policy := retry.Policy{MaxRetries: 100, MinBackoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond}
	change := enginePlans(t, "j", "late")[:1]
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		done <- retry.Do(ctx, policy, func(int, time.Duration, error) { retries.Add(1) },
			func(ctx context.Context) error { return p.Publish(ctx, change) })
	}()
	testenv.Eventually(t, 30*time.Second, "a retry of the publish", func() bool { return retries.Load() > 0 },
		testenv.End{Done: ended, Why: func() string { return fmt.Sprintf("Publish returned %v before the topic existed", <-done) }})
	select {
	case err := <-done:
		t.Fatalf("Publish returned %v before the topic existed", err)
	default:
	}
	kafkatest.CreateTopicConfigs(t, brokers, kafka.TopicConfig{Topic: "planpub-late", NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: []kafka.ConfigEntry{{ConfigName: "cleanup.policy", ConfigValue: "compact"}}})
	if err := <-done; err != nil {
		t.Fatalf("Publish after the topic was created: %v", err)
	}
	if got := retries.Load(); got < 1 {
		t.Fatalf("%v retries: the topic was missing at first", got)
	}
	if ms := readAll(t, brokers, "planpub-late"); len(ms) != 1 || string(ms[0].Key) != "j/late" {
		t.Fatalf("topic holds %d messages", len(ms))
	}
}

// TestPublishAcrossBrokerRestart: the first request after a broker restart
// fails on a pooled connection (EOF), retryable: the caller's retry
// succeeds.
func TestPublishAcrossBrokerRestart(t *testing.T) {
	brokers := kafkatest.Start(t)
	p := newPublisher(t, Config{Brokers: brokers, Topic: "planpub-restart", Retry: retry.Policy{MaxRetries: 60, MaxBackoff: time.Second}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := p.EnsureTopic(ctx); err != nil {
		t.Fatal(err)
	}
	cs := enginePlans(t, "j", "restart")
	if err := p.Publish(ctx, cs[:1]); err != nil {
		t.Fatal(err)
	}
	kafkatest.Restart(t)
	policy := retry.Policy{MaxRetries: 60, MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}
	if err := retry.Do(ctx, policy, nil, func(ctx context.Context) error { return p.Publish(ctx, cs[1:]) }); err != nil {
		t.Fatalf("publish after the restart: %v", err)
	}
	ms := readAll(t, brokers, "planpub-restart")
	var got []string
	for _, m := range ms {
		v, _ := header(m, HeaderVersion)
		got = append(got, fmt.Sprintf("%s v%s retired=%v", m.Key, v, m.Value == nil))
	}
	// A retry may resend a message whose acknowledgement was lost, so the
	// topic holds each change at least once, in order, ending with the
	// tombstone.
	want := []string{"j/restart v1 retired=false", "j/restart v2 retired=false", "j/restart v2 retired=true"} // a tombstone carries the version it retires
	j := 0
	for _, g := range got {
		if j < len(want) && g == want[j] {
			j++
		} else if j == 0 || g != want[j-1] {
			t.Fatalf("topic holds %q, want %q in order", got, want)
		}
	}
	if j != len(want) {
		t.Fatalf("topic holds %q, want %q", got, want)
	}
}

// TestCompaction shows that the real broker compacts the plans topic to
// the latest plan per task plus the tombstones. The broker only compacts
// closed segments, and its cleaner looks for work every
// log.cleaner.backoff.ms (15 s by default), so the test rolls segments
// quickly (segment.ms) and sets the backoff to 200 ms on the broker (a
// dynamic broker config, removed again afterwards).
func TestCompaction(t *testing.T) {
	brokers := kafkatest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	setCleanerBackoff(t, ctx, brokers, "200")
	p := newPublisher(t, Config{Brokers: brokers, Topic: "planpub-compact", TopicConfigs: map[string]string{
		"segment.ms":                "100",
		"min.cleanable.dirty.ratio": "0.01",
		"min.compaction.lag.ms":     "0",
		"delete.retention.ms":       "3600000", // keep the tombstone for the assertion
	}}, nil)
	if err := p.EnsureTopic(ctx); err != nil {
		t.Fatal(err)
	}
	agg := enginePlans(t, "j", "agg")   // v1, v2, retired
	join := enginePlans(t, "j", "join") // v1, v2 stays
	steps := [][]plans.Change{{agg[0], join[0]}, {agg[1], join[1]}, {agg[2]}}
	for _, cs := range steps {
		if err := p.Publish(ctx, cs); err != nil {
			t.Fatal(err)
		}
	}
	// Messages for a third task roll the segment holding the others once
	// it is older than segment.ms, so that the cleaner may compact them.
	tick := enginePlans(t, "j", "tick")
	start := time.Now()
	var last []string
	var rest []kafka.Message
	defer func() {
		if t.Failed() {
			t.Logf("the topic holds %q", last)
		}
	}()
	i := 0
	testenv.Eventually(t, 20*time.Second, "compaction", func() bool {
		if err := p.Publish(ctx, tick[i%2:i%2+1]); err != nil {
			t.Fatal(err)
		}
		i++
		last, rest = last[:0], rest[:0]
		for _, m := range readAll(t, brokers, "planpub-compact") {
			if string(m.Key) != "j/tick" {
				rest = append(rest, m)
				v, _ := header(m, HeaderVersion)
				last = append(last, fmt.Sprintf("%s v%s tombstone=%v", m.Key, v, m.Value == nil))
			}
		}
		return len(rest) == 2
	})
	want := []string{"j/join v2 tombstone=false", "j/agg v2 tombstone=true"}
	if !eq(last, want) {
		t.Fatalf("after compaction the topic holds %q, want %q", last, want)
	}
	var plan plans.Plan
	if err := json.Unmarshal(rest[0].Value, &plan); err != nil || plan.Version != 2 || plan.TaskName != "join" {
		t.Fatalf("surviving plan %s: %v", rest[0].Value, err)
	}
	t.Logf("compacted from 5 to 2 messages in %s", time.Since(start).Round(10*time.Millisecond))
}

func eq(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// setCleanerBackoff sets log.cleaner.backoff.ms on every broker and
// removes the setting when the test ends.
func setCleanerBackoff(t *testing.T, ctx context.Context, brokers []string, ms string) {
	t.Helper()
	cl, done := adminClient(brokers)
	t.Cleanup(done)
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{})
	if err != nil {
		t.Fatal(err)
	}
	alter := func(ctx context.Context, op kafka.ConfigOperation) error {
		var rs []kafka.IncrementalAlterConfigsRequestResource
		for _, b := range md.Brokers {
			rs = append(rs, kafka.IncrementalAlterConfigsRequestResource{
				ResourceType: kafka.ResourceTypeBroker, ResourceName: fmt.Sprint(b.ID),
				Configs: []kafka.IncrementalAlterConfigsRequestConfig{{Name: "log.cleaner.backoff.ms", Value: ms, ConfigOperation: op}},
			})
		}
		res, err := cl.IncrementalAlterConfigs(ctx, &kafka.IncrementalAlterConfigsRequest{Resources: rs})
		if err != nil {
			return err
		}
		for _, r := range res.Resources {
			if r.Error != nil {
				return r.Error
			}
		}
		return nil
	}
	if err := alter(ctx, kafka.ConfigOperationSet); err != nil {
		t.Fatalf("set log.cleaner.backoff.ms: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := alter(ctx, kafka.ConfigOperationDelete); err != nil {
			t.Errorf("reset log.cleaner.backoff.ms: %v", err)
		}
	})
}

// TestLoadResumesVersions: after a restart, the plans read back from the
// topic restore a Manager whose versions continue where they were, and
// replayed findings publish nothing.
func TestLoadResumesVersions(t *testing.T) {
	brokers := kafkatest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "planpub-load"
	cfg := Config{Brokers: brokers, Topic: topic}
	w1 := []skew.Finding{planFinding("j", "agg", 10, salted("hot", 4)), planFinding("j", "join", 10, salted("k", 2))}
	w2 := []skew.Finding{planFinding("j", "agg", 20, salted("hot", 4), salted("cold", 2))}
	w3 := []skew.Finding{planFinding("j", "agg", 700, salted("hot", 4), salted("cold", 2))}
	w4 := []skew.Finding{planFinding("j", "agg", 710, salted("hot", 4), salted("cold", 2), salted("new", 2))}

	run := func(restore bool, windows ...[]skew.Finding) {
		t.Helper()
		p := newPublisher(t, cfg, nil)
		if err := p.EnsureTopic(ctx); err != nil {
			t.Fatal(err)
		}
		mgr, err := plans.NewManager(plans.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if restore {
			loaded, err := p.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// The junk message (below) is its key's job's, refused.
			if u := loaded.Unreadable; len(u) != 1 || u[0].JobID != "x" {
				t.Fatalf("unreadable %v, want job x", u)
			}
			if len(loaded.Plans) != 1 || loaded.Plans[0].TaskName != "agg" || loaded.Plans[0].Version != 2 {
				t.Fatalf("loaded %+v, want agg v2 only (join was retired)", loaded.Plans)
			}
			if r := loaded.Retired; len(r) != 1 || r[0].TaskName != "join" || r[0].Version == 0 || r[0].At.IsZero() {
				t.Fatalf("retired %+v, want join with its version and time", r)
			}
			if refused := mgr.Restore(loaded); len(refused) != 1 || refused[0].JobID != "x" {
				t.Fatalf("refused %v, want job x", refused)
			}
		}
		s, err := NewPlanObserver(mgr, p, StoredPlans(p, nil), testLog(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for i, fs := range windows {
			if err := s.Observe(ctx, uint64(i), fs); err != nil {
				t.Fatal(err)
			}
		}
	}
	run(false, w1, w2, w3)
	// A message that is not a plan (someone else's producer) is skipped.
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	junk := &kafka.Writer{Addr: kafka.TCP(brokers...), Topic: topic, Balancer: kafka.Murmur2Balancer{}, Transport: tr}
	if err := junk.WriteMessages(ctx, kafka.Message{Key: []byte("x/y"), Value: []byte("not json")}); err != nil {
		t.Fatal(err)
	}
	junk.Close()
	before := len(readAll(t, brokers, topic))
	run(true, w3) // replayed after the restart
	if after := len(readAll(t, brokers, topic)); after != before {
		t.Fatalf("replaying findings after the restart published %d messages", after-before)
	}
	run(true, w3, w4)
	ms := readAll(t, brokers, topic)
	var got []string
	for _, m := range ms {
		v, _ := header(m, HeaderVersion)
		got = append(got, fmt.Sprintf("%s v%s", m.Key, v))
	}
	want := []string{"j/agg v1", "j/join v1", "j/agg v2", "j/join v1", "x/y v", "j/agg v3"}
	if !eq(got, want) {
		t.Fatalf("topic holds %q, want %q", got, want)
	}
}

// TestLineageOnTheTopic: on the real broker, a PlanObserver publishes each
// job name's newest plan of a task under its lineage key after the plans,
// and its tombstone when the name has none; Load restores the plans alone
// (the lineage messages are neither plans nor refused), and a restarted
// PlanObserver neither republishes on replayed findings nor forgets to
// tombstone the lineage message it restored.
func TestLineageOnTheTopic(t *testing.T) {
	brokers := kafkatest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "planpub-lineage"
	cfg := Config{Brokers: brokers, Topic: topic}
	hot := salted("hot", 4)
	w1 := []skew.Finding{namedPlan("r1", "orders", "agg", 10, hot)}
	w2 := []skew.Finding{namedPlan("r2", "orders", "agg", 20, hot)}
	w3 := []skew.Finding{jobEnd("r2", "orders", "", "", 30)}
	w4 := []skew.Finding{jobEnd("r1", "orders", "", "", 40)}

	run := func(restore bool, windows ...[]skew.Finding) {
		t.Helper()
		p := newPublisher(t, cfg, nil)
		if err := p.EnsureTopic(ctx); err != nil {
			t.Fatal(err)
		}
		mgr, err := plans.NewManager(plans.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if restore {
			loaded, err := p.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(loaded.Plans) != 1 || plans.Key(loaded.Plans[0].JobID, loaded.Plans[0].TaskName) != "r1/agg" || len(loaded.Unreadable) != 0 {
				t.Fatalf("loaded %+v, unreadable %v; want the plan of r1/agg alone", loaded.Plans, loaded.Unreadable)
			}
			if l := p.loadedLineage(); len(l) != 1 || l["/lineage/orders/agg"] != (lineageRun{"r1", 1}) {
				t.Fatalf("lineage loaded %v, want /lineage/orders/agg of r1 v1", l)
			}
			if refused := mgr.Restore(loaded); len(refused) != 0 {
				t.Fatalf("refused %v", refused)
			}
		}
		s, err := NewPlanObserver(mgr, p, StoredPlans(p, nil), testLog(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for i, fs := range windows {
			if err := s.Observe(ctx, uint64(i), fs); err != nil {
				t.Fatal(err)
			}
		}
	}
	run(false, w1, w2, w3)
	before := len(readAll(t, brokers, topic))
	run(true, w3) // replayed after the restart
	if after := len(readAll(t, brokers, topic)); after != before {
		t.Fatalf("replaying findings after the restart published %d messages", after-before)
	}
	run(true, w4)
	var got []string
	for _, m := range readAll(t, brokers, topic) {
		v, _ := header(m, HeaderVersion)
		l, _ := header(m, HeaderLineage)
		s := fmt.Sprintf("%s v%s", m.Key, v)
		if m.Value == nil {
			s += " tombstone"
		}
		if l != "" {
			s += " of " + l
		}
		got = append(got, s)
	}
	want := []string{
		"r1/agg v1", "/lineage/orders/agg v1 of r1",
		"r2/agg v1", "/lineage/orders/agg v1 of r2",
		"r2/agg v1 tombstone", "/lineage/orders/agg v1 of r1", // r2 stopped: r1 is the newest run again
		"r1/agg v1 tombstone", "/lineage/orders/agg v tombstone",
	}
	if !eq(got, want) {
		t.Fatalf("topic holds\n%q\nwant\n%q", got, want)
	}
}
