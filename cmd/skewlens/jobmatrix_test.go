package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/alert"
	"github.com/skewlens/skewlens/alert/incident"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/internal/testenv/flinktest"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
	"github.com/skewlens/skewlens/plans"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/keygroup"
)

// The life-of-a-job matrix (issue 32, item 6): a job's whole life on a
// real standalone Flink cluster, under `skewlens run` with a real Kafka
// broker and ClickHouse. One environment serves every row, in order: the
// broker and ClickHouse (this test's own, which it takes down and brings
// back on the same port with the same data), `skewlens run` (restarted by
// some rows, in the same consumer group and database), `skewlens serve`
// (the plan server the salted job polls, as in production), a webhook
// that records the alerts, and a Flink 2.3.0 cluster. A Flink 1.20.5
// cluster runs beside it until the TaskManager row, for the rows whose
// input is what the Flink line reports: the JobManager's checkpoint
// gauges of a job without a completed checkpoint (both lines report -1
// for the last checkpoint's duration and size), and a task's new attempt
// after its TaskManager died (attempt numbers, counters from zero). The
// rows after it depend on the broker, ClickHouse, the plan server and
// the job's lifecycle alone, alike on both lines.
//
// The jobs are deploy/flink/example's HotKeyJob, 70 % of its orders for
// one customer, whose subtask of "Partial sums" is saturated:
//
//   - nocp (both versions): checkpointing off, and no plan server (its
//     --salting-url answers nothing), so its data_skew incident and alert
//     stay open for as long as it runs;
//   - precp (both versions): checkpointing on with a one-hour interval
//     and minimum pause, so it stays before its first checkpoint;
//   - salted (2.3.0): polls `skewlens serve` and applies the plans.
//
// Each row is a subtest, and asserts what run logs (its JSON log), stores
// (ClickHouse), alerts (the webhook), serves (its API) and that it still
// runs at the row's end; each logs its duration. The one wall-clock wait
// is an outage's 60 s, counted from the moment the port is closed.

// Matrix settings.
const (
	matrixJobEndAfter = 30 * time.Second
	matrixWindow      = 10 * time.Second
	matrixOutage      = 60 * time.Second
	matrixHotKey      = "customer-42"
	matrixTask        = "Partial sums"
	matrixSaltVertex  = "Salt keys for Partial sums"
)

// matrixJobArgs are the HotKeyJob flags every job of the matrix runs
// with: 500 orders/s, 70 % of them the hot key, 2.8 ms each in "Partial
// sums": its subtask is offered 1.09× what it can do, the others 0.15×.
var matrixJobArgs = []string{"--hot-share", "0.7", "--rate", "500", "--cost-ms", "2.8", "--parallelism", "4", "--max-parallelism", "128"}

// TestJobMatrix runs the life-of-a-job matrix; see above.
func TestJobMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the job matrix needs Flink clusters, a Kafka broker and ClickHouse")
	}
	begin := time.Now()
	var rows []string
	row := func(name string, budget time.Duration, f func(t *testing.T)) bool {
		start := time.Now()
		ok := t.Run(name, f)
		d := time.Since(start).Round(time.Second)
		verdict := "pass"
		if !ok {
			verdict = "FAIL"
		}
		rows = append(rows, fmt.Sprintf("%-40s %-4s %6s (budget %s)", name, verdict, d, budget))
		t.Logf("row %s: %s in %s (budget %s)", name, verdict, d, budget)
		if d > budget {
			// Logged, not failed: the rows' timing on a shared machine
			// varies; the budget is for CI's.
			t.Logf("row %s took %s: OVER its budget of %s", name, d, budget)
		}
		return ok
	}
	defer func() {
		t.Logf("job matrix: %s in all\n%s", time.Since(begin).Round(time.Second), strings.Join(rows, "\n"))
	}()

	m := startMatrix(t)
	if !row("setup", 5*time.Minute, m.setup) {
		t.Fatal("the jobs are not diagnosed: no row can run")
	}
	for _, how := range []string{"sigterm", "sigkill"} {
		row("run_"+how, 3*time.Minute, func(t *testing.T) { m.restartRow(t, how) })
	}
	row("taskmanager_killed", 4*time.Minute, m.taskManagerRow)
	m.stopFlink1(t)
	row("cancel_resubmit_same_name", 3*time.Minute, m.resubmitRow)
	row("broker_down_60s", 4*time.Minute, m.brokerRow)
	row("clickhouse_down_60s", 4*time.Minute, m.clickHouseRow)
	row("plan_server_down_60s", 3*time.Minute, m.planServerRow)
	row("last_job_cancelled", 3*time.Minute, m.lastJobRow)
}

// matrix is the environment the rows share.
type matrix struct {
	top      *testing.T
	broker   *testenv.Process
	chp      *testenv.Process
	brokers  []string
	chAddr   string
	conn     ch.Conn
	prefix   string
	db       string
	group    string
	runArgs  []string
	listen   string // run's /metrics, /healthz, /readyz
	api      string // run's API
	plan     string // serve's API: the plan server
	hook     *webhookRecorder
	samples  *sampleTap
	readings *readingTap
	jobJar   string
	plugin   string

	mu      sync.Mutex // guards run, runLogs, serve
	run     *runProc
	runLogs []string // every run's log file, in order
	serve   *runProc

	clusters map[string]*flinktest.Cluster // by version
	jarIDs   map[string]string             // uploaded job jar, by version
	jobs     []*matrixJob
}

// matrixJob is one job of the matrix.
type matrixJob struct {
	role    string // nocp, precp, salted
	version string
	name    string // the Flink job name
	*flinktest.ClusterJob
}

func (j *matrixJob) String() string {
	return fmt.Sprintf("%s on %s (%s)", j.role, j.version, skew.ShortID(j.ID))
}

// startMatrix starts the servers, skewlens and the clusters; setup
// starts the jobs.
func startMatrix(t *testing.T) *matrix {
	m := &matrix{top: t, prefix: "matrix", db: "matrix", group: "matrix", hook: &webhookRecorder{},
		clusters: map[string]*flinktest.Cluster{}, jarIDs: map[string]string{}}
	m.broker = kafkatest.StartPrivate(t)
	m.brokers = []string{m.broker.Addr}
	m.chp = chtest.StartPrivate(t)
	m.chAddr = m.chp.Addr
	m.plugin, m.jobJar = flinktest.Jars(t)
	hook := httptest.NewServer(m.hook)
	t.Cleanup(hook.Close)
	var err error
	if m.conn, err = ch.Open(&ch.Options{Addr: []string{m.chAddr}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.conn.Close() })
	m.listen, m.api, m.plan = freeAddr(t), freeAddr(t), freeAddr(t)
	m.runArgs = []string{"--create-topics", "--brokers", m.brokers[0], "--clickhouse-addr", m.chAddr,
		"--database", m.db, "--topics", m.prefix + "-metrics," + m.prefix + "-samples",
		"--dead-letter-topic", m.prefix + "-dead", "--plans-topic", m.prefix + "-plans",
		"--listen", m.listen, "--api-listen", m.api, "--quiet", "--log-format", "json",
		"--alert-webhook-url", hook.URL, "--alert-for", "10s",
		"--job-end-after", matrixJobEndAfter.String(), "--window", matrixWindow.String()}
	m.startRun(t)
	m.startServe(t)
	m.samples = tapSamples(t, m.brokers, m.prefix+"-samples")
	m.readings = tapReadings(t, m.brokers, m.prefix+"-metrics")
	for _, v := range []string{flinktest.Flink2, flinktest.Flink1} {
		c := flinktest.StartCluster(t, flinktest.ClusterConfig{Version: v, TaskManagers: 2, Slots: 6,
			Plugins: map[string]string{"skewlens": m.plugin}, Config: map[string]string{
				"metrics.reporter.skewlens.factory.class":     "io.github.skewlens.flink.reporter.SkewlensReporterFactory",
				"metrics.reporter.skewlens.bootstrap.servers": m.brokers[0],
				"metrics.reporter.skewlens.topic":             m.prefix + "-metrics",
				"metrics.reporter.skewlens.interval":          "5 s",
				// A job restarts in place (same id) when a task fails,
				// checkpointing on or off: Flink's default is no restart
				// without checkpointing.
				"restart-strategy.type":                 "fixed-delay",
				"restart-strategy.fixed-delay.attempts": "1000",
				"restart-strategy.fixed-delay.delay":    "1 s",
				// Each job's slots spread over the TaskManagers, so that
				// killing one hits every job.
				"taskmanager.load-balance.mode": "SLOTS",
			}})
		m.clusters[v] = c
		m.jarIDs[v] = c.Upload(t, m.jobJar)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("skewlens run log tail:\n%s", m.currentRun().logTail())
			for v, c := range m.clusters {
				t.Logf("Flink %s:\n%s", v, c.LogTail(30))
			}
		}
	})
	return m
}

func freeAddr(t *testing.T) string {
	t.Helper()
	p, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(p)
}

// startRun starts `skewlens run` (the matrix's flags, its consumer group)
// and waits until it is ready or has exited.
func (m *matrix) startRun(t testing.TB) *runProc {
	t.Helper()
	args := append([]string{"run", "--group", m.group}, m.runArgs...)
	r := startChild(m.top, "run", args...)
	r.listen = m.listen
	m.mu.Lock()
	m.run = r
	m.runLogs = append(m.runLogs, r.log.Name())
	m.mu.Unlock()
	// Ready, or exited: the caller's next wait on it says why.
	waitUntil(t, 90*time.Second, "skewlens run ready", func() bool {
		select {
		case <-r.done:
			return true
		default:
		}
		return httpOK("http://" + m.listen + "/readyz")
	})
	return r
}

// startServe starts `skewlens serve` on the plan server's address and
// waits until it answers.
func (m *matrix) startServe(t testing.TB) {
	t.Helper()
	s := startChild(m.top, "serve", "serve", "--clickhouse-addr", m.chAddr, "--database", m.db, "--api-listen", m.plan, "--log-format", "json")
	m.mu.Lock()
	m.serve = s
	m.mu.Unlock()
	waitUntil(t, time.Minute, "skewlens serve ready", func() bool { return httpOK("http://" + m.plan + "/readyz") },
		exitWatch{s.done, func() string { return "skewlens serve exited:\n" + s.logTail() }})
}

func (m *matrix) currentRun() *runProc {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.run
}

// ensureRun starts `skewlens run` again when an earlier row left it
// dead, in a new consumer group (the old group's state is what killed
// it), so that the rows after a failed one still test their own thing.
func (m *matrix) ensureRun(t *testing.T) {
	t.Helper()
	r := m.currentRun()
	select {
	case <-r.done:
	default:
		return
	}
	m.group += "-again"
	t.Logf("skewlens run is not running (%s); starting it afresh in group %s", exitReason(r), m.group)
	started := time.Now()
	m.startRun(t)
	// Caught up: the new group reads the topics from their start.
	if why := m.closedOrExit(t, 3*time.Minute, started, m.running()...); why != "" {
		t.Fatalf("skewlens run, started afresh, exited too: %s", why)
	}
	t.Logf("skewlens run caught up %s after its start", time.Since(started).Round(100*time.Millisecond))
}

// runWatch fails a wait when the current `skewlens run` exits.
func (m *matrix) runWatch() exitWatch {
	r := m.currentRun()
	return exitWatch{r.done, func() string { return "skewlens run exited:\n" + r.logTail() }}
}

// jobWatch fails a wait when the job ends.
func jobWatch(j *matrixJob) exitWatch {
	return exitWatch{j.Done(), func() string { return fmt.Sprintf("job %s ended:\n%s", j, j.Tail(40)) }}
}

func httpOK(u string) bool {
	resp, err := http.Get(u)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// getJSON decodes the 200 answer to GET base+path into v.
func getJSON(base, path string, v any) bool {
	resp, err := http.Get("http://" + base + path)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
}

// submit runs a job of the matrix on the cluster of version.
func (m *matrix) submit(t testing.TB, version, role string, extra ...string) *matrixJob {
	t.Helper()
	name := "matrix-" + role + "-" + strings.ReplaceAll(version, ".", "")
	// Jobs without a plan server poll a port nothing listens on.
	salting := "http://" + m.plan
	if role != "salted" {
		salting = "http://" + freeAddr(m.top)
	}
	args := append([]string{"--brokers", m.brokers[0], "--salting-url", salting, "--samples-topic", m.prefix + "-samples", "--job-name", name},
		append(slices.Clone(matrixJobArgs), extra...)...)
	cj := m.clusters[version].Start(m.top, m.jarIDs[version], flinktest.RunRequest{EntryClass: flinktest.HotKeyJob, ProgramArgsList: args})
	j := &matrixJob{role: role, version: version, name: name, ClusterJob: cj}
	m.jobs = append(m.jobs, j)
	return j
}

// running returns the jobs that have not ended.
func (m *matrix) running() []*matrixJob {
	var out []*matrixJob
	for _, j := range m.jobs {
		select {
		case <-j.Done():
		default:
			out = append(out, j)
		}
	}
	return out
}

func (m *matrix) job(role, version string) *matrixJob {
	for _, j := range slices.Backward(m.jobs) {
		if j.role == role && j.version == version {
			return j
		}
	}
	return nil
}

// setup starts the jobs and waits until skewlens has found each one's
// hot key: a data_skew alert firing for the jobs without a plan server,
// and a plan applied by the salted one.
func (m *matrix) setup(t *testing.T) {
	for _, v := range []string{flinktest.Flink2, flinktest.Flink1} {
		m.submit(t, v, "nocp")
		m.submit(t, v, "precp", "--checkpoint-interval", "3600000")
	}
	salted := m.submit(t, flinktest.Flink2, "salted")
	for _, j := range m.jobs {
		t.Logf("job %s: %s", j, j.ID)
	}
	for _, j := range m.jobs {
		if j.role == "salted" {
			m.waitApplied(t, j, 3*time.Minute)
			continue
		}
		waitUntil(t, 3*time.Minute, "a data_skew alert of "+j.String(), func() bool { return len(m.firing(j.ID, "data_skew")) > 0 },
			m.runWatch(), jobWatch(j))
	}
	t.Logf("every job diagnosed; %s applies plan v%d", salted, m.appliedVersion(salted))
	m.assertRunning(t)
}

// waitApplied waits until the job applies the plan `skewlens run` serves
// for it (the salting operator's metric in Flink's REST API) and returns
// its version.
func (m *matrix) waitApplied(t *testing.T, j *matrixJob, timeout time.Duration) uint64 {
	t.Helper()
	var p plans.Plan
	waitUntil(t, timeout, "a plan of "+j.String()+" applied", func() bool {
		return getJSON(m.api, planPath(j.ID), &p) && m.appliedVersion(j) == int64(p.Version)
	}, m.runWatch(), jobWatch(j))
	return p.Version
}

// appliedVersion is the version of the plan the job's salting operator
// applies (its saltingPlanVersion gauge), -1 without one, -2 when Flink
// does not say.
func (m *matrix) appliedVersion(j *matrixJob) int64 {
	v, ok := j.Cluster().VertexMetric(j.ID, matrixSaltVertex, "skewlens.saltingPlanVersion")
	if !ok {
		return -2
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return -2
	}
	return n
}

func planPath(jobID string) string {
	return "/v1/salting/" + url.PathEscape(jobID) + "/" + url.PathEscape(matrixTask)
}

// firing returns the ids of the job's alerts of cause (any when "") whose
// last notification so far is firing.
func (m *matrix) firing(jobID, cause string) []string {
	last := map[string]string{}
	for _, a := range m.hook.all() {
		if a.Labels["job_id"] == jobID && (cause == "" || a.Labels["cause"] == cause) {
			last[a.ID] = a.Status
		}
	}
	var out []string
	for id, st := range last {
		if st == alert.StatusFiring {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// mark is where a row starts: what the logs and the webhook held then.
type mark struct {
	at      time.Time
	runLogs map[string]int64 // run log file -> size
	tmLogs  map[string]int64 // TaskManager log file -> size
	alerts  int
	run     *runProc // the run then, whose late count is late
	late    float64
}

func (m *matrix) mark() mark {
	k := mark{at: time.Now(), runLogs: map[string]int64{}, tmLogs: map[string]int64{}, alerts: len(m.hook.all())}
	m.mu.Lock()
	for _, f := range m.runLogs {
		k.runLogs[f] = fileSize(f)
	}
	m.mu.Unlock()
	for _, c := range m.clusters {
		files, _ := filepath.Glob(filepath.Join(c.Dir, "taskmanager-*.log"))
		for _, f := range files {
			k.tmLogs[f] = fileSize(f)
		}
	}
	k.run, k.late = m.currentRun(), m.late()
	return k
}

// lateSince is how many records run dropped as late after k (a run
// started since counts from zero).
func (m *matrix) lateSince(k mark) float64 {
	if m.currentRun() != k.run {
		return m.late()
	}
	return m.late() - k.late
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// since returns what the files (of the glob patterns' or known ones)
// gained after the sizes in from; files that were not there are read
// whole.
func since(from map[string]int64, files []string) string {
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if off := from[f]; off <= int64(len(data)) {
			data = data[off:]
		}
		b.Write(data)
	}
	return b.String()
}

// runLogSince is what every `skewlens run` logged after k.
func (m *matrix) runLogSince(k mark) []logLine {
	m.mu.Lock()
	files := slices.Clone(m.runLogs)
	m.mu.Unlock()
	var out []logLine
	sc := bufio.NewScanner(strings.NewReader(since(k.runLogs, files)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg != "" {
			l.raw = sc.Text()
			out = append(out, l)
		}
	}
	return out
}

// logLine is a line of run's JSON log.
type logLine struct {
	Time  time.Time `json:"time"`
	Level string    `json:"level"`
	Msg   string    `json:"msg"`
	raw   string
}

// tmLogSince is what the TaskManagers logged after k.
func (m *matrix) tmLogSince(k mark) string {
	var files []string
	for _, c := range m.clusters {
		f, _ := filepath.Glob(filepath.Join(c.Dir, "taskmanager-*.log"))
		files = append(files, f...)
	}
	return since(k.tmLogs, files)
}

// alertsSince returns the notifications the webhook received after k.
func (m *matrix) alertsSince(k mark) []alert.Alert {
	all := m.hook.all()
	if k.alerts > len(all) {
		return nil
	}
	return all[k.alerts:]
}

// late is the current run's count of records dropped as late.
func (m *matrix) late() float64 {
	return metricSum(m.listen, "skewlens_records_total", `outcome="late"`)
}

// metricSum sums the series of the metric at addr's /metrics whose labels
// contain labels; 0 when it does not answer.
func metricSum(addr, metric, labels string) float64 {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, metric+"{") && strings.Contains(line, labels) {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			sum += v
		}
	}
	return sum
}

// assertLogClean fails t for each ERROR line run logged after k.
func (m *matrix) assertLogClean(t *testing.T, k mark) {
	t.Helper()
	for _, l := range m.runLogSince(k) {
		if l.Level == "ERROR" {
			t.Errorf("run logged an error: %s", l.raw)
		}
	}
}

// assertRunning fails t unless `skewlens run` still runs and is healthy.
func (m *matrix) assertRunning(t *testing.T) {
	t.Helper()
	r := m.currentRun()
	select {
	case <-r.done:
		t.Fatalf("skewlens run is not running at the end of the row:\n%s", r.logTail())
	default:
	}
	if !httpOK("http://" + m.listen + "/healthz") {
		t.Errorf("skewlens run's /healthz does not answer 200 at the end of the row")
	}
}

// closedUpTo is the end of the newest window of the job's keyed task that
// run stored statistics of.
func (m *matrix) closedUpTo(ctx context.Context, jobID string) int64 {
	var end int64
	if err := m.conn.QueryRow(ctx, "SELECT max(window_end) FROM "+m.db+".subtask_stats WHERE job_id = ? AND task_name = ?", jobID, matrixTask).Scan(&end); err != nil {
		return 0
	}
	return end
}

// closedOrExit waits until run has stored the windows of the jobs up to
// at least until, and returns ""; or, should run exit first, why it did
// (its error). It fails t after timeout.
func (m *matrix) closedOrExit(t *testing.T, timeout time.Duration, until time.Time, jobs ...*matrixJob) string {
	t.Helper()
	ctx := context.Background()
	r := m.currentRun()
	deadline := time.Now().Add(timeout)
	for _, j := range jobs {
		for m.closedUpTo(ctx, j.ID) < until.UnixMilli() {
			select {
			case <-r.done:
				return exitReason(r)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("run storing the windows of %s up to %s: not within %s", j, until.Format(time.TimeOnly), timeout)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return ""
}

// waitClosed is closedOrExit that, when run exits, fails t with why and
// starts it again (ensureRun) to wait on, so that the row goes on to
// check the rest.
func (m *matrix) waitClosed(t *testing.T, timeout time.Duration, until time.Time, jobs ...*matrixJob) {
	t.Helper()
	for {
		why := m.closedOrExit(t, timeout, until, jobs...)
		if why == "" {
			return
		}
		t.Errorf("skewlens run exited: %s", why)
		m.ensureRun(t)
	}
}

// exitReason is the error an exited run printed (its log's lines that
// are not JSON), or its exit status.
func exitReason(r *runProc) string {
	b, _ := os.ReadFile(r.log.Name())
	var why []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" && !strings.HasPrefix(l, "{") {
			why = append(why, l)
		}
	}
	if len(why) == 0 {
		return r.cmd.ProcessState.String()
	}
	return strings.Join(why, " / ")
}

// assertNoWindowLost checks the windows between from and to (aligned to
// the window) of each subtask of the job's keyed task, against what the
// reporters delivered (the busy-time readings on the metrics topic): a
// window with a reading that run did not store statistics of is lost by
// skewlens, and fails t; a window without a reading is the reporter's
// gap, which fails t when reporter is set (the broker row: the
// reporter's queue must hold), and is logged otherwise (a TaskManager
// that reported late on a loaded machine).
func (m *matrix) assertNoWindowLost(t *testing.T, j *matrixJob, from, to time.Time, reporter bool) {
	t.Helper()
	// A job's first windows have no difference of readings yet.
	if start := j.Started.Add(2 * matrixWindow); from.Before(start) {
		from = start
	}
	w := matrixWindow.Milliseconds()
	lo, hi := (from.UnixMilli()/w+1)*w, to.UnixMilli()/w*w
	waitUntil(t, 30*time.Second, "the metrics topic read up to "+time.UnixMilli(hi).Format(time.TimeOnly), func() bool { return m.readings.latest(j.ID) >= hi })
	rows, err := m.conn.Query(context.Background(), "SELECT DISTINCT window_start, subtask_index FROM "+m.db+
		".subtask_stats WHERE job_id = ? AND task_name = ? AND window_start >= ? AND window_start < ?", j.ID, matrixTask, lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	stored := map[[2]int64]bool{}
	for rows.Next() {
		var ws int64
		var sub int32
		if err := rows.Scan(&ws, &sub); err != nil {
			t.Fatal(err)
		}
		stored[[2]int64{ws, int64(sub)}] = true
	}
	var lost, gaps []string
	for ws := lo; ws < hi; ws += w {
		for sub := range 4 {
			at := fmt.Sprintf("%s #%d", time.UnixMilli(ws).Format(time.TimeOnly), sub)
			switch {
			case !m.readings.has(j.ID, sub, ws):
				gaps = append(gaps, at)
			case !stored[[2]int64{ws, int64(sub)}]:
				lost = append(lost, at)
			}
		}
	}
	span := from.Format(time.TimeOnly) + "–" + to.Format(time.TimeOnly)
	if len(lost) > 0 {
		t.Errorf("%s: windows the reporters delivered and run did not store (%s): %s", j, span, strings.Join(lost, ", "))
	}
	switch {
	case len(gaps) > 0 && reporter:
		t.Errorf("%s: windows the reporters never delivered readings of (%s): %s", j, span, strings.Join(gaps, ", "))
	case len(gaps) > 0:
		t.Logf("%s: windows without readings from the reporters (%s), not counted: %s", j, span, strings.Join(gaps, ", "))
	}
}

// assertNotEnded fails t when run ended the job's run (a job_end finding,
// an incident or alert closed as ended) after k: the job still runs.
func (m *matrix) assertNotEnded(t *testing.T, k mark, jobs ...*matrixJob) {
	t.Helper()
	for _, j := range jobs {
		var ends struct{ Findings []skew.Finding }
		if getJSON(m.api, "/v1/findings?kind=job_end&job_id="+url.QueryEscape(j.ID), &ends) && len(ends.Findings) > 0 {
			t.Errorf("%s still runs, but run ended it: %+v", j, ends.Findings[0].JobEnd)
		}
		for _, a := range m.alertsSince(k) {
			if why := a.Annotations["resolution"]; a.Labels["job_id"] == j.ID && a.Status == alert.StatusResolved && isEndResolution(why) {
				t.Errorf("%s still runs, but its alert %s resolved %q", j, a.ID, why)
			}
		}
	}
}

func isEndResolution(why string) bool {
	return strings.Contains(why, "job stopped reporting") || strings.Contains(why, "job restarted as")
}

// incidents returns the job's incidents as run's API serves them.
func (m *matrix) incidents(jobID string) ([]incident.Incident, bool) {
	var incs struct{ Incidents []incident.Incident }
	ok := getJSON(m.api, "/v1/incidents?job_id="+url.QueryEscape(jobID), &incs)
	return incs.Incidents, ok
}

func openIncidents(incs []incident.Incident, cause string) []string {
	var out []string
	for _, in := range incs {
		if in.State != incident.StateClosed && (cause == "" || in.Cause == cause) {
			out = append(out, in.ID)
		}
	}
	slices.Sort(out)
	return out
}

// restartRow restarts `skewlens run` (SIGTERM: it drains and exits 0;
// SIGKILL: a crash) while the jobs without a checkpoint run: the new run
// resumes the engine state, alert state and incidents of each, loses no
// window, fires no alert again and serves the same plans.
func (m *matrix) restartRow(t *testing.T, how string) {
	m.ensureRun(t)
	var jobs []*matrixJob
	for _, j := range m.running() {
		if j.role != "salted" {
			jobs = append(jobs, j)
		}
	}
	// What each job has before: firing alerts, open incidents, its plan.
	type before struct {
		firing, open []string
		plan         plans.Plan
	}
	was := map[*matrixJob]before{}
	for _, j := range jobs {
		var b before
		b.firing = m.firing(j.ID, "data_skew")
		incs, _ := m.incidents(j.ID)
		b.open = openIncidents(incs, "data_skew")
		getJSON(m.api, planPath(j.ID), &b.plan)
		was[j] = b
	}
	k := m.mark()
	old := m.currentRun()
	sig := syscall.SIGTERM
	if how == "sigkill" {
		sig = syscall.SIGKILL
	}
	if err := old.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-old.done:
	case <-time.After(time.Minute):
		t.Fatalf("run still running a minute after %s:\n%s", how, old.logTail())
	}
	if code := old.cmd.ProcessState.ExitCode(); how == "sigterm" && code != 0 {
		t.Errorf("run exited %d after SIGTERM, want 0:\n%s", code, old.logTail())
	}
	restarted := time.Now()
	t.Logf("run %s; restarted %s later", how, restarted.Sub(k.at).Round(100*time.Millisecond))
	m.startRun(t)
	rowName := func(j *matrixJob) string {
		return j.version + "/" + map[string]string{"nocp": "checkpointing_off", "precp": "before_first_checkpoint"}[j.role]
	}
	// Two windows after the restart.
	if why := m.closedOrExit(t, 2*time.Minute, restarted.Add(2*matrixWindow), jobs...); why != "" {
		for _, j := range jobs {
			t.Run(rowName(j), func(t *testing.T) {
				m.assertCheckpoints(t, j)
				t.Errorf("skewlens run exited after the %s: %s", how, why)
			})
		}
		m.ensureRun(t)
		return
	}

	resumed := false
	for _, l := range m.runLogSince(k) {
		var f struct {
			Resumed int `json:"resumed_jobs"`
		}
		if l.Msg == "partitions assigned" && json.Unmarshal([]byte(l.raw), &f) == nil && f.Resumed >= len(jobs) {
			resumed = true
		}
	}
	if !resumed {
		t.Errorf("run did not log \"partitions assigned\" with resumed_jobs >= %d after the restart", len(jobs))
	}
	m.assertLogClean(t, k)
	for _, j := range jobs {
		t.Run(rowName(j), func(t *testing.T) {
			m.assertCheckpoints(t, j)
			// Stores: every window from before the restart on.
			m.assertNoWindowLost(t, j, k.at.Add(-3*matrixWindow), restarted.Add(2*matrixWindow), false)
			// Alerts: what fired before does not fire again.
			b := was[j]
			if len(b.firing) == 0 {
				t.Errorf("no data_skew alert of %s firing before the restart: nothing to resume", j)
			}
			for _, a := range m.alertsSince(k) {
				if a.Labels["job_id"] == j.ID && a.Status == alert.StatusFiring && slices.Contains(b.firing, a.ID) {
					t.Errorf("alert %s fired again after the restart", a.ID)
				}
			}
			// Serves: the same open incidents, the same plan.
			incs, ok := m.incidents(j.ID)
			if now := openIncidents(incs, "data_skew"); !ok || !slices.Equal(now, b.open) || len(now) == 0 {
				t.Errorf("open data_skew incidents of %s: %v before the restart, %v after", j, b.open, now)
			}
			var p plans.Plan
			if !getJSON(m.api, planPath(j.ID), &p) || p.Version != b.plan.Version || b.plan.Version == 0 {
				t.Errorf("plan of %s: v%d before the restart, v%d after", j, b.plan.Version, p.Version)
			}
		})
	}
	m.assertRunning(t)
}

// assertCheckpoints fails t unless the job is in the state its row names:
// checkpointing off, or on and before its first checkpoint.
func (m *matrix) assertCheckpoints(t *testing.T, j *matrixJob) {
	t.Helper()
	var cfg struct {
		Interval int64 `json:"interval"`
	}
	var st struct {
		Counts struct {
			Completed int `json:"completed"`
		} `json:"counts"`
	}
	c := j.Cluster()
	errCfg := c.JSON(http.MethodGet, "/jobs/"+j.ID+"/checkpoints/config", nil, &cfg)
	errSt := c.JSON(http.MethodGet, "/jobs/"+j.ID+"/checkpoints", nil, &st)
	switch j.role {
	case "nocp":
		// Flink answers 404 ("Checkpointing is not enabled") or an
		// interval of Long.MAX_VALUE without checkpointing.
		if errCfg == nil && cfg.Interval > 0 && cfg.Interval < 1<<62 {
			t.Errorf("%s checkpoints every %d ms, want checkpointing off", j, cfg.Interval)
		}
	case "precp":
		if errCfg != nil || cfg.Interval != 3600000 || errSt != nil || st.Counts.Completed != 0 {
			t.Errorf("%s: checkpoint interval %d ms (%v), %d completed (%v): want 1 h and none yet", j, cfg.Interval, errCfg, st.Counts.Completed, errSt)
		}
	}
}

// taskManagerRow kills a TaskManager of each cluster (a replacement
// started first, so that there are slots to restart in): every job on it
// restarts with the same id, and run follows it as the same run.
func (m *matrix) taskManagerRow(t *testing.T) {
	m.ensureRun(t)
	k := m.mark()
	restarts := map[*matrixJob]int{}
	for _, j := range m.running() {
		restarts[j] = m.numRestarts(j)
	}
	for _, v := range []string{flinktest.Flink2, flinktest.Flink1} {
		c := m.clusters[v]
		c.AddTaskManager(t)
		c.KillTaskManager(t, "taskmanager-0")
		t.Logf("Flink %s: taskmanager-0 killed %s after the row started", v, time.Since(k.at).Round(100*time.Millisecond))
	}
	// The jobs that restarted: all of them, as a rule (their slots are
	// spread over the TaskManagers), within a minute.
	var hit []*matrixJob
	for deadline := time.Now().Add(time.Minute); len(hit) < len(restarts) && time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		for j, was := range restarts {
			if !slices.Contains(hit, j) && m.numRestarts(j) > was {
				hit = append(hit, j)
			}
		}
	}
	for j := range restarts {
		if !slices.Contains(hit, j) {
			t.Logf("%s did not restart: none of its tasks ran on the killed TaskManager", j)
		}
	}
	if len(hit) == 0 {
		t.Fatalf("no job restarted after the TaskManagers were killed")
	}
	back := time.Now()
	for _, j := range hit {
		j.Cluster().WaitRunning(t, j.ID, 2*time.Minute)
	}
	t.Logf("%d jobs restarted with their ids, all running %s after the kill", len(hit), time.Since(back).Round(100*time.Millisecond))
	running := time.Now()
	m.waitClosed(t, 2*time.Minute, running.Add(3*matrixWindow), hit...)
	m.assertLogClean(t, k)
	m.assertNotEnded(t, k, hit...)
	for _, j := range hit {
		t.Run(j.version+"/"+j.role, func(t *testing.T) {
			// Stores: the new attempts' statistics, under the same job id,
			// with busy times Flink's counters can give (they restart at
			// zero with the attempt).
			rows, err := m.conn.Query(context.Background(), "SELECT subtask_index, task_attempt_id, busy_ms_per_s FROM "+m.db+
				".subtask_stats WHERE job_id = ? AND task_name = ? AND window_start >= ?", j.ID, matrixTask, running.UnixMilli())
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			subs := map[int32]bool{}
			for rows.Next() {
				var sub int32
				var attempt string
				var busy float64
				if err := rows.Scan(&sub, &attempt, &busy); err != nil {
					t.Fatal(err)
				}
				subs[sub] = true
				if busy < 0 || busy > 1100 {
					t.Errorf("subtask %d (attempt %s) busy %.0f ms/s after the restart", sub, attempt, busy)
				}
			}
			if len(subs) != 4 {
				t.Errorf("statistics of %d subtasks of %s after the restart, want 4", len(subs), j)
			}
			// Serves: its incidents are not closed as ended, its plan is
			// still its own, and a salted job applies it again.
			incs, _ := m.incidents(j.ID)
			for _, in := range incs {
				if isEndResolution(in.Resolution) {
					t.Errorf("incident %s of %s closed %q: the job restarted in place", in.ID, j, in.Resolution)
				}
			}
			var p plans.Plan
			if !getJSON(m.api, planPath(j.ID), &p) {
				t.Errorf("no plan of %s served after its restart", j)
			}
			if j.role == "salted" {
				m.waitApplied(t, j, time.Minute)
			}
		})
	}
	m.assertRunning(t)
}

// numRestarts is the job's numRestarts metric (Flink's REST API), -1
// when it is not there.
func (m *matrix) numRestarts(j *matrixJob) int {
	var ms []struct {
		ID    string `json:"id"`
		Value string `json:"value"`
	}
	if err := j.Cluster().JSON(http.MethodGet, "/jobs/"+j.ID+"/metrics?get=numRestarts", nil, &ms); err != nil || len(ms) == 0 {
		return -1
	}
	n, err := strconv.Atoi(ms[0].Value)
	if err != nil {
		return -1
	}
	return n
}

// stopFlink1 cancels the 1.20.5 jobs and stops that cluster: the rows
// after the TaskManager row behave alike on both lines.
func (m *matrix) stopFlink1(t *testing.T) {
	c := m.clusters[flinktest.Flink1]
	for _, j := range m.running() {
		if j.version == flinktest.Flink1 {
			j.Stop()
		}
	}
	c.Stop()
	delete(m.clusters, flinktest.Flink1)
	t.Logf("Flink %s jobs cancelled and its cluster stopped", flinktest.Flink1)
}

// resubmitRow cancels the salted job and submits it again under the same
// name (a new job id): the plan is in force from its first record (no
// sample of the hot key from the subtask Flink routes it to unsalted),
// and run ends the first run as restarted by the second.
func (m *matrix) resubmitRow(t *testing.T) {
	m.ensureRun(t)
	first := m.job("salted", flinktest.Flink2)
	version := m.waitApplied(t, first, time.Minute)
	var p plans.Plan
	if !getJSON(m.plan, planPath(first.ID), &p) || len(p.HotKeys) == 0 {
		t.Fatalf("the plan server serves no plan of %s", first)
	}
	router, err := keygroup.NewRouter(4, 128)
	if err != nil {
		t.Fatal(err)
	}
	unsalted := router.Subtask(matrixHotKey)
	// Whether a sample's subtask tells salted from unsalted: not when a
	// salted key lands where the key goes unsalted.
	telling := !slices.ContainsFunc(p.HotKeys[0].Salted, func(s skew.SaltTarget) bool { return s.Subtask == unsalted })
	k := m.mark()
	c := first.Cluster()
	c.Cancel(t, first.ID)
	second := &matrixJob{role: first.role, version: first.version, name: first.name,
		ClusterJob: c.Start(m.top, first.JarID, first.Request)}
	m.jobs = append(m.jobs, second)
	t.Logf("%s cancelled; %s running %s later", first, second, time.Since(k.at).Round(100*time.Millisecond))

	// The plan from the first record: the salting operator applied it
	// (its log line) before the job's first key sample was taken, and,
	// when the subtasks tell, none of the hot key's first 100 samples
	// comes from the subtask Flink routes it to unsalted.
	waitUntil(t, time.Minute, "100 samples of the hot key from "+second.String(), func() bool {
		return m.samples.total(second.ID, matrixHotKey) >= 100
	}, m.runWatch(), jobWatch(second))
	firstSample := m.samples.first(second.ID)
	applied := regexp.MustCompile(`(?m)^(\d\d:\d\d:\d\d,\d\d\d) .*skewlens salting: applying plan v\d+ for task "` + matrixTask + `" of job ` + second.ID)
	// The earliest such line of any TaskManager.
	var appliedAt time.Time
	for _, match := range applied.FindAllStringSubmatch(m.tmLogSince(k), -1) {
		if at, ok := logTime(strings.Replace(match[1], ",", ".", 1), ""); ok && (appliedAt.IsZero() || at.Before(appliedAt)) {
			appliedAt = at
		}
	}
	switch {
	case appliedAt.IsZero():
		t.Errorf("the TaskManagers logged no plan applied for %s (its first sample at %s)", second, firstSample.Format("15:04:05.000"))
	case appliedAt.After(firstSample):
		t.Errorf("%s applied its plan at %s, after its first key sample at %s: records went unsalted first", second,
			appliedAt.Format("15:04:05.000"), firstSample.Format("15:04:05.000"))
	default:
		t.Logf("%s applied its plan at %s, before its first key sample at %s", second, appliedAt.Format("15:04:05.000"), firstSample.Format("15:04:05.000"))
	}
	if n := m.samples.on(second.ID, matrixHotKey, unsalted); telling && n > 0 {
		t.Errorf("%d samples of %s from subtask %d (unsalted) in %s's first %d: the plan was not in force from the first record",
			n, matrixHotKey, unsalted, second, m.samples.total(second.ID, matrixHotKey))
	}
	if v := m.appliedVersion(second); v < 1 {
		t.Errorf("%s's salting operator applies plan %d, want the lineage's (v%d)", second, v, version)
	}
	// Run ends the first run as restarted by the second.
	var end skew.Finding
	waitUntil(t, time.Minute, "the job_end of "+first.String(), func() bool {
		var ends struct{ Findings []skew.Finding }
		if !getJSON(m.api, "/v1/findings?kind=job_end&job_id="+url.QueryEscape(first.ID), &ends) || len(ends.Findings) == 0 {
			return false
		}
		end = ends.Findings[0]
		return true
	}, m.runWatch())
	if end.JobEnd == nil || end.JobEnd.Reason != skew.EndRestarted || end.JobEnd.Successor != second.ID {
		t.Errorf("job_end of %s: %+v, want restarted as %s", first, end.JobEnd, second.ID)
	}
	var stored uint64
	if err := m.conn.QueryRow(context.Background(), "SELECT count() FROM "+m.db+".findings WHERE kind = 'job_end' AND job_id = ?", first.ID).Scan(&stored); err != nil || stored == 0 {
		t.Errorf("no job_end finding of %s in ClickHouse (%v)", first, err)
	}
	incs, _ := m.incidents(first.ID)
	if open := openIncidents(incs, ""); len(open) > 0 {
		t.Errorf("incidents of %s still open: %v", first, open)
	}
	for _, id := range m.firing(first.ID, "") {
		t.Errorf("alert %s of %s still firing", id, first)
	}
	var p2 plans.Plan
	if !getJSON(m.api, planPath(second.ID), &p2) || len(p2.HotKeys) == 0 || p2.HotKeys[0].Key != matrixHotKey {
		t.Errorf("run serves no plan of %s for %s", matrixHotKey, second)
	}
	m.assertLogClean(t, k)
	m.assertRunning(t)
}

// outage takes a server down (stop), waits until its port is closed,
// keeps it down for matrixOutage from then, and brings it back (start).
// It returns when the port closed and when the server was back.
func outage(t *testing.T, addr string, stop, start func() error) (down, up time.Time) {
	t.Helper()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, addr+" closed", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	down = time.Now()
	time.Sleep(matrixOutage) // the outage itself: the one wall-clock wait
	if err := start(); err != nil {
		t.Fatal(err)
	}
	up = time.Now()
	t.Logf("%s down for %s (back %s after the port closed)", addr, matrixOutage, up.Sub(down).Round(100*time.Millisecond))
	return down, up
}

// brokerRow takes the broker down for 60 s: the reporters and samplers
// hold their lines and send them when it is back, so no window is lost;
// run waits for it and does not take the silence for the jobs' end.
func (m *matrix) brokerRow(t *testing.T) {
	m.ensureRun(t)
	jobs := m.running()
	k := m.mark()
	down, up := outage(t, m.broker.Addr, m.broker.Halt, m.broker.Resume)
	m.waitClosed(t, 3*time.Minute, up.Add(3*matrixWindow), jobs...)
	for _, j := range jobs {
		m.assertNoWindowLost(t, j, down.Add(-3*matrixWindow), up.Add(3*matrixWindow), true)
	}
	tm := m.tmLogSince(k)
	for _, re := range []*regexp.Regexp{regexp.MustCompile(`skewlens: dropped \d+ lines[^\n]*`), regexp.MustCompile(`[^\n]*\((\d+) lines lost so far[^\n]*`)} {
		for _, match := range re.FindAllStringSubmatch(tm, 5) {
			if len(match) < 2 || match[1] != "0" {
				t.Errorf("the reporter's queue did not hold: %s", match[0])
			}
		}
	}
	if late := m.lateSince(k); late > 0 {
		t.Errorf("run dropped %.0f records as late", late)
	}
	m.assertNotEnded(t, k, jobs...)
	m.assertLogClean(t, k)
	for _, j := range jobs {
		if !getJSON(m.api, planPath(j.ID), &plans.Plan{}) {
			t.Errorf("run serves no plan of %s after the outage", j)
		}
	}
	m.assertRunning(t)
}

// clickHouseRow takes ClickHouse down for 60 s: run pauses, retries,
// loses nothing, and says it recovered.
func (m *matrix) clickHouseRow(t *testing.T) {
	m.ensureRun(t)
	jobs := m.running()
	k := m.mark()
	down, up := outage(t, m.chp.Addr, m.chp.Halt, m.chp.Resume)
	m.waitClosed(t, 3*time.Minute, up.Add(3*matrixWindow), jobs...)
	for _, j := range jobs {
		m.assertNoWindowLost(t, j, down.Add(-3*matrixWindow), up.Add(3*matrixWindow), false)
	}
	if late := m.lateSince(k); late > 0 {
		t.Errorf("run dropped %.0f records as late", late)
	}
	recovered := regexp.MustCompile(`(?i)recovered`)
	var trace []string
	found := false
	for _, l := range m.runLogSince(k) {
		if l.Level != "INFO" || recovered.MatchString(l.Msg) {
			trace = append(trace, l.raw)
		}
		if recovered.MatchString(l.Msg) && !l.Time.Before(up.Add(-time.Second)) {
			found = true
		}
	}
	if !found {
		t.Errorf("run logged no \"recovered\" line after ClickHouse came back; its warnings and errors:\n%s", testenv.Tail(strings.Join(trace, "\n"), 20))
	}
	m.assertNotEnded(t, k, jobs...)
	m.assertLogClean(t, k)
	if !httpOK("http://" + m.plan + "/readyz") {
		t.Errorf("skewlens serve not ready again after ClickHouse came back")
	}
	for _, j := range jobs {
		if !getJSON(m.api, planPath(j.ID), &plans.Plan{}) {
			t.Errorf("run serves no plan of %s after the outage", j)
		}
	}
	m.assertRunning(t)
}

// planServerRow takes `skewlens serve` down for 60 s: the salted job
// keeps its plan in force all along (the salting operator's metric), and
// run does not notice.
func (m *matrix) planServerRow(t *testing.T) {
	m.ensureRun(t)
	j := m.job("salted", flinktest.Flink2)
	version := m.waitApplied(t, j, 2*time.Minute)
	k := m.mark()
	// The salting operator's plan, read every second through the outage
	// and 10 s after it.
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var off []string
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ctx.Err() == nil {
			if v := m.appliedVersion(j); v != int64(version) && v != -2 {
				mu.Lock()
				off = append(off, fmt.Sprintf("%s v%d", time.Now().Format(time.TimeOnly), v))
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
	s := m.serve
	_, up := outage(t, m.plan, func() error {
		if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			return err
		}
		<-s.done
		return nil
	}, func() error { m.startServe(t); return nil })
	// The job's polls answered by the plan server again (it polls every
	// 2 s): what the salting operator holds from then on is the new
	// server's word.
	route := `route="/v1/salting/{job_id}/{task_name}"`
	waitUntil(t, 30*time.Second, "the job's plan polled from the plan server again", func() bool {
		return metricSum(m.plan, "skewlens_serve_requests_total", route) >= 3
	}, jobWatch(j))
	t.Logf("the job polled the plan server again %s after it came back", time.Since(up).Round(100*time.Millisecond))
	cancel()
	<-watched
	if len(off) > 0 {
		t.Errorf("%s's plan left v%d while the plan server was down: %s", j, version, strings.Join(off, ", "))
	}
	if dropped := regexp.MustCompile(`skewlens salting: cannot reach [^\n]* is dropped[^\n]*`).FindString(m.tmLogSince(k)); dropped != "" {
		t.Errorf("the job dropped its plan: %s", dropped)
	}
	for _, a := range m.alertsSince(k) {
		if a.Labels["job_id"] == j.ID && a.Status == alert.StatusFiring && a.Labels["cause"] == "data_skew" {
			t.Errorf("a data_skew alert of %s fired while its plan should be in force: %s", j, a.ID)
		}
	}
	m.waitClosed(t, time.Minute, time.Now().Add(matrixWindow), m.running()...)
	m.assertNotEnded(t, k, m.running()...)
	if !getJSON(m.api, planPath(j.ID), &plans.Plan{}) {
		t.Errorf("run serves no plan of %s", j)
	}
	m.assertLogClean(t, k)
	m.assertRunning(t)
}

// lastJobRow cancels every job for good, so that nothing reports any
// more: within --job-end-after plus a window of wall time, each run ends
// (a job_end finding), its incidents close, its alerts resolve and its
// plan is retired from run's API and the plan server's.
func (m *matrix) lastJobRow(t *testing.T) {
	m.ensureRun(t)
	jobs := m.running()
	k := m.mark()
	for _, j := range jobs {
		j.Cluster().Cancel(t, j.ID)
	}
	cancelled := time.Now()
	bound := matrixJobEndAfter + matrixWindow
	t.Logf("%d jobs cancelled %s after the row started; the bound is %s", len(jobs), cancelled.Sub(k.at).Round(100*time.Millisecond), bound)
	// Each job's end, seen by one loop for all of them; what is still
	// missing of each end when the time is up.
	endedAt, missing := map[*matrixJob]time.Time{}, map[*matrixJob][]string{}
	ended := func(j *matrixJob) bool {
		var miss []string
		var ends struct{ Findings []skew.Finding }
		if !getJSON(m.api, "/v1/findings?kind=job_end&job_id="+url.QueryEscape(j.ID), &ends) || len(ends.Findings) == 0 {
			miss = append(miss, "no job_end finding")
		}
		if incs, ok := m.incidents(j.ID); !ok || len(openIncidents(incs, "")) > 0 {
			miss = append(miss, fmt.Sprintf("incidents open: %v", openIncidents(incs, "")))
		}
		if getJSON(m.api, planPath(j.ID), &plans.Plan{}) {
			miss = append(miss, "plan served by run")
		}
		if getJSON(m.plan, planPath(j.ID), &plans.Plan{}) {
			miss = append(miss, "plan served by the plan server")
		}
		if f := m.firing(j.ID, ""); len(f) > 0 {
			miss = append(miss, fmt.Sprintf("alerts firing: %v", f))
		}
		missing[j] = miss
		return len(miss) == 0
	}
	for deadline := cancelled.Add(bound + 90*time.Second); len(endedAt) < len(jobs) && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		for _, j := range jobs {
			if _, ok := endedAt[j]; !ok && ended(j) {
				endedAt[j] = time.Now()
			}
		}
	}
	for _, j := range jobs {
		t.Run(j.role, func(t *testing.T) {
			at, ok := endedAt[j]
			if !ok {
				t.Fatalf("%s not ended %s after the cancel (the bound is %s): %s", j, time.Since(cancelled).Round(time.Second), bound, strings.Join(missing[j], "; "))
			}
			took := at.Sub(cancelled)
			t.Logf("%s ended %s after the cancel: job_end stored, incidents closed, alerts resolved, plan retired", j, took.Round(100*time.Millisecond))
			if took > bound+time.Second {
				t.Errorf("%s ended %s after the cancel, beyond --job-end-after plus a window (%s)", j, took.Round(100*time.Millisecond), bound)
			}
			var ends struct{ Findings []skew.Finding }
			if getJSON(m.api, "/v1/findings?kind=job_end&job_id="+url.QueryEscape(j.ID), &ends) && len(ends.Findings) > 0 {
				if e := ends.Findings[0].JobEnd; e == nil || e.Reason != skew.EndStopped {
					t.Errorf("job_end of %s: %+v, want stopped", j, e)
				}
			}
			var n uint64
			if err := m.conn.QueryRow(context.Background(), "SELECT count() FROM "+m.db+".findings WHERE kind = 'job_end' AND job_id = ?", j.ID).Scan(&n); err != nil || n == 0 {
				t.Errorf("no job_end finding of %s in ClickHouse (%v)", j, err)
			}
		})
	}
	m.assertLogClean(t, k)
	m.assertRunning(t)
}

// sampleTap counts the key samples of one key per job and subtask, read
// from the samples topic as the jobs send them.
type sampleTap struct {
	mu     sync.Mutex
	counts map[string]map[string]map[int]int // job -> key -> subtask -> samples
	firstT map[string]int64                  // job -> its first sample's time (epoch ms)
}

func tapSamples(t *testing.T, brokers []string, topic string) *sampleTap {
	s := &sampleTap{counts: map[string]map[string]map[int]int{}, firstT: map[string]int64{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		// A group reads every partition (run created the topic).
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: topic, GroupID: "matrix-tap", StartOffset: kafka.FirstOffset, MaxWait: 200 * time.Millisecond})
		defer r.Close()
		for {
			msg, err := r.ReadMessage(ctx)
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(msg.Value), "\n") {
				var smp struct {
					TS      int64  `json:"ts"`
					JobID   string `json:"job_id"`
					Key     string `json:"key"`
					Subtask int    `json:"subtask_index"`
				}
				if json.Unmarshal([]byte(line), &smp) != nil {
					continue
				}
				s.mu.Lock()
				if f, ok := s.firstT[smp.JobID]; !ok || smp.TS < f {
					s.firstT[smp.JobID] = smp.TS
				}
				if smp.Key != matrixHotKey {
					s.mu.Unlock()
					continue
				}
				if s.counts[smp.JobID] == nil {
					s.counts[smp.JobID] = map[string]map[int]int{}
				}
				if s.counts[smp.JobID][smp.Key] == nil {
					s.counts[smp.JobID][smp.Key] = map[int]int{}
				}
				s.counts[smp.JobID][smp.Key][smp.Subtask]++
				s.mu.Unlock()
			}
		}
	}()
	return s
}

func (s *sampleTap) total(job, key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.counts[job][key] {
		n += c
	}
	return n
}

// first is the time of the job's first key sample.
func (s *sampleTap) first(job string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return time.UnixMilli(s.firstT[job])
}

func (s *sampleTap) on(job, key string, subtask int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[job][key][subtask]
}

// readingTap records in which windows each subtask of the keyed task of
// each job reported busy-time readings, read from the metrics topic as
// the reporters deliver them.
type readingTap struct {
	mu    sync.Mutex
	seen  map[string]map[int]map[int64]int // job -> subtask -> window start -> readings
	first map[string]map[int]int64         // job -> subtask -> its first reading (epoch ms)
	last  map[string]int64                 // job -> its latest reading (epoch ms)
}

func tapReadings(t *testing.T, brokers []string, topic string) *readingTap {
	r := &readingTap{seen: map[string]map[int]map[int64]int{}, first: map[string]map[int]int64{}, last: map[string]int64{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	w := matrixWindow.Milliseconds()
	go func() {
		defer close(done)
		readBusyCounters(ctx, brokers, topic, "matrix-readings", func(c busyCounter) {
			if c.task != matrixTask {
				return
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.seen[c.jobID] == nil {
				r.seen[c.jobID], r.first[c.jobID] = map[int]map[int64]int{}, map[int]int64{}
			}
			if r.seen[c.jobID][c.subtask] == nil {
				r.seen[c.jobID][c.subtask] = map[int64]int{}
				r.first[c.jobID][c.subtask] = c.ts
			}
			r.seen[c.jobID][c.subtask][c.ts/w*w]++
			r.first[c.jobID][c.subtask] = min(r.first[c.jobID][c.subtask], c.ts)
			r.last[c.jobID] = max(r.last[c.jobID], c.ts)
		})
	}()
	return r
}

// has reports whether the subtask's readings let run compute its busy
// time in the window: one in it and one before (in it or earlier), the
// counter's difference (skew's doc, "Busy time").
func (r *readingTap) has(job string, subtask int, windowStart int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.seen[job][subtask][windowStart]
	return n >= 2 || n == 1 && r.first[job][subtask] < windowStart
}

// latest is the time of the job's latest reading read so far.
func (r *readingTap) latest(job string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[job]
}
