package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/internal/testenv/flinktest"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/alert"
	"github.com/skewlens/skewlens/skew/incident"
	"github.com/skewlens/skewlens/skew/plans"
)

// The job matrix's environment (TestJobMatrix): the servers, skewlens
// and the Flink clusters the rows share, and what the rows read and
// assert with. The clusters and their broker are the package's shared
// ones (flinkEnv), which the loops before the matrix used too.

// matrix is the environment the rows share.
type matrix struct {
	top     *testing.T
	env     *flinkEnv
	broker  *testenv.Process // the shared clusters' broker
	chp     *testenv.Process
	brokers []string
	chAddr  string
	conn    ch.Conn
	prefix  string
	db      string
	group   string
	// metrics is the shared clusters' topic, metricsFrom where it ended
	// when the matrix started: each group of run starts there.
	metrics     string
	metricsFrom map[int]int64
	runArgs     []string
	listen      string // run's /metrics, /healthz, /readyz
	api         string // run's API
	plan        string // serve's API: the plan server
	hook        *webhookRecorder
	samples     *sampleTap
	readings    *readingTap

	mu      sync.Mutex // guards run, runLogs, serve
	run     *runProc
	runLogs []string // every run's log file, in order
	serve   *runProc

	clusters map[string]*envCluster // by version
	jobs     []*matrixJob
}

// matrixJob is one job of the matrix.
type matrixJob struct {
	role    string // nocp, precp, salted
	version string
	name    string // the Flink job name
	*flinktest.Job
}

func (j *matrixJob) String() string {
	return fmt.Sprintf("%s on %s (%s)", j.role, j.version, skew.ShortID(j.ID))
}

// startMatrix takes the shared clusters, starts the servers and
// skewlens; setup starts the jobs.
func startMatrix(t *testing.T) *matrix {
	m := &matrix{top: t, prefix: "matrix", db: "matrix", group: "matrix", hook: &webhookRecorder{},
		clusters: map[string]*envCluster{}}
	m.env = flinkEnvGet(t)
	for _, v := range []string{flinktest.Flink2, flinktest.Flink1} {
		m.clusters[v] = m.env.cluster(t, v)
	}
	// The matrix takes the broker down (brokerRow): the one the
	// clusters' reporters send to.
	m.broker, m.brokers, m.metrics = m.env.broker, m.env.brokers, m.env.topic
	m.metricsFrom = topicEnd(t, m.brokers, m.metrics)
	m.chp = chtest.StartPrivate(t)
	m.chAddr = m.chp.Addr
	hook := httptest.NewServer(m.hook)
	t.Cleanup(hook.Close)
	var err error
	if m.conn, err = ch.Open(&ch.Options{Addr: []string{m.chAddr}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.conn.Close() })
	m.listen, m.api, m.plan = freeAddr(t), freeAddr(t), freeAddr(t)
	m.runArgs = []string{"--create-topics", "--brokers", m.brokers[0], "--clickhouse-addr", m.chAddr,
		"--database", m.db, "--topics", m.metrics + "," + m.prefix + "-samples",
		"--dead-letter-topic", m.prefix + "-dead", "--plans-topic", m.prefix + "-plans",
		"--listen", m.listen, "--api-listen", m.api, "--quiet", "--log-format", "json",
		"--alert-webhook-url", hook.URL, "--alert-for", "10s",
		"--job-end-after", matrixJobEndAfter.String(), "--window", matrixWindow.String()}
	m.startRun(t)
	m.startServe(t)
	m.samples = tapSamples(t, m.brokers, m.prefix+"-samples")
	startGroupAt(t, m.brokers, "matrix-readings", m.metrics, m.metricsFrom)
	m.readings = tapReadings(t, m.brokers, m.metrics)
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
	// A new group starts where the shared topic was when the matrix
	// started; a group that read it goes on from its own offsets.
	startGroupAt(t, m.brokers, m.group, m.metrics, m.metricsFrom)
	args := append([]string{"run", "--group", m.group}, m.runArgs...)
	r := startChild(m.top, "run", args...)
	r.listen = m.listen
	m.mu.Lock()
	m.run = r
	m.runLogs = append(m.runLogs, r.log.Name())
	m.mu.Unlock()
	// Ready, or exited: the caller's next wait on it says why.
	testenv.Eventually(t, 90*time.Second, "skewlens run ready", func() bool {
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
	testenv.Eventually(t, time.Minute, "skewlens serve ready", func() bool { return httpOK("http://" + m.plan + "/readyz") },
		testenv.End{Done: s.done, Why: func() string { return "skewlens serve exited:\n" + s.logTail() }})
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
	if !exited(r.done) {
		return
	}
	m.group += "-again"
	t.Logf("skewlens run is not running (%s); starting it afresh in group %s", exitReason(r), m.group)
	started := time.Now()
	m.startRun(t)
	// Caught up: the new group reads the samples topic from its start,
	// the metrics topic from where it was when the matrix started.
	if why := m.closedOrExit(t, 3*time.Minute, started, m.running()...); why != "" {
		t.Fatalf("skewlens run, started afresh, exited too: %s", why)
	}
	t.Logf("skewlens run caught up %s after its start", time.Since(started).Round(100*time.Millisecond))
}

// runWatch fails a wait when the current `skewlens run` exits.
func (m *matrix) runWatch() testenv.End {
	return runEnd(m.currentRun())
}

// jobWatch fails a wait when the job ends.
func jobWatch(j *matrixJob) testenv.End {
	return testenv.End{Done: j.Done(), Why: func() string { return fmt.Sprintf("job %s ended:\n%s", j, j.Tail(40)) }}
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
	c := m.clusters[version]
	cj := c.Start(m.top, c.jarID, flinktest.RunRequest{EntryClass: flinktest.HotKeyJob, ProgramArgsList: args})
	j := &matrixJob{role: role, version: version, name: name, Job: cj}
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
		testenv.Eventually(t, 3*time.Minute, "a data_skew alert of "+j.String(), func() bool { return len(m.firing(j.ID, "data_skew")) > 0 },
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
	testenv.Eventually(t, timeout, "a plan of "+j.String()+" applied", func() bool {
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
	exited := false
	open := slices.Clone(jobs) // the jobs whose windows up to until are not all stored yet
	testenv.Eventually(t, timeout, fmt.Sprintf("run storing the windows of %v up to %s", jobs, until.Format(time.TimeOnly)), func() bool {
		select {
		case <-r.done:
			exited = true
			return true
		default:
		}
		open = slices.DeleteFunc(open, func(j *matrixJob) bool { return m.closedUpTo(ctx, j.ID) >= until.UnixMilli() })
		return len(open) == 0
	})
	if exited {
		return exitReason(r)
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
	testenv.Eventually(t, 30*time.Second, "the metrics topic read up to "+time.UnixMilli(hi).Format(time.TimeOnly), func() bool { return m.readings.latest(j.ID) >= hi })
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
				// With the readings around it, to tell a reading run
				// could not difference from one it dropped.
				lost = append(lost, at+" ("+m.readings.around(j.ID, sub, ws)+")")
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
