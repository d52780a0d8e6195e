package planpub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/keygroup"
	"github.com/skewlens/skewlens/skew/plans"
)

// salted returns the plan of key at parallelism 8/128 in n buckets, the
// salted keys chosen through Flink's routing as the engine does.
func salted(key string, n int) skew.SaltedKey {
	r, _ := keygroup.NewRouter(8, 128)
	sk := skew.SaltedKey{Key: key, Share: 0.3, Subtask: r.Subtask(key), Buckets: n}
	used := map[int]bool{}
	for s := 0; len(sk.Salted) < n; s++ {
		k := fmt.Sprintf("%s#%d", key, s)
		kg, st := r.Route(keygroup.StringHash(k))
		if !used[st] {
			used[st] = true
			sk.Salted = append(sk.Salted, skew.SaltTarget{Key: k, KeyGroup: kg, Subtask: st})
		}
	}
	return sk
}

// t0ms is the event time the tests start at, in epoch ms.
const t0ms = 1_700_000_000_000

// planFinding returns the salting_plan finding of job/task for the window
// ending sec seconds after t0ms.
func planFinding(job, task string, sec int64, keys ...skew.SaltedKey) skew.Finding {
	end := t0ms + sec*1000
	return skew.Finding{Kind: skew.KindSaltingPlan, JobID: job, TaskName: task, WindowStart: end - 10000, WindowEnd: end,
		Plan: &skew.Plan{Parallelism: 8, MaxParallelism: 128, MaxOverMeanBefore: 3.1, MaxOverMeanAfter: 1.4, Keys: keys}}
}

// enginePlans runs a plans.Manager over salting_plan findings for task
// job/task and returns its changes: version 1 salting "hot", version 2
// adding "用户42", then the retirement once both have cooled down.
func enginePlans(t testing.TB, job, task string) []plans.Change {
	t.Helper()
	m, err := plans.NewManager(plans.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f1 := planFinding(job, task, 10, salted("hot", 4))
	f2 := planFinding(job, task, 20, salted("hot", 4), salted("用户42", 2))
	var out []plans.Change
	out = append(out, m.Observe(&f1)...)
	out = append(out, m.Observe(&f2)...)
	out = append(out, m.Advance(time.UnixMilli(t0ms+3600_000))...)
	if len(out) != 3 || out[0].Plan == nil || out[1].Plan == nil || !out[2].Retired {
		t.Fatalf("manager changes: %+v", out)
	}
	return out
}

func TestConfigValidate(t *testing.T) {
	// Validate only checks: a Config without a topic is invalid.
	if err := (Config{Brokers: []string{"k1:9092"}}).Validate(); err == nil {
		t.Fatal("Validate accepted a Config without defaults")
	}
	c := Config{Brokers: []string{"k1:9092"}}.withDefaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	d := DefaultConfig()
	d.Brokers = c.Brokers
	if !reflect.DeepEqual(c, d) {
		t.Fatalf("zero fields filled with %+v, want DefaultConfig %+v", c, d)
	}
	if c.Topic != DefaultConfig().Topic || c.Partitions != 1 || c.ReplicationFactor != -1 || c.DialTimeout != DefaultConfig().DialTimeout ||
		c.WriteTimeout != DefaultConfig().WriteTimeout || c.Retry != retry.Setup() || c.MaxMessageBytes != DefaultConfig().MaxMessageBytes {
		t.Fatalf("defaults not filled in: %+v", c)
	}
	tests := []struct {
		name string
		c    Config
		want string
	}{
		{"no brokers", Config{}, "brokers"},
		{"broker without port", Config{Brokers: []string{"k1"}}, "broker"},
		{"broker with bad port", Config{Brokers: []string{"k1:99999"}}, "broker"},
		{"topic with a slash", Config{Brokers: []string{"k1:9092"}, Topic: "a/b"}, "topic"},
		{"topic ..", Config{Brokers: []string{"k1:9092"}, Topic: ".."}, "topic"},
		{"topic of 250 chars", Config{Brokers: []string{"k1:9092"}, Topic: strings.Repeat("t", 250)}, "topic"},
		{"negative partitions", Config{Brokers: []string{"k1:9092"}, Partitions: -1}, "partitions"},
		{"replication -2", Config{Brokers: []string{"k1:9092"}, ReplicationFactor: -2}, "replication"},
		{"cleanup.policy", Config{Brokers: []string{"k1:9092"}, TopicConfigs: map[string]string{"cleanup.policy": "delete"}}, "cleanup.policy"},
		{"bad config name", Config{Brokers: []string{"k1:9092"}, TopicConfigs: map[string]string{"a b": "1"}}, "bad name"},
		{"negative timeout", Config{Brokers: []string{"k1:9092"}, WriteTimeout: -1}, "write timeout"},
		{"min above max backoff", Config{Brokers: []string{"k1:9092"}, Retry: retry.Policy{MinBackoff: time.Minute, MaxBackoff: time.Second}}, "min exceeds max"},
		{"tiny messages", Config{Brokers: []string{"k1:9092"}, MaxMessageBytes: 100}, "max message bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.withDefaults().ready()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one about %q", err, tt.want)
			}
			if _, err := New(tt.c, nil, nil); !retry.IsPermanent(err) {
				t.Fatalf("New: %v, want a permanent error", err)
			}
		})
	}
}

func header(m kafka.Message, key string) (string, bool) {
	for _, h := range m.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

func TestMessage(t *testing.T) {
	cs := enginePlans(t, "0a1b", "Window(Tumbling) -> Sink")
	v2 := cs[1].Plan
	want, _ := json.Marshal(v2)
	tests := []struct {
		name    string
		c       plans.Change
		key     string
		value   []byte
		headers map[string]string
		err     string
	}{
		{"plan", cs[1], "0a1b/Window(Tumbling) -> Sink", want,
			map[string]string{HeaderVersion: "2", HeaderSource: "engine"}, ""},
		{"tombstone", cs[2], "0a1b/Window(Tumbling) -> Sink", nil, map[string]string{HeaderRetired: "true",
			HeaderVersion: fmt.Sprint(cs[2].Version), HeaderRetiredAt: fmt.Sprint(cs[2].At.UnixMilli())}, ""},
		{"tombstone of an older release", plans.Change{JobID: "j", TaskName: "t", Retired: true}, "j/t", nil,
			map[string]string{HeaderRetired: "true"}, ""},
		{"no job", plans.Change{TaskName: "t", Retired: true}, "", nil, nil, "without job id"},
		{"retired with a plan", plans.Change{JobID: "j", TaskName: "t", Retired: true, Plan: v2}, "", nil, nil, "retired with a plan"},
		{"neither", plans.Change{JobID: "j", TaskName: "t"}, "", nil, nil, "neither"},
		{"plan of another task", plans.Change{JobID: "0a1b", TaskName: "other", Plan: v2}, "", nil, nil, "plan of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Message(tt.c)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(m.Key) != tt.key || string(m.Value) != string(tt.value) || (tt.value == nil) != (m.Value == nil) {
				t.Fatalf("message %q = %s, want %q = %s", m.Key, m.Value, tt.key, tt.value)
			}
			if len(m.Headers) != len(tt.headers) {
				t.Fatalf("headers %v, want %v", m.Headers, tt.headers)
			}
			for k, v := range tt.headers {
				if got, ok := header(m, k); !ok || got != v {
					t.Fatalf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestClassify(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want errorClass
	}{
		{"unknown topic while it propagates", nil, kafka.UnknownTopicOrPartition, classRetryable},
		{"leader moved", nil, fmt.Errorf("produce: %w", kafka.NotLeaderForPartition), classRetryable},
		{"EOF after a broker restart", nil, io.EOF, classRetryable},
		{"unknown error", nil, errors.New("something"), classRetryable},
		{"write errors, all transient", nil, kafka.WriteErrors{nil, io.EOF, kafka.RequestTimedOut}, classRetryable},
		{"authorization", nil, kafka.TopicAuthorizationFailed, classPermanent},
		{"message too large", nil, kafka.MessageSizeTooLarge, classPermanent},
		{"invalid topic", nil, kafka.InvalidTopic, classPermanent},
		{"write errors with a permanent one", nil, kafka.WriteErrors{io.EOF, kafka.TopicAuthorizationFailed}, classPermanent},
		{"kafka-go message too large", nil, kafka.MessageTooLargeError{}, classPermanent},
		{"closed writer", nil, io.ErrClosedPipe, classPermanent},
		{"our permanent error", nil, retry.Permanent("x", io.EOF), classPermanent},
		{"canceled", canceled, io.EOF, classCanceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			if got := classify(ctx, tt.err); got != tt.want {
				t.Fatalf("classify(%v) = %s, want %s", tt.err, got, tt.want)
			}
		})
	}
}

// TestPublishPermanentBeforeSending: changes that cannot be published fail
// the call permanently without contacting a broker (there is none on port 1).
func TestPublishPermanentBeforeSending(t *testing.T) {
	p, err := New(Config{Brokers: []string{"127.0.0.1:1"}, MaxMessageBytes: 1024}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	big := enginePlans(t, "j", strings.Repeat("t", 200))[1]
	big.Plan.JobName = strings.Repeat("n", 900)
	tests := []struct {
		name string
		cs   []plans.Change
		want string
	}{
		{"too large", []plans.Change{big}, "more than 1024"},
		{"invalid change after a valid one", []plans.Change{{JobID: "j", TaskName: "t", Retired: true}, {JobID: "j"}}, "change 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			err := p.Publish(context.Background(), tt.cs)
			if !retry.IsPermanent(err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want a permanent one about %q", err, tt.want)
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("took %s: it must fail before sending", d)
			}
		})
	}
	if err := p.Publish(context.Background(), nil); err != nil {
		t.Fatalf("publishing nothing: %v", err)
	}
}

// TestPublishMakesOneAttempt: with no broker, Publish fails once with a
// retryable error and does not retry; its caller retries, once, with
// retry.Do, and a context that ends stops the caller's retries promptly.
func TestPublishMakesOneAttempt(t *testing.T) {
	reg := prometheus.NewRegistry()
	p, err := New(Config{Brokers: []string{"127.0.0.1:1"}, Retry: retry.Policy{MaxRetries: 3, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond},
		DialTimeout: 200 * time.Millisecond}, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	change := []plans.Change{{JobID: "j", TaskName: "t", Retired: true}}
	err = p.Publish(ctx, change)
	if err == nil || retry.IsPermanent(err) || !strings.Contains(err.Error(), "planpub: publish 1 changes") {
		t.Fatalf("error %v, want a retryable one naming the publish", err)
	}
	if got := testutil.ToFloat64(p.m.failures.WithLabelValues("retryable")); got != 1 {
		t.Fatalf("%v retryable failures, want 1: Publish must not retry", got)
	}
	if got := testutil.ToFloat64(p.m.retries); got != 0 {
		t.Fatalf("%v retries inside Publish, want 0", got)
	}
	// The caller's retries: 1 attempt + 3 retries.
	policy := retry.Policy{MaxRetries: 3, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}
	retries := 0
	err = retry.Do(ctx, policy, func(int, time.Duration, error) { retries++ }, func(ctx context.Context) error { return p.Publish(ctx, change) })
	if err == nil || retry.IsPermanent(err) || !strings.Contains(err.Error(), "giving up after 4 attempts") || retries != 3 {
		t.Fatalf("caller's retry.Do: %v after %d retries, want a retryable error after 4 attempts", err, retries)
	}
	if got := testutil.ToFloat64(p.m.failures.WithLabelValues("retryable")); got != 5 {
		t.Fatalf("%v retryable failures, want 5 (one per attempt)", got)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	start := time.Now()
	policy.MaxRetries, policy.MinBackoff, policy.MaxBackoff = retry.Unlimited, 10*time.Millisecond, 10*time.Millisecond
	if err := retry.Do(short, policy, nil, func(ctx context.Context) error { return p.Publish(ctx, change) }); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the context's", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %s after the context ended", d)
	}
}

func TestClose(t *testing.T) {
	reg := prometheus.NewRegistry()
	p, err := New(Config{Brokers: []string{"127.0.0.1:1"}}, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Brokers: []string{"127.0.0.1:1"}}, nil, reg); !retry.IsPermanent(err) {
		t.Fatalf("second Publisher on one registry: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := context.Background()
	if err := p.Publish(ctx, []plans.Change{{JobID: "j", TaskName: "t", Retired: true}}); !retry.IsPermanent(err) || !errors.Is(err, ErrClosed) {
		t.Fatalf("Publish after Close: %v", err)
	}
	if err := p.EnsureTopic(ctx); !retry.IsPermanent(err) || !errors.Is(err, ErrClosed) {
		t.Fatalf("EnsureTopic after Close: %v", err)
	}
	// Close unregistered the metrics: a new Publisher may register them.
	q, err := New(Config{Brokers: []string{"127.0.0.1:1"}}, nil, reg)
	if err != nil {
		t.Fatalf("New after Close: %v", err)
	}
	q.Close()
}
