package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/internal/testenv/flinktest"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
	"github.com/skewlens/skewlens/skew/alert"
	"github.com/skewlens/skewlens/skew/incident"
	"github.com/skewlens/skewlens/skew/keygroup"
)

// The closed loop on a real Flink job: a Flink 2.3 MiniCluster job
// (deploy/flink's ScenarioJob) reports through skewlens' Kafka reporter and
// key sampler into the real broker, `skewlens run` reads that broker and
// writes to the real ClickHouse, and for the hot key the job's salting step
// follows the plan that `run` serves, without a restart.

// keyedTask and sinkTask are the task names ScenarioJob gives its keyed
// and sink tasks (Flink joins chained operators' names with " -> ").
const (
	keyedTask = "KeyedProcess -> enrich"
	sinkTask  = "sink: Writer"
)

// loop is one closed-loop run: skewlens and a scenario job.
type loop struct {
	t       testing.TB
	prefix  string
	brokers []string
	chAddr  string
	db      string
	api     string
	run     *runProc
	job     *flinktest.Job // a ScenarioJob process or a job on a standalone cluster
	keyed   string         // the keyed task whose busy time followFlinkMetrics follows
	metrics string         // the topic the job's metrics are reported on
	// metricsFrom, on a shared cluster, is where the metrics topic
	// ended when the loop started (partition -> offset): its readers
	// start there (group), past the jobs of earlier tests.
	metricsFrom map[int]int64
	out         string // the job's truth files
	conn        ch.Conn
	flinkMu     sync.Mutex
	flink       map[int][]counterPoint // keyed task subtask -> accumulateBusyTimeMs reports
	sinkBusy    map[int][]counterPoint // sink task subtask -> accumulateBusyTimeMs reports
}

type counterPoint struct {
	ts    int64
	value float64
}

// startLoop starts `skewlens run` (with the salting API) and then the
// scenario job with the given extra flags; with salting, the job's keyed
// part follows the plans of that API (polled every 2 s).
func startLoop(t *testing.T, scenario string, salting bool, jobArgs ...string) *loop {
	t.Helper()
	return startLoopWith(t, loopOptions{scenario: scenario, salting: salting, jobArgs: jobArgs, observe: true})
}

// loopOptions are startLoopWith's settings.
type loopOptions struct {
	scenario string
	salting  bool
	// name, when set, replaces the scenario in the topics', group's and
	// database's names, so that several loops of one scenario in a test
	// process each have their own.
	name    string
	runArgs []string // added to `skewlens run`'s flags
	jobArgs []string // added to the job's flags (after the defaults, so they win)
	observe bool     // follow Flink's busy-time reports (busySince, busyBetween)
	// cluster, a Flink version (flinktest.Flink2 or Flink1), runs
	// deploy/flink/example's HotKeyJob (its flags jobArgs) on a standalone
	// cluster of that version, two TaskManagers with the reporter in
	// plugins/, instead of a ScenarioJob on a MiniCluster: the package's
	// shared cluster of that version (flinkEnv), whose reporters send to
	// the shared topic.
	cluster string
	// clusterConfig, when set, starts a cluster of the loop's own with
	// these more config.yaml entries (the adaptive scheduler, for one,
	// which is cluster-wide), its reporters on a topic of the loop's own.
	clusterConfig map[string]string
}

// startLoopWith is startLoop with the options of o.
func startLoopWith(t testing.TB, o loopOptions) *loop {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the closed loop needs a Kafka broker, ClickHouse and a Flink MiniCluster")
	}
	name := o.scenario
	if o.name != "" {
		name = o.name
	}
	l := &loop{t: t, prefix: "flink-" + strings.ReplaceAll(name, "_", "-"), db: "flink_" + strings.ReplaceAll(name, "-", "_"),
		keyed: keyedTask, flink: map[int][]counterPoint{}, sinkBusy: map[int][]counterPoint{}}
	l.metrics = l.prefix + "-metrics"
	// Build, and start the shared cluster, before the clock of the loop
	// starts.
	var pluginJar, jobJar string
	var shared *envCluster
	switch {
	case o.cluster != "" && o.clusterConfig == nil:
		env := flinkEnvGet(t)
		shared = env.cluster(t, o.cluster)
		l.brokers, l.metrics = env.brokers, env.topic
		l.metricsFrom = topicEnd(t, l.brokers, l.metrics)
	case o.cluster != "":
		pluginJar, jobJar = flinktest.Jars(t)
	default:
		flinktest.Classpath(t)
	}
	if l.brokers == nil {
		l.brokers = kafkatest.Start(t)
	}
	l.chAddr = chtest.Start(t)
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	apiPort, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	listen := "127.0.0.1:" + strconv.Itoa(port)
	l.api = "127.0.0.1:" + strconv.Itoa(apiPort)
	runArgs := append([]string{"run", "--create-topics", "--brokers", strings.Join(l.brokers, ","), "--clickhouse-addr", l.chAddr,
		"--database", l.db, "--group", l.group(""), "--topics", l.metrics + "," + l.prefix + "-samples",
		"--dead-letter-topic", l.prefix + "-dead", "--plans-topic", l.prefix + "-plans",
		"--listen", listen, "--api-listen", l.api, "--quiet", "--log-format", "json"}, o.runArgs...)
	l.run = startChild(t, l.db, runArgs...)
	l.run.listen = listen
	l.waitReady()
	l.conn, err = ch.Open(&ch.Options{Addr: []string{l.chAddr}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.conn.Close() })
	l.out = t.TempDir()
	if o.cluster != "" {
		req := flinktest.RunRequest{EntryClass: flinktest.HotKeyJob, ProgramArgsList: append([]string{"--brokers", l.brokers[0],
			"--salting-url", "http://" + l.api, "--samples-topic", l.prefix + "-samples", "--job-name", name}, o.jobArgs...)}
		l.keyed = "Partial sums"
		if shared != nil {
			l.job = shared.Start(t, shared.jarID, req)
		} else {
			conf := map[string]string{
				"metrics.reporter.skewlens.factory.class":     "io.github.skewlens.flink.reporter.SkewlensReporterFactory",
				"metrics.reporter.skewlens.bootstrap.servers": l.brokers[0],
				"metrics.reporter.skewlens.topic":             l.metrics,
				"metrics.reporter.skewlens.interval":          "5 s",
			}
			maps.Copy(conf, o.clusterConfig)
			c := flinktest.StartCluster(t, flinktest.ClusterConfig{Version: o.cluster, TaskManagers: 2, Slots: 4,
				Plugins: map[string]string{"skewlens": pluginJar}, Config: conf})
			l.job = c.Start(t, c.Upload(t, jobJar), req)
		}
	} else {
		args := l.jobArgs(o.scenario, o.jobArgs)
		if o.salting {
			args = append(args, "--salting-url", "http://"+l.api, "--salting-poll-interval", "2s")
		}
		l.job = flinktest.StartScenario(t, args...)
	}
	t.Logf("job %s ready", l.job.JobID())
	if o.observe {
		go l.followFlinkMetrics(l.group("-observer"))
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("skewlens log tail:\n%s", l.run.logTail())
			t.Logf("job output tail:\n%s", l.job.Tail(60))
		}
	})
	return l
}

// stop stops the job and `skewlens run` now, before the test's cleanup
// (which then finds them stopped), so that loops run one after another do
// not share the cores.
func (l *loop) stop() {
	l.job.Stop()
	_ = l.run.cmd.Process.Kill()
	<-l.run.done
}

// waitReady waits for skewlens' /readyz (topics created, ClickHouse
// migrated), so that the job's first reports find their topics.
func (l *loop) waitReady() {
	l.t.Helper()
	testenv.Eventually(l.t, 90*time.Second, "skewlens run ready", func() bool { return httpOK("http://" + l.run.listen + "/readyz") },
		l.runEnd())
}

// group is the loop's consumer group name+suffix; on a shared cluster's
// topic it starts where the topic ended when the loop started.
func (l *loop) group(suffix string) string {
	g := l.prefix + suffix
	if l.metricsFrom != nil {
		startGroupAt(l.t, l.brokers, g, l.metrics, l.metricsFrom)
	}
	return g
}

// followFlinkMetrics reads what Flink's metric system reported through the
// Kafka reporter: accumulateBusyTimeMs of every subtask of the keyed and
// sink tasks, Flink's own account of how busy they were.
func (l *loop) followFlinkMetrics(group string) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-l.job.Done(); time.Sleep(5 * time.Second); cancel() }()
	l.t.Cleanup(cancel)
	readBusyCounters(ctx, l.brokers, l.metrics, group, func(c busyCounter) {
		if c.jobID != l.job.JobID() {
			return
		}
		l.flinkMu.Lock()
		defer l.flinkMu.Unlock()
		switch c.task {
		case l.keyed:
			l.flink[c.subtask] = append(l.flink[c.subtask], c.counterPoint)
		case sinkTask:
			l.sinkBusy[c.subtask] = append(l.sinkBusy[c.subtask], c.counterPoint)
		}
	})
}

// busyCounter is one report of Flink's accumulateBusyTimeMs counter of a
// subtask, as the TaskManagers send it through the Kafka reporter.
type busyCounter struct {
	jobID, task string
	subtask     int
	counterPoint
}

// readBusyCounters hands every busy-time counter report on the reporter's
// topic to fn, as consumer group group, until ctx is done; a broker that
// is away holds it up, no more.
func readBusyCounters(ctx context.Context, brokers []string, topic, group string, fn func(busyCounter)) {
	r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, GroupID: group, Topic: topic,
		StartOffset: kafka.FirstOffset, MaxWait: 500 * time.Millisecond})
	defer r.Close()
	for {
		m, err := r.ReadMessage(ctx)
		if err != nil {
			// The reader heals after other errors (a broker away).
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return
			}
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(string(m.Value)))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var line struct {
				Name  string  `json:"name"`
				TS    int64   `json:"timestamp"`
				Value float64 `json:"value"`
				Tags  struct {
					JobID    string `json:"job_id"`
					TaskName string `json:"task_name"`
					Subtask  string `json:"subtask_index"`
				} `json:"tags"`
			}
			if json.Unmarshal(sc.Bytes(), &line) != nil || line.Name != "taskmanager.job.task.accumulateBusyTimeMs" {
				continue
			}
			sub, err := strconv.Atoi(line.Tags.Subtask)
			if err != nil {
				continue
			}
			fn(busyCounter{jobID: line.Tags.JobID, task: line.Tags.TaskName, subtask: sub, counterPoint: counterPoint{line.TS, line.Value}})
		}
	}
}

// busySince returns the keyed subtask's busy ms/s between the first
// report at or after from and the latest report, from Flink's cumulative
// counter; ok is false while there are not two such reports 8 s apart.
func (l *loop) busySince(sub int, from time.Time) (busy float64, ok bool) {
	l.flinkMu.Lock()
	defer l.flinkMu.Unlock()
	pts := l.flink[sub]
	var first *counterPoint
	for i := range pts {
		if pts[i].ts >= from.UnixMilli() {
			first = &pts[i]
			break
		}
	}
	if first == nil {
		return 0, false
	}
	last := pts[len(pts)-1]
	if last.ts-first.ts < 8000 || last.value < first.value {
		return 0, false
	}
	return (last.value - first.value) / float64(last.ts-first.ts) * 1000, true
}

// worstBusySince is the highest busySince of the keyed task's first n
// subtasks; all is false while one of them has no figure yet.
func (l *loop) worstBusySince(n int, from time.Time) (worst float64, all bool) {
	all = true
	for s := range n {
		b, ok := l.busySince(s, from)
		all = all && ok
		worst = max(worst, b)
	}
	return worst, all
}

// busyBetween is busySince over the reports between from and to.
func (l *loop) busyBetween(sub int, from, to time.Time) (float64, bool) {
	l.flinkMu.Lock()
	defer l.flinkMu.Unlock()
	var first, last *counterPoint
	for i, p := range l.flink[sub] {
		if p.ts >= from.UnixMilli() && p.ts <= to.UnixMilli() {
			if first == nil {
				first = &l.flink[sub][i]
			}
			last = &l.flink[sub][i]
		}
	}
	if first == nil || last.ts-first.ts < 5000 || last.value < first.value {
		return 0, false
	}
	return (last.value - first.value) / float64(last.ts-first.ts) * 1000, true
}

// routing reads the job's own record of which keyed subtasks processed
// key (routing.jsonl, rewritten every 10 s).
func (l *loop) routing(key string) map[int]int64 {
	b, err := os.ReadFile(filepath.Join(l.out, "routing.jsonl"))
	if err != nil {
		return nil
	}
	subs := map[int]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		var r struct {
			Key     string `json:"key"`
			Subtask int    `json:"subtask"`
			Records int64  `json:"records"`
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.Key == key {
			subs[r.Subtask] = r.Records
		}
	}
	return subs
}

// loopFinding is a saturation finding row.
type loopFinding struct {
	cause       string
	task        string
	subtask     int32
	windowStart int64
	key         string
	evidence    string
}

func (l *loop) findings(ctx context.Context, kind string) []loopFinding {
	rows, err := l.conn.Query(ctx, "SELECT cause, task_name, subtask_index, window_start, key, evidence FROM "+l.db+
		".findings FINAL WHERE job_id = ? AND kind = ? ORDER BY window_start, task_name, subtask_index", l.job.JobID(), kind)
	if err != nil {
		l.t.Logf("query findings: %v", err)
		return nil
	}
	defer rows.Close()
	var out []loopFinding
	for rows.Next() {
		var f loopFinding
		if err := rows.Scan(&f.cause, &f.task, &f.subtask, &f.windowStart, &f.key, &f.evidence); err != nil {
			l.t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// firstFinding waits (at most three minutes) for the first saturation
// finding of the job that match accepts, and returns it and when it was
// seen in ClickHouse.
func (l *loop) firstFinding(ctx context.Context, what string, match func(loopFinding) bool) (loopFinding, time.Time) {
	l.t.Helper()
	var found loopFinding
	at := l.waitFor(3*time.Minute, what, func() bool {
		for _, f := range l.findings(ctx, "saturation") {
			if match(f) {
				found = f
				return true
			}
		}
		return false
	})
	return found, at
}

// closedUpTo is the end of the newest window of the job that skewlens
// wrote subtask statistics for: windows up to there are closed.
func (l *loop) closedUpTo(ctx context.Context) int64 {
	var end int64
	if err := l.conn.QueryRow(ctx, "SELECT max(window_end) FROM "+l.db+".subtask_stats WHERE job_id = ?", l.job.JobID()).Scan(&end); err != nil {
		return 0
	}
	return end
}

// waitFor waits until cond holds (testenv.Eventually), failing the test
// with what after timeout, or as soon as the job or `skewlens run` exits.
func (l *loop) waitFor(timeout time.Duration, what string, cond func() bool) time.Time {
	l.t.Helper()
	return testenv.Eventually(l.t, timeout, what, cond,
		testenv.End{Done: l.job.Done(), Why: func() string { return "the Flink job exited:\n" + l.job.Tail(40) }}, l.runEnd())
}

// runEnd fails a wait when the loop's `skewlens run` exits.
func (l *loop) runEnd() testenv.End {
	return runEnd(l.run)
}

// runEnd fails a wait when r exits.
func runEnd(r *runProc) testenv.End {
	return testenv.End{Done: r.done, Why: func() string { return "skewlens run exited:\n" + r.logTail() }}
}

// TestFlinkClosedLoopHotKey: the hot key is found on the subtask Flink
// really routed it to, a plan is published, the running job applies it,
// the hot subtask's busy time falls in Flink's own metrics and the
// data_skew findings stop.
func TestFlinkClosedLoopHotKey(t *testing.T) {
	const hotKey = "customer-42"
	// 1400 records/s, 70 % of them the hot key: its subtask is offered
	// 1.09× what it can do (1 ms a record), the others 0.11×. Salted over
	// two subtasks the hot key leaves each at most 0.6×, over three 0.43×:
	// room for sleeps that overshoot on a loaded machine.
	rec := &webhookRecorder{}
	hook := httptest.NewServer(rec)
	defer hook.Close()
	l := startLoopWith(t, loopOptions{scenario: "hot_key", salting: true, observe: true,
		runArgs: []string{"--alert-webhook-url", hook.URL},
		jobArgs: []string{"--hot-key", hotKey, "--hot-share", "0.7", "--rate", "1400"}})
	ctx := context.Background()
	start := l.job.StartedAt()
	planWatch := l.watchPlan(keyedTask)

	// Where Flink routed the hot key, from the job's own record.
	hotSub := -1
	l.waitFor(time.Minute, "the job's record of the hot key's subtask", func() bool {
		for s := range l.routing(hotKey) {
			hotSub = s
			return true
		}
		return false
	})
	if subs := l.routing(hotKey); len(subs) != 1 {
		t.Fatalf("before any plan the hot key was processed on subtasks %v, want one", subs)
	}

	// 1. data_skew on that subtask, with the hot key joined to it.
	det, detectedAt := l.firstFinding(ctx, "a data_skew finding", func(f loopFinding) bool {
		return f.cause == "data_skew" && f.task == keyedTask
	})
	t.Logf("step 1: data_skew on %q #%d %s after the hot key started (window %s)", det.task, det.subtask,
		detectedAt.Sub(start).Round(100*time.Millisecond), time.UnixMilli(det.windowStart).Format("15:04:05"))
	if int(det.subtask) != hotSub {
		t.Fatalf("data_skew on subtask %d, but Flink routed %s to subtask %d", det.subtask, hotKey, hotSub)
	}
	// The hot key on that subtask: hot_key findings carry the subtask the
	// samples were measured on. (The data_skew finding's own list of hot
	// keys may be empty when the plan arrived within its window: the key's
	// samples then come from the salted subtasks too.)
	var hotKeyWindows uint64
	if err := l.conn.QueryRow(ctx, "SELECT count() FROM "+l.db+".hot_keys FINAL WHERE job_id = ? AND task_name = ? AND key = ? AND subtask_index = ?",
		l.job.JobID(), keyedTask, hotKey, int32(hotSub)).Scan(&hotKeyWindows); err != nil {
		t.Fatal(err)
	}
	if hotKeyWindows == 0 {
		t.Fatalf("no hot_key finding of %s on %q #%d", hotKey, keyedTask, hotSub)
	}

	// 2. A plan for the keyed task, from the salting API (watched since
	// the job started).
	var plan struct {
		Parallelism    int `json:"parallelism"`
		MaxParallelism int `json:"max_parallelism"`
		Version        int `json:"version"`
		HotKeys        []struct {
			Key    string `json:"key"`
			Salted []struct {
				Key     string `json:"key"`
				Subtask int    `json:"subtask"`
			} `json:"salted"`
		} `json:"hot_keys"`
	}
	var plannedAt time.Time
	l.waitFor(2*time.Minute, "a salting plan from the API", func() bool {
		var p map[string]any
		p, plannedAt = planWatch()
		if p == nil {
			return false
		}
		b, _ := json.Marshal(p)
		return json.Unmarshal(b, &plan) == nil
	})
	t.Logf("step 2: plan v%d published %s after the hot key started", plan.Version, plannedAt.Sub(start).Round(100*time.Millisecond))
	if plan.Parallelism != 4 || plan.MaxParallelism != 128 || len(plan.HotKeys) == 0 || plan.HotKeys[0].Key != hotKey ||
		len(plan.HotKeys[0].Salted) < 2 {
		t.Fatalf("plan %+v: want parallelism 4/128 and %s salted over two or more keys", plan, hotKey)
	}
	planned := map[int]bool{}
	for _, s := range plan.HotKeys[0].Salted {
		planned[s.Subtask] = true
	}

	// 3. The running job applies it.
	var appliedAt time.Time
	l.waitFor(time.Minute, "the job applying the plan", func() bool {
		var ok bool
		appliedAt, ok = logTime(l.job.Output(), "skewlens salting: applying plan v")
		return ok
	})
	t.Logf("step 3: the job applied the plan %s after the API served it", appliedAt.Sub(plannedAt).Round(100*time.Millisecond))
	l.waitFor(time.Minute, "the hot key processed on the plan's subtasks", func() bool {
		subs := l.routing(hotKey)
		n := 0
		for s := range subs {
			if planned[s] {
				n++
			}
		}
		return n >= 2
	})

	// 4. Flink's own metrics: no keyed subtask is saturated any more.
	reliefAt := l.waitFor(2*time.Minute, "every keyed subtask below 800 ms/s busy in Flink's metrics", func() bool {
		worst, all := l.worstBusySince(4, appliedAt.Add(2*time.Second))
		return all && worst < 800
	})
	before, _ := l.busyBetween(hotSub, start, appliedAt)
	after, _ := l.busySince(hotSub, appliedAt.Add(2*time.Second))
	t.Logf("step 4: hot subtask %d busy %.0f ms/s before the plan, %.0f after (Flink's accumulateBusyTimeMs), %s after it was applied",
		hotSub, before, after, reliefAt.Sub(appliedAt).Round(100*time.Millisecond))
	if before < 800 {
		t.Errorf("the hot subtask was busy only %.0f ms/s before the plan: not saturated", before)
	}

	// 5. The data_skew findings stop: once skewlens closed the windows of
	// the 90 s after the plan, the last data_skew window ended at least
	// 30 s (three windows) before that. The hot subtask first drains the
	// unsalted records queued in the network buffers before and after it.
	horizon := appliedAt.Add(90 * time.Second).UnixMilli()
	l.waitFor(3*time.Minute, "skewlens closing the windows after the plan", func() bool { return l.closedUpTo(ctx) >= horizon })
	var last int64
	var late []string
	for _, f := range l.findings(ctx, "saturation") {
		if f.cause == "data_skew" && f.task == keyedTask {
			last = max(last, f.windowStart+10_000)
			if f.windowStart+10_000 > appliedAt.Add(30*time.Second).UnixMilli() {
				late = append(late, fmt.Sprintf("#%d %s %s", f.subtask, time.UnixMilli(f.windowStart).Format("15:04:05"), f.evidence))
			}
		}
	}
	t.Logf("step 5: the last data_skew window ended %s after the plan was applied", time.UnixMilli(last).Sub(appliedAt).Round(100*time.Millisecond))
	if out := l.job.Output(); strings.Contains(out, "ignoring the plan") || strings.Contains(out, "retired") {
		t.Errorf("the job refused or dropped a plan of skewlens:\n%s", l.job.Tail(30))
	}
	if last > appliedAt.Add(60*time.Second).UnixMilli() {
		t.Fatalf("data_skew findings go on %s after the plan was applied:\n%s", time.UnixMilli(last).Sub(appliedAt), strings.Join(late, "\n"))
	}

	// 6. The receipt: the hot subtask's data_skew incident closed, resolved
	// by the plan, with its busy time before and after; the salted key,
	// now on subtasks that are not saturated, opened no hot_key incident
	// and fired no alert after the relief (a window's grace for the
	// records queued before it).
	var receipt incident.Incident
	l.waitFor(time.Minute, "the data_skew incident resolved by the plan", func() bool {
		for _, in := range l.incidents(ctx) {
			if in.Cause == "data_skew" && in.TaskName == keyedTask && in.Subtask == hotSub && strings.HasPrefix(in.Resolution, "resolved by plan v") {
				receipt = in
				return true
			}
		}
		return false
	})
	p := receipt.Plan
	t.Logf("step 6: incident %s %q: busy %.0f → %.0f ms/s, key on %d subtasks, %s after the plan", receipt.ID, receipt.Resolution,
		p.BusyBefore, p.BusyAfter, p.KeySubtasks, time.Duration(p.RelievedAt-p.At)*time.Millisecond)
	if p.BusyBefore < 800 || p.BusyAfter >= 800 || p.Version != uint64(plan.Version) || receipt.State != incident.StateClosed {
		t.Errorf("receipt %+v of plan v%d: want busy from at least 800 ms/s to under it", *p, plan.Version)
	}
	// The data_skew alert's resolved notification carries the receipt.
	var resolved alert.Alert
	l.waitFor(time.Minute, "the data_skew alert resolved", func() bool {
		for _, a := range rec.all() {
			if a.Status == alert.StatusResolved && a.Labels["cause"] == "data_skew" && a.Labels["subtask"] == strconv.Itoa(hotSub) {
				resolved = a
				return true
			}
		}
		return false
	})
	if why := resolved.Annotations["resolution"]; why != receipt.Why() {
		t.Errorf("the resolved data_skew alert says %q, want the incident's receipt %q", why, receipt.Why())
	}
	quiet := reliefAt.Add(10 * time.Second)
	for _, in := range l.incidents(ctx) {
		if in.Cause == "hot_key" && in.Key == hotKey && (in.Start >= quiet.UnixMilli() || in.State == incident.StateOpen) {
			t.Errorf("a hot_key incident of the salted key after the relief: %+v", in)
		}
	}
	for _, a := range rec.all() {
		if a.Status == alert.StatusFiring && a.Labels["alertname"] == alert.NameHotKey && !a.StartsAt.Before(quiet) {
			t.Errorf("an alert for the salted key after the relief: %s %s", a.ID, a.Annotations["summary"])
		}
	}
}

// incidents returns the latest state of the job's incidents.
func (l *loop) incidents(ctx context.Context) []incident.Incident {
	rows, err := l.conn.Query(ctx, "SELECT argMax(body, version) FROM "+l.db+".incidents WHERE job_id = ? GROUP BY id", l.job.JobID())
	if err != nil {
		l.t.Logf("query incidents: %v", err)
		return nil
	}
	defer rows.Close()
	var out []incident.Incident
	for rows.Next() {
		var body string
		var in incident.Incident
		if err := rows.Scan(&body); err != nil {
			l.t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(body), &in); err != nil {
			l.t.Fatalf("incident body %q: %v", body, err)
		}
		out = append(out, in)
	}
	return out
}

// TestFlinkSlowSink: a slow sink subtask is slow_subtask on the right
// subtask; the back-pressured keyed task upstream is only evidence.
func TestFlinkSlowSink(t *testing.T) {
	l := startLoop(t, "slow_sink", false, "--slow-subtask", "2")
	ctx := context.Background()
	det, detectedAt := l.firstFinding(ctx, "a finding on the sink", func(f loopFinding) bool { return f.task == sinkTask })
	t.Logf("slow_subtask found %s after the job started", detectedAt.Sub(l.job.StartedAt()).Round(100*time.Millisecond))
	if det.cause != "slow_subtask" || det.subtask != 2 {
		t.Fatalf("finding on %q: %s on subtask %d, want slow_subtask on 2", det.task, det.cause, det.subtask)
	}
	var ev struct {
		BackPressured []string `json:"backpressured_tasks"`
	}
	if err := json.Unmarshal([]byte(det.evidence), &ev); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ev.BackPressured, keyedTask) {
		t.Errorf("evidence lists back-pressured tasks %q, want %q among them", ev.BackPressured, keyedTask)
	}
	// Two more windows: the upstream task is never reported as a cause.
	horizon := detectedAt.Add(20 * time.Second).UnixMilli()
	l.waitFor(2*time.Minute, "two more windows closed", func() bool { return l.closedUpTo(ctx) >= horizon })
	for _, f := range l.findings(ctx, "saturation") {
		if f.task != sinkTask || f.cause != "slow_subtask" || f.subtask != 2 {
			t.Errorf("unexpected finding: %s on %q #%d", f.cause, f.task, f.subtask)
		}
	}
}

// TestFlinkUnderProvisioned: every keyed subtask saturated with balanced
// input is under_provisioned, with a higher parallelism recommended.
func TestFlinkUnderProvisioned(t *testing.T) {
	l := startLoop(t, "under_provisioned", false)
	ctx := context.Background()
	det, detectedAt := l.firstFinding(ctx, "a finding on the keyed task", func(f loopFinding) bool { return f.task == keyedTask })
	t.Logf("under_provisioned found %s after the job started", detectedAt.Sub(l.job.StartedAt()).Round(100*time.Millisecond))
	var ev struct {
		Recommended int `json:"recommended_parallelism"`
	}
	if err := json.Unmarshal([]byte(det.evidence), &ev); err != nil {
		t.Fatal(err)
	}
	if det.cause != "under_provisioned" || ev.Recommended <= 4 {
		t.Fatalf("finding on %q: %s recommending %d, want under_provisioned recommending more than 4\n%s",
			det.task, det.cause, ev.Recommended, det.evidence)
	}
}

// watchPlan polls the salting API for the task's plan every 100 ms in the
// background, from now on; the function it returns gives the first plan
// served and when, or nil while there is none.
func (l *loop) watchPlan(task string) func() (map[string]any, time.Time) {
	var mu sync.Mutex
	var first map[string]any
	var at time.Time
	ctx, cancel := context.WithCancel(context.Background())
	l.t.Cleanup(cancel)
	go func() {
		for ctx.Err() == nil {
			if p, err := l.plan(task); err == nil {
				mu.Lock()
				first, at = p, time.Now()
				mu.Unlock()
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() (map[string]any, time.Time) {
		mu.Lock()
		defer mu.Unlock()
		return first, at
	}
}

// logTime finds the first line of the job's output that contains what and
// returns the time its log4j prefix (HH:mm:ss.SSS, local time) gives.
func logTime(out, what string) (time.Time, bool) {
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, what) || len(line) < 12 {
			continue
		}
		tod, err := time.ParseInLocation("15:04:05.000", line[:12], time.Local)
		if err != nil {
			continue
		}
		now := time.Now()
		t := time.Date(now.Year(), now.Month(), now.Day(), tod.Hour(), tod.Minute(), tod.Second(), tod.Nanosecond(), time.Local)
		if t.After(now.Add(time.Minute)) { // logged before midnight
			t = t.AddDate(0, 0, -1)
		}
		return t, true
	}
	return time.Time{}, false
}

// logHas reports whether a line of out contains each of parts.
func logHas(out string, parts ...string) bool {
	for line := range strings.Lines(out) {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
			return true
		}
	}
	return false
}

// errNoPlan is returned by plan while the API has no plan for the task.
var errNoPlan = errors.New("no plan")

// plan fetches the task's current plan from the salting API.
func (l *loop) plan(task string) (map[string]any, error) {
	resp, err := http.Get("http://" + l.api + l.planPath(task))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusNotFound {
		return nil, errNoPlan
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET plan: %s: %s", resp.Status, body)
	}
	var p map[string]any
	return p, json.Unmarshal(body, &p)
}

// TestFlinkClusterClosedLoop is the hot-key loop as production runs it,
// on Flink 2 and on the 1.20 LTS: the example job (deploy/flink/example,
// packaged as a user packages a job) submitted through the REST API to a
// standalone session cluster, a JobManager and two TaskManagers in JVMs
// of their own that load the skewlens reporter from plugins/. skewlens
// names the subtask Flink routes the hot key to, serves a plan, the
// running job applies it, the subtask's busy time falls in Flink's own
// metrics, and the data_skew incident closes resolved by the plan.
func TestFlinkClusterClosedLoop(t *testing.T) {
	for _, c := range []struct{ name, version string }{{"flink2", flinktest.Flink2}, {"flink1", flinktest.Flink1}} {
		t.Run(c.version, func(t *testing.T) { clusterClosedLoop(t, c.name, c.version) })
	}
}

func clusterClosedLoop(t *testing.T, name, version string) {
	const hotKey = "customer-42"
	// As TestFlinkClosedLoopHotKey: 1400 orders/s, 70 % of them the hot
	// key, 1 ms each in "Partial sums": its subtask is offered 1.09×
	// what it can do, the others 0.11×.
	l := startLoopWith(t, loopOptions{scenario: "hot_key", name: "cluster-" + name, salting: true, observe: true, cluster: version,
		jobArgs: []string{"--hot-share", "0.7", "--rate", "1400", "--cost-ms", "1", "--parallelism", "4", "--max-parallelism", "128"}})
	ctx := context.Background()
	start := l.job.StartedAt()
	planWatch := l.watchPlan(l.keyed)
	router, err := keygroup.NewRouter(4, 128)
	if err != nil {
		t.Fatal(err)
	}
	hotSub := router.Subtask(hotKey)

	// 1. data_skew on the subtask Flink's key-group assignment gives the key.
	det, detectedAt := l.firstFinding(ctx, "a data_skew finding", func(f loopFinding) bool {
		return f.cause == "data_skew" && f.task == l.keyed
	})
	t.Logf("step 1: data_skew on %q #%d %s after the job ran", det.task, det.subtask, detectedAt.Sub(start).Round(100*time.Millisecond))
	if int(det.subtask) != hotSub {
		t.Fatalf("data_skew on subtask %d, but Flink routes %s to subtask %d", det.subtask, hotKey, hotSub)
	}

	// 2. A plan from the API.
	var plannedAt time.Time
	var plan map[string]any
	l.waitFor(2*time.Minute, "a salting plan from the API", func() bool {
		plan, plannedAt = planWatch()
		return plan != nil
	})
	t.Logf("step 2: plan v%v served %s after the job ran", plan["version"], plannedAt.Sub(start).Round(100*time.Millisecond))

	// 3. The job, on the TaskManagers, applies it: its log says so, and
	// so does the salting operator's metric in Flink's REST API
	// (docs/flink.md, "Is the plan applied?").
	// (The cluster's logs hold the other tests' jobs too.)
	l.waitFor(time.Minute, "the job applying the plan", func() bool {
		return logHas(l.job.Output(), "skewlens salting: applying plan v", "of job "+l.job.JobID())
	})
	appliedAt := time.Now()
	cj := l.job
	l.waitFor(time.Minute, "the plan's version in the salting operator's metric", func() bool {
		v, ok := cj.Cluster().VertexMetric(cj.ID, "Salt keys for Partial sums", "skewlens.saltingPlanVersion")
		return ok && v == fmt.Sprint(plan["version"])
	})

	// 4. Flink's own metrics: no subtask of the task is saturated any more.
	reliefAt := l.waitFor(2*time.Minute, "every subtask of the task below 800 ms/s busy in Flink's metrics", func() bool {
		worst, all := l.worstBusySince(4, appliedAt.Add(2*time.Second))
		return all && worst < 800
	})
	before, _ := l.busyBetween(hotSub, start, plannedAt)
	after, _ := l.busySince(hotSub, appliedAt.Add(2*time.Second))
	t.Logf("step 4: hot subtask %d busy %.0f ms/s before the plan, %.0f after, %s after it was applied",
		hotSub, before, after, reliefAt.Sub(appliedAt).Round(100*time.Millisecond))
	if before < 800 {
		t.Errorf("the hot subtask was busy only %.0f ms/s before the plan: not saturated", before)
	}

	// 5. The receipt.
	var receipt incident.Incident
	l.waitFor(2*time.Minute, "the data_skew incident resolved by the plan", func() bool {
		for _, in := range l.incidents(ctx) {
			if in.Cause == "data_skew" && in.Subtask == hotSub && strings.HasPrefix(in.Resolution, "resolved by plan v") {
				receipt = in
				return true
			}
		}
		return false
	})
	t.Logf("step 5: incident %s: %s", receipt.ID, receipt.Why())
	if p := receipt.Plan; p == nil || p.BusyBefore < 800 || p.BusyAfter >= 800 {
		t.Errorf("receipt %+v: want busy from at least 800 ms/s to under it", p)
	}
}
