package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/kafkaclient"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
	"github.com/skewlens/skewlens/sinks/clickhouse"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/keygroup"
	"github.com/skewlens/skewlens/skew/plans"
)

// TestRunBrokerNeverComes: with no broker at --brokers, run warns at each
// retry and, once --broker-wait is over, fails with an error that names
// the address, the wait and what to check, not kafka-go's "[8] Broker
// Not Available". No server is needed.
func TestRunBrokerNeverComes(t *testing.T) {
	clearEnv(t)
	kafkaPort, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	chPort, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	broker := "127.0.0.1:" + strconv.Itoa(kafkaPort)
	begin := time.Now()
	code, out, errOut := runCLI(t, "", "run", "--create-topics", "--brokers", broker, "--broker-wait", "2s",
		"--clickhouse-addr", "127.0.0.1:"+strconv.Itoa(chPort), "--listen", "127.0.0.1:0", "--quiet")
	took := time.Since(begin)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if took < 2*time.Second || took > 10*time.Second {
		t.Errorf("gave up after %s, want about the 2s --broker-wait", took)
	}
	if n := strings.Count(errOut, `msg="waiting for Kafka brokers"`); n < 2 || !strings.Contains(errOut, "next_in=") {
		t.Errorf("%d retries logged with the next wait, want several:\n%s", n, errOut)
	}
	last := errOut[strings.LastIndex(strings.TrimSuffix(errOut, "\n"), "\n")+1:]
	for _, want := range []string{"skewlens run: ", "no Kafka broker answered at " + broker + " in 2s",
		"check that the brokers run", "advertised.listeners", "--broker-wait 2s"} {
		if !strings.Contains(last, want) {
			t.Errorf("error line lacks %q:\n%s", want, last)
		}
	}
	if strings.Contains(errOut, "not a client facing error") {
		t.Errorf("kafka-go's cryptic error reached the user:\n%s", errOut)
	}
}

// TestRunBrokerWaitMustBePositive: a zero or negative --broker-wait is
// an error that names the flag, not silently the default.
func TestRunBrokerWaitMustBePositive(t *testing.T) {
	clearEnv(t)
	for _, v := range []string{"0s", "-1s"} {
		code, _, errOut := runCLI(t, "", "run", "--create-topics", "--brokers", "127.0.0.1:1", "--broker-wait="+v, "--clickhouse-addr", "127.0.0.1:2")
		if code == 0 || !strings.Contains(errOut, "--broker-wait "+v) || !strings.Contains(errOut, "must be above 0s") {
			t.Errorf("--broker-wait %s: exit %d, %s", v, code, errOut)
		}
		if strings.Contains(errOut, "waiting for Kafka brokers") {
			t.Errorf("--broker-wait %s: waited anyway:\n%s", v, errOut)
		}
	}
}

// TestRunWaitsForLateBroker starts run while its broker is down and
// starts the broker (the real one) once run has said it waits for it:
// run waits, says so, and then runs as usual.
func TestRunWaitsForLateBroker(t *testing.T) {
	broker := kafkatest.StartPrivate(t)
	chAddr := chtest.Start(t)
	if err := broker.Halt(); err != nil {
		t.Fatal(err)
	}
	r := startCLI(t, "demo", "--brokers", broker.Addr, "--broker-wait", "2m",
		"--clickhouse-addr", chAddr, "--database", "e2e_late_broker", "--group", "e2e-late-broker",
		"--topics", "late-metrics,late-samples", "--dead-letter-topic", "late-dead",
		"--listen", "127.0.0.1:0", "--simulate", "hot_key", "--speed", "50", "--duration", "12s",
		"--quiet", "--log-format", "json")
	// The broker starts once run has said twice that it waits for it.
	begin := time.Now()
	testenv.Eventually(t, time.Minute, "run waiting for the broker, twice", func() bool { return r.logged("waiting for Kafka brokers") >= 2 }, r.end())
	t.Logf("the broker starts %s into the run", time.Since(begin).Round(100*time.Millisecond))
	if err := broker.Resume(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := r.wait()
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, tail([]byte(errOut)))
	}
	if !strings.Contains(errOut, `"msg":"waiting for Kafka brokers"`) || !strings.Contains(errOut, `"msg":"Kafka brokers answer"`) {
		t.Errorf("the wait left no trace in the log:\n%s", tail([]byte(errOut)))
	}
	m := regexp.MustCompile(`"msg":"stopped".*"samples":(\d+)`).FindStringSubmatch(errOut)
	if m == nil || m[1] == "0" {
		t.Errorf("no samples read after the broker came up (%v):\n%s", m, tail([]byte(errOut)))
	}
}

// TestRunTwiceEmbeddedBroker runs the demo twice on the same state
// folder and database, as two `make run`s do: the embedded broker starts
// empty each time, so the second run must not resume the first's engine
// state (its events would all be replays and it would print nothing);
// it says it starts afresh, and prints its incidents as the first did.
func TestRunTwiceEmbeddedBroker(t *testing.T) {
	chAddr := chtest.Start(t)
	state := t.TempDir()
	opened := regexp.MustCompile(`(?m)^\S+ \S+ UTC  opened  data_skew +hot_key \(\w+\)/`)
	for i := 1; i <= 2; i++ {
		code, out, errOut := runCLI(t, "", "demo", "--state-dir", state, "--clickhouse-addr", chAddr,
			"--database", "e2e_twice", "--group", "e2e-twice", "--listen", "127.0.0.1:0",
			"--simulate", "hot_key", "--speed", "50", "--duration", "15s")
		if code != 0 {
			t.Fatalf("run %d: exit %d\n%s\n%s", i, code, out, tail([]byte(errOut)))
		}
		if !strings.Contains(errOut, "embedded broker: starting afresh; not resuming the engine state, open incidents and alerts") {
			t.Errorf("run %d does not say it starts afresh:\n%s", i, tail([]byte(errOut)))
		}
		if n := len(opened.FindAllString(out, -1)); n == 0 {
			t.Errorf("run %d printed no data_skew incident:\n%s\n%s", i, out, tail([]byte(errOut)))
		} else {
			t.Logf("run %d: %d data_skew incidents opened", i, n)
		}
	}
}

// serveGet GETs path from the serve process p listening at api, waiting
// (up to 10 s) until it listens; it fails t when p exits.
func serveGet(t *testing.T, p *runProc, api, path string) httpAnswer {
	t.Helper()
	return serveUntil(t, p, api, path, 10*time.Second, "serve answering", anyAnswer)
}

// serveUntil GETs path until ok accepts the answer, for up to wait; it
// fails t when p exits.
func serveUntil(t *testing.T, p *runProc, api, path string, wait time.Duration, what string, ok func(httpAnswer) bool) httpAnswer {
	t.Helper()
	return getUntil(t, "http://"+api+path, wait, what+": GET "+path, ok, p.end())
}

// TestServeWithoutClickHouse: serve starts with no ClickHouse at its
// address; it serves, /healthz says alive, /readyz says not ready and
// why, and the plans answer 503: no snapshot was ever read. No server is
// needed.
func TestServeWithoutClickHouse(t *testing.T) {
	chPort, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	apiPort, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	api := "127.0.0.1:" + strconv.Itoa(apiPort)
	p := startChild(t, "serve-no-ch", "serve", "--clickhouse-addr", "127.0.0.1:"+strconv.Itoa(chPort),
		"--api-listen", api, "--log-format", "json")
	if a := serveGet(t, p, api, "/healthz"); a.code != 200 {
		t.Errorf("healthz: %d %s", a.code, a.body)
	}
	a := serveGet(t, p, api, "/readyz")
	if a.code != 503 || !strings.Contains(a.body, "not connected to ClickHouse yet") || strings.Contains(a.body, strconv.Itoa(chPort)) {
		t.Errorf("readyz: %d %s, want 503 with the reason (and no address)", a.code, a.body)
	}
	if a := serveGet(t, p, api, "/v1/salting"); a.code != 503 || a.header.Get("Retry-After") == "" {
		t.Errorf("plans before any snapshot: %d %v %s, want 503 with Retry-After", a.code, a.header, a.body)
	}
	select {
	case <-p.done:
		t.Fatalf("serve exited:\n%s", p.logTail())
	default:
	}
	if log := p.logTail(); !strings.Contains(log, `"msg":"ClickHouse not available yet; retrying"`) {
		t.Errorf("no retry in the log:\n%s", log)
	}
}

// TestServeWhileClickHouseAway runs serve against a real ClickHouse that
// is down when serve starts, comes up, goes away and comes back: /readyz
// follows it without a restart, and while it is away the plans are
// answered from the last good snapshot with the staleness headers.
func TestServeWhileClickHouseAway(t *testing.T) {
	server := chtest.StartPrivate(t)
	db := "e2e_serve_away"
	plan := awayPlan(time.Now().UTC())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := clickhouse.New(context.Background(), clickhouse.Config{Addr: server.Addr, Database: db}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Migrate(ctx)
	if err == nil {
		err = st.Writer().WritePlans(ctx, []plans.Change{{JobID: plan.JobID, TaskName: plan.TaskName, Plan: &plan}})
	}
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := server.Halt(); err != nil {
		t.Fatal(err)
	}

	apiPort, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	api := "127.0.0.1:" + strconv.Itoa(apiPort)
	p := startChild(t, "serve-away", "serve", "--clickhouse-addr", server.Addr, "--database", db,
		"--api-listen", api, "--log-format", "json")
	planPath := "/v1/salting/" + plan.JobID + "/" + plan.TaskName
	stale := func(a httpAnswer) bool {
		return a.header.Get("X-Skewlens-Stale-Since") != "" || a.header.Get("Warning") != ""
	}

	// Down at start: up, but not ready, and nothing to answer from.
	if a := serveGet(t, p, api, "/readyz"); a.code != 503 || !strings.Contains(a.body, "not connected to ClickHouse yet") {
		t.Errorf("readyz while ClickHouse is down at start: %d %s", a.code, a.body)
	}
	if a := serveGet(t, p, api, "/v1/salting"); a.code != 503 {
		t.Errorf("plans before any snapshot: %d %s, want 503", a.code, a.body)
	}

	// ClickHouse comes up: ready, without a restart.
	if err := server.Resume(); err != nil {
		t.Fatal(err)
	}
	serveUntil(t, p, api, "/readyz", time.Minute, "after ClickHouse came up", func(a httpAnswer) bool { return a.code == 200 })
	fresh := serveGet(t, p, api, planPath)
	if fresh.code != 200 || stale(fresh) || !strings.Contains(fresh.body, `"u42#0"`) {
		t.Fatalf("plan once connected: %d %v %s", fresh.code, fresh.header, fresh.body)
	}

	// ClickHouse goes away: the last plan, marked stale.
	down := time.Now()
	if err := server.Halt(); err != nil {
		t.Fatal(err)
	}
	// Once the snapshot's 1 s cache is over, the answer is stale.
	a := serveUntil(t, p, api, planPath, time.Minute, "the plan marked stale", stale)
	if a.code != 200 || a.body != fresh.body {
		t.Fatalf("plan while ClickHouse is away: %d %v %s, want the last one, marked stale", a.code, a.header, a.body)
	}
	since, err := time.Parse(time.RFC3339, a.header.Get("X-Skewlens-Stale-Since"))
	if err != nil || since.Before(down.Add(-2*time.Second)) || since.After(time.Now()) {
		t.Errorf("X-Skewlens-Stale-Since %q (%v), want about %s", a.header.Get("X-Skewlens-Stale-Since"), err, down.UTC().Format(time.RFC3339))
	}
	if w := a.header.Get("Warning"); !strings.HasPrefix(w, "110 ") {
		t.Errorf("Warning %q, want 110", w)
	}
	begin := time.Now()
	if a := serveGet(t, p, api, "/v1/salting"); a.code != 200 || !stale(a) || !strings.Contains(a.body, plan.JobID) {
		t.Errorf("plans while ClickHouse is away: %d %v %s", a.code, a.header, a.body)
	}
	if took := time.Since(begin); took > 2*time.Second {
		t.Errorf("a stale answer took %s: it waited for ClickHouse", took)
	}
	if a := serveGet(t, p, api, "/readyz"); a.code != 503 {
		t.Errorf("readyz while ClickHouse is away: %d %s", a.code, a.body)
	}

	// ClickHouse is back: fresh answers again.
	if err := server.Resume(); err != nil {
		t.Fatal(err)
	}
	serveUntil(t, p, api, planPath, time.Minute, "after ClickHouse came back", func(a httpAnswer) bool {
		return a.code == 200 && !stale(a) && a.body == fresh.body
	})
	if a := serveGet(t, p, api, "/readyz"); a.code != 200 {
		t.Errorf("readyz after ClickHouse came back: %d %s", a.code, a.body)
	}
}

// awayPlan is a valid engine plan for one hot key, u42, salted into two
// buckets routed as Flink routes them at parallelism 4 / 128.
func awayPlan(now time.Time) plans.Plan {
	r := keygroup.Router{Parallelism: 4, MaxParallelism: 128}
	p := plans.Plan{
		JobID: "5e1f0c0ffee0c0ffee0c0ffee0c0ffee", TaskName: "agg", JobName: "away", Parallelism: 4, MaxParallelism: 128,
		Version: 1, GeneratedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour), Separator: "#",
		Source: plans.SourceEngine, MaxOverMeanBefore: 2, MaxOverMeanAfter: 1.1,
	}
	hk := plans.HotKey{Key: "u42", Share: 0.5, Subtask: r.Subtask("u42"), Buckets: 2, LastHotAt: now,
		PredictedLoadBefore: 1, PredictedLoadAfter: 0.5}
	for b := range 2 {
		sk := fmt.Sprintf("u42#%d", b)
		kg, st := r.Route(keygroup.StringHash(sk))
		hk.Salted = append(hk.Salted, skew.SaltTarget{Key: sk, KeyGroup: kg, Subtask: st})
	}
	p.HotKeys = append(p.HotKeys, hk)
	return p
}

// TestRunNeedsItsTopics: against a real broker without the topics, run
// stops (exit 1) with the kafka-topics.sh commands that create them, and
// creates nothing; with --create-topics it creates them with the
// partitions and replication factor given.
func TestRunNeedsItsTopics(t *testing.T) {
	brokers := kafkatest.Start(t)
	prefix := "needs-topics"
	topics := []string{prefix + "-metrics", prefix + "-samples", prefix + "-dead"}
	code, _, errOut := runCLI(t, "", "run", "--brokers", brokers[0], "--clickhouse-addr", "127.0.0.1:1",
		"--topics", topics[0]+","+topics[1], "--dead-letter-topic", topics[2], "--topic-partitions", "3", "--duration", "1s")
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errOut)
	}
	for _, topic := range topics {
		want := "kafka-topics.sh --bootstrap-server " + brokers[0] + " --create --topic " + topic + " --partitions 3 --replication-factor 1"
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if !strings.Contains(errOut, "or pass --create-topics") {
		t.Errorf("stderr does not name --create-topics:\n%s", errOut)
	}
	have := func() map[string]int {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m, err := kafkaclient.TopicPartitions(ctx, kafkaclient.AdminConfig{Brokers: brokers})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := have(); m[topics[0]] != 0 {
		t.Fatalf("run created %s without --create-topics", topics[0])
	}
	// With --create-topics the topics are made; the run then fails on the
	// missing ClickHouse, which is not what this test is about.
	runCLI(t, "", "run", "--create-topics", "--brokers", brokers[0], "--clickhouse-addr", "127.0.0.1:1",
		"--topics", topics[0]+","+topics[1], "--dead-letter-topic", topics[2], "--topic-partitions", "3", "--duration", "1s")
	m := have()
	for _, topic := range topics {
		if m[topic] != 3 {
			t.Errorf("topic %s has %d partitions, want 3", topic, m[topic])
		}
	}
}
