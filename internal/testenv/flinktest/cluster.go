package flinktest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv"
)

// Flink versions the cluster runs: the one the module builds against,
// and the LTS line.
const (
	Flink2 = "2.3.0"
	Flink1 = "1.20.5"
)

// ClusterConfig says what cluster StartCluster starts. Zero fields take
// the defaults given.
type ClusterConfig struct {
	// Version is the Flink version (Flink2, the default, or Flink1).
	Version string
	// TaskManagers is the number of TaskManager JVMs (default 1), Slots
	// their task slots each (default 4).
	TaskManagers, Slots int
	// Plugins maps a directory name under plugins/ to the jar put in it,
	// as an operator installs a plugin.
	Plugins map[string]string
	// Config holds more config.yaml entries (reporters, for one).
	Config map[string]string
}

// Cluster is a running standalone Flink session cluster: a JobManager
// (StandaloneSessionClusterEntrypoint) and TaskManagers
// (TaskManagerRunner), each a JVM of its own, started from Maven
// Central's jars with a conf/ and a plugins/ directory, as a cluster
// without a Flink distribution runs. Its processes stop when the test
// ends, and die with the test process.
type Cluster struct {
	// REST is the base URL of the JobManager's REST API.
	REST string
	// Dir holds conf/, plugins/, tmp/ and each process's log.
	Dir string

	// cp, conf and plugins are what each process starts with (startProcess).
	cp, conf, plugins string
	mu                sync.Mutex // guards procs and logs
	procs             []*exec.Cmd
	logs              []string
	tms               int // TaskManagers started, killed ones included
	stop              sync.Once
}

// The memory of a TaskManager, set explicitly: without the start-up
// scripts (BashJavaUtils), TaskManagerRunner requires every component.
// 320 MB heap, 192 MB direct and 256 MB metaspace; the JVM flags match.
var tmMemory = map[string]string{
	"taskmanager.cpu.cores":                      "2.0",
	"taskmanager.memory.framework.heap.size":     "128m",
	"taskmanager.memory.task.heap.size":          "192m",
	"taskmanager.memory.framework.off-heap.size": "128m",
	"taskmanager.memory.task.off-heap.size":      "0m",
	"taskmanager.memory.network.min":             "64m",
	"taskmanager.memory.network.max":             "64m",
	"taskmanager.memory.managed.size":            "64m",
	"taskmanager.memory.jvm-metaspace.size":      "256m",
	"taskmanager.memory.jvm-overhead.min":        "192m",
	"taskmanager.memory.jvm-overhead.max":        "192m",
}

var tmJVM = []string{"-Xmx320m", "-Xms320m", "-XX:MaxDirectMemorySize=192m", "-XX:MaxMetaspaceSize=256m", "-XX:+UseSerialGC"}

// javaOpens are the module openings Flink's own scripts pass on Java 17.
var javaOpens = []string{
	"--add-opens=java.base/java.lang=ALL-UNNAMED", "--add-opens=java.base/java.net=ALL-UNNAMED",
	"--add-opens=java.base/java.io=ALL-UNNAMED", "--add-opens=java.base/java.nio=ALL-UNNAMED",
	"--add-opens=java.base/sun.nio.ch=ALL-UNNAMED", "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens=java.base/java.text=ALL-UNNAMED", "--add-opens=java.base/java.time=ALL-UNNAMED",
	"--add-opens=java.base/java.util=ALL-UNNAMED", "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED", "--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED",
}

const log4jConfig = `rootLogger.level = INFO
rootLogger.appenderRef.console.ref = Console
appender.console.name = Console
appender.console.type = CONSOLE
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss,SSS} %-5p %c{1} - %m%n
`

// StartCluster starts a cluster and waits (at most three minutes) until
// its TaskManagers have registered. It fails t on any error, with the
// tail of the processes' logs.
func StartCluster(t testing.TB, cfg ClusterConfig) *Cluster {
	t.Helper()
	testenv.SkipShort(t, "a Flink cluster")
	cfg.Version = cmp.Or(cfg.Version, Flink2)
	cfg.TaskManagers = max(cfg.TaskManagers, 1)
	if cfg.Slots <= 0 {
		cfg.Slots = 4
	}
	cp := clusterClasspath(t, cfg.Version)
	c := &Cluster{Dir: t.TempDir()}
	t.Cleanup(c.Stop)
	conf, plugins, tmp := filepath.Join(c.Dir, "conf"), filepath.Join(c.Dir, "plugins"), filepath.Join(c.Dir, "tmp")
	for _, d := range []string{conf, plugins, tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, jar := range cfg.Plugins {
		if err := os.MkdirAll(filepath.Join(plugins, name), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(jar)
		if err != nil {
			t.Fatalf("flinktest: plugin %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(plugins, name, filepath.Base(jar)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rpcPort, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	restPort, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{
		"jobmanager.rpc.address":        "127.0.0.1",
		"jobmanager.rpc.port":           strconv.Itoa(rpcPort),
		"jobmanager.bind-host":          "127.0.0.1",
		"rest.address":                  "127.0.0.1",
		"rest.bind-address":             "127.0.0.1",
		"rest.port":                     strconv.Itoa(restPort),
		"taskmanager.host":              "127.0.0.1",
		"taskmanager.bind-host":         "127.0.0.1",
		"taskmanager.numberOfTaskSlots": strconv.Itoa(cfg.Slots),
		"io.tmp.dirs":                   tmp,
		"web.tmpdir":                    filepath.Join(c.Dir, "web"),
		"heartbeat.timeout":             "20000",
	}
	maps.Copy(settings, tmMemory)
	maps.Copy(settings, cfg.Config)
	var yaml strings.Builder
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		fmt.Fprintf(&yaml, "%s: %s\n", k, settings[k])
	}
	// config.yaml, flat: Flink 2 reads only it, and 1.20 reads it when
	// there is no flink-conf.yaml.
	if err := os.WriteFile(filepath.Join(conf, "config.yaml"), []byte(yaml.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(conf, "log4j.properties"), []byte(log4jConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	c.REST = "http://127.0.0.1:" + strconv.Itoa(restPort)
	c.cp, c.conf, c.plugins = cp, conf, plugins
	c.startProcess(t, "jobmanager", "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint", []string{"-Xmx512m", "-XX:+UseSerialGC"})
	for range cfg.TaskManagers {
		c.startTaskManager(t)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var o struct {
			TaskManagers int    `json:"taskmanagers"`
			Version      string `json:"flink-version"`
		}
		if err := c.get("/overview", &o); err == nil && o.TaskManagers >= cfg.TaskManagers {
			if o.Version != cfg.Version {
				t.Fatalf("flinktest: the cluster runs Flink %s, want %s", o.Version, cfg.Version)
			}
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("flinktest: Flink %s cluster not up after 3 minutes:\n%s", cfg.Version, c.LogTail(40))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// startProcess starts one of the cluster's JVMs, logging to name.log.
func (c *Cluster) startProcess(t testing.TB, name, main string, jvm []string) {
	t.Helper()
	logPath := filepath.Join(c.Dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	args := append(slices.Clone(jvm), javaOpens...)
	args = append(args, "-Dlog4j.configurationFile=file:"+filepath.Join(c.conf, "log4j.properties"), "-cp", c.cp, main, "-c", c.conf)
	cmd := exec.Command("java", args...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), "FLINK_PLUGINS_DIR="+c.plugins, "FLINK_CONF_DIR="+c.conf)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("flinktest: start %s: %v", name, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.procs = append(c.procs, cmd)
	c.logs = append(c.logs, logPath)
}

// startTaskManager starts the next TaskManager, taskmanager-N.
func (c *Cluster) startTaskManager(t testing.TB) string {
	t.Helper()
	c.mu.Lock()
	name := "taskmanager-" + strconv.Itoa(c.tms)
	c.tms++
	c.mu.Unlock()
	c.startProcess(t, name, "org.apache.flink.runtime.taskexecutor.TaskManagerRunner", tmJVM)
	return name
}

// AddTaskManager starts one more TaskManager and waits (at most two
// minutes) until it has registered with the JobManager; it returns its
// name ("taskmanager-N", for Log and KillTaskManager).
func (c *Cluster) AddTaskManager(t testing.TB) string {
	t.Helper()
	want := c.liveTaskManagers() + 1
	name := c.startTaskManager(t)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var o struct {
			TaskManagers int `json:"taskmanagers"`
		}
		if err := c.get("/overview", &o); err == nil && o.TaskManagers >= want {
			return name
		}
		if time.Now().After(deadline) {
			t.Fatalf("flinktest: %s not registered after 2 minutes:\n%s", name, c.LogTail(30))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// liveTaskManagers counts the TaskManager processes that have not exited.
func (c *Cluster) liveTaskManagers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for i, p := range c.procs {
		if strings.HasPrefix(filepath.Base(c.logs[i]), "taskmanager-") && p.ProcessState == nil {
			n++
		}
	}
	return n
}

// KillTaskManager sends SIGKILL to the TaskManager named name
// ("taskmanager-0"), as a crashed host would, and waits until the process
// has gone. The JobManager learns of it from the tasks that fail and,
// for its slots, from the missed heartbeats (heartbeat.timeout).
func (c *Cluster) KillTaskManager(t testing.TB, name string) {
	t.Helper()
	c.mu.Lock()
	var p *exec.Cmd
	for i, l := range c.logs {
		if filepath.Base(l) == name+".log" {
			p = c.procs[i]
		}
	}
	c.mu.Unlock()
	if p == nil || p.ProcessState != nil {
		t.Fatalf("flinktest: no running TaskManager %s", name)
	}
	if err := p.Process.Kill(); err != nil {
		t.Fatalf("flinktest: kill %s: %v", name, err)
	}
	_ = p.Wait() // "signal: killed"
}

// Stop stops the processes, the TaskManagers first (SIGTERM, SIGKILL
// after 20 s). It is safe to call twice.
func (c *Cluster) Stop() {
	c.stop.Do(func() {
		c.mu.Lock()
		procs := slices.Clone(c.procs)
		c.mu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			p := procs[i]
			_ = p.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = p.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = p.Process.Kill()
				<-done
			}
		}
	})
}

// LogTail returns the last n lines of each process's log.
func (c *Cluster) LogTail(n int) string {
	var b strings.Builder
	for _, l := range c.logPaths() {
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(l), testenv.FileTail(l, n))
	}
	return b.String()
}

// logPaths returns the processes' log files, the JobManager's first.
func (c *Cluster) logPaths() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.logs)
}

// Log returns the whole log of a process ("jobmanager", "taskmanager-0").
func (c *Cluster) Log(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, name+".log"))
	return string(b)
}

// Submit uploads a job jar (REST /jars/upload) and runs its entry class
// with args (/jars/:id/run), as an operator submits a job to a session
// cluster, and returns the job id.
func (c *Cluster) Submit(t testing.TB, jar, entryClass string, args ...string) string {
	t.Helper()
	return c.RunJar(t, c.Upload(t, jar), RunRequest{EntryClass: entryClass, ProgramArgsList: args})
}

// RunRequest is the body of POST /jars/:jarid/run, as both Flink lines
// take it (2.x has no string programArgs). Empty fields are left out.
type RunRequest struct {
	EntryClass      string   `json:"entryClass,omitempty"`
	ProgramArgsList []string `json:"programArgsList,omitempty"`
	// SavepointPath resumes the job from a savepoint (or a retained
	// checkpoint), as `flink run -s` does.
	SavepointPath string `json:"savepointPath,omitempty"`
	// FlinkConfiguration is added to the job's configuration, as `flink
	// run -D` does (e.g. pipeline.jobvertex-parallelism-overrides).
	FlinkConfiguration map[string]string `json:"flinkConfiguration,omitempty"`
}

// Upload uploads a job jar (REST /jars/upload) and returns its jar id,
// for RunJar.
func (c *Cluster) Upload(t testing.TB, jar string) string {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("jarfile", filepath.Base(jar))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(jar)
	if err != nil {
		t.Fatalf("flinktest: job jar: %v", err)
	}
	if _, err := fw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	var up struct {
		Filename string `json:"filename"`
		Status   string `json:"status"`
	}
	if err := c.do(http.MethodPost, "/jars/upload", mw.FormDataContentType(), &body, &up); err != nil || up.Status != "success" {
		t.Fatalf("flinktest: upload %s: %v (%+v)", jar, err, up)
	}
	return filepath.Base(up.Filename)
}

// RunJar runs an uploaded jar (POST /jars/:jarid/run) and returns the
// job id.
func (c *Cluster) RunJar(t testing.TB, jarID string, req RunRequest) string {
	t.Helper()
	var out struct {
		JobID string `json:"jobid"`
	}
	if err := c.JSON(http.MethodPost, "/jars/"+url.PathEscape(jarID)+"/run", req, &out); err != nil || out.JobID == "" {
		t.Fatalf("flinktest: run %s: %v\n%s", req.EntryClass, err, c.LogTail(30))
	}
	return out.JobID
}

// JSON sends one REST request with in as its JSON body (nil: none) and
// decodes a 2xx answer into out (nil: dropped); any other status is an
// error with the answer's tail.
func (c *Cluster) JSON(method, path string, in, out any) error {
	if in == nil {
		return c.do(method, path, "", nil, out)
	}
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return c.do(method, path, "application/json", bytes.NewReader(b), out)
}

// Vertex is one job vertex as GET /jobs/:jobid shows it.
type Vertex struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Parallelism int    `json:"parallelism"`
	Status      string `json:"status"`
}

// Vertices returns the job's vertices (GET /jobs/:jobid).
func (c *Cluster) Vertices(jobID string) ([]Vertex, error) {
	var j struct {
		Vertices []Vertex `json:"vertices"`
	}
	if err := c.get("/jobs/"+jobID, &j); err != nil {
		return nil, err
	}
	return j.Vertices, nil
}

// WaitRunning waits (at most timeout) until every task of the job runs.
func (c *Cluster) WaitRunning(t testing.TB, jobID string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var j struct {
			State    string `json:"state"`
			Vertices []struct {
				Status string `json:"status"`
			} `json:"vertices"`
		}
		err := c.get("/jobs/"+jobID, &j)
		if err == nil && j.State == "RUNNING" && len(j.Vertices) > 0 &&
			!slices.ContainsFunc(j.Vertices, func(v struct {
				Status string `json:"status"`
			}) bool {
				return v.Status != "RUNNING"
			}) {
			return
		}
		if err == nil && (j.State == "FAILED" || j.State == "CANCELED" || j.State == "FINISHED") {
			t.Fatalf("flinktest: job %s is %s:\n%s", jobID, j.State, c.LogTail(40))
		}
		if time.Now().After(deadline) {
			t.Fatalf("flinktest: job %s not running after %s (%v, state %q):\n%s", jobID, timeout, err, j.State, c.LogTail(40))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// Cancel cancels a job and waits (at most a minute) until it is.
func (c *Cluster) Cancel(t testing.TB, jobID string) {
	t.Helper()
	if err := c.do(http.MethodPatch, "/jobs/"+jobID+"?mode=cancel", "", nil, nil); err != nil {
		t.Fatalf("flinktest: cancel %s: %v", jobID, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var j struct {
			State string `json:"state"`
		}
		if err := c.get("/jobs/"+jobID, &j); err == nil && j.State == "CANCELED" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("flinktest: job %s not cancelled after a minute", jobID)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (c *Cluster) get(path string, out any) error {
	return c.do(http.MethodGet, path, "", nil, out)
}

// do sends one REST request and decodes a 2xx answer into out (nil: the
// body is dropped).
func (c *Cluster) do(method, path, contentType string, body io.Reader, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.REST+path, body)
	if err != nil {
		return err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, testenv.Tail(string(b), 20))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// clusterClasspath resolves the cluster's jars (deploy/flink/cluster's
// pom, at version) once per version and test process.
func clusterClasspath(t testing.TB, version string) string {
	t.Helper()
	cpOnce.mu.Lock()
	defer cpOnce.mu.Unlock()
	if cp, ok := cpOnce.cps[version]; ok {
		return cp
	}
	dir := filepath.Join(testenv.DeployDir("flink"), "cluster")
	out := "target/classpath-" + version + ".txt"
	if b, err := underBuildLock(dir, `mvn -B -q dependency:build-classpath -Dflink.version="$1" -Dmdep.outputFile="$2"`, version, out); err != nil {
		t.Fatalf("flinktest: resolve the Flink %s cluster's jars: %v\n%s", version, err, testenv.Tail(string(b), 30))
	}
	b, err := os.ReadFile(filepath.Join(dir, out))
	if err != nil {
		t.Fatal(err)
	}
	cp := strings.TrimSpace(string(b))
	if cpOnce.cps == nil {
		cpOnce.cps = map[string]string{}
	}
	cpOnce.cps[version] = cp
	return cp
}

var cpOnce struct {
	mu  sync.Mutex
	cps map[string]string
}

// HotKeyJob is the entry class of the example job jar (Jars).
const HotKeyJob = "io.github.skewlens.example.HotKeyJob"

// Jars builds (once per test process) the reporter plugin jar and the
// example job jar as a user would: `mvn install` of deploy/flink (the
// thin jar and target/skewlens-flink-VERSION-plugin.jar), then `mvn
// package` of deploy/flink/example (its shaded job jar). It returns copies
// in t's temporary directory, taken under the module's build lock: another
// test process may package the module again meanwhile, which rewrites
// the jars in target/.
func Jars(t testing.TB) (plugin, job string) {
	t.Helper()
	testenv.SkipShort(t, "Java and Maven to build the jars")
	dir, err := ModuleDir()
	if err != nil {
		t.Fatalf("flinktest: %v", err)
	}
	jars.once.Do(func() {
		if b, err := underBuildLock(dir, "mvn -B -q -DskipTests install\ncd example\nmvn -B -q package"); err != nil {
			jars.err = fmt.Errorf("build the jars: %w\n%s", err, testenv.Tail(string(b), 40))
		}
	})
	if jars.err != nil {
		t.Fatalf("flinktest: %v", jars.err)
	}
	out := t.TempDir()
	if b, err := underBuildLock(dir, `cp target/skewlens-flink-0.1.0-plugin.jar example/target/skewlens-example-job-0.1.0.jar "$1"/`, out); err != nil {
		t.Fatalf("flinktest: copy the jars: %v\n%s", err, b)
	}
	return filepath.Join(out, "skewlens-flink-0.1.0-plugin.jar"), filepath.Join(out, "skewlens-example-job-0.1.0.jar")
}

var jars struct {
	once sync.Once
	err  error
}

// ClusterJob is a job running on a Cluster.
type ClusterJob struct {
	// ID is the Flink job id; Started is when all its tasks ran.
	ID      string
	Started time.Time
	// JarID is the uploaded jar it runs, Request how it was run: what an
	// operator resubmits it with.
	JarID   string
	Request RunRequest

	c    *Cluster
	done chan struct{}
	stop sync.Once
}

// Run uploads a job jar and runs it (Start).
func (c *Cluster) Run(t testing.TB, jar, entryClass string, args ...string) *ClusterJob {
	t.Helper()
	return c.Start(t, c.Upload(t, jar), RunRequest{EntryClass: entryClass, ProgramArgsList: args})
}

// Start runs an uploaded jar (RunJar), waits until all its tasks run (at
// most two minutes) and returns the job; it is cancelled when the test
// ends. Done is closed once the job has ended (FINISHED, CANCELED,
// FAILED, SUSPENDED), or has not been RUNNING for restartGrace (a job
// failing over and over), or the REST API stopped answering. A rescale
// in place (the adaptive scheduler restarts the job's tasks) is not an
// end.
func (c *Cluster) Start(t testing.TB, jarID string, req RunRequest) *ClusterJob {
	t.Helper()
	j := &ClusterJob{ID: c.RunJar(t, jarID, req), JarID: jarID, Request: req, c: c, done: make(chan struct{})}
	c.WaitRunning(t, j.ID, 2*time.Minute)
	j.Started = time.Now()
	go func() {
		defer close(j.done)
		running, failures := time.Now(), 0
		for {
			time.Sleep(time.Second)
			var s struct {
				State string `json:"state"`
			}
			if err := c.get("/jobs/"+j.ID, &s); err != nil {
				if failures++; failures >= 5 {
					return
				}
				continue
			}
			failures = 0
			switch s.State {
			case "RUNNING":
				running = time.Now()
			case "FINISHED", "CANCELED", "FAILED", "SUSPENDED":
				return
			default:
				if time.Since(running) > restartGrace {
					return
				}
			}
		}
	}()
	t.Cleanup(j.Stop)
	return j
}

// restartGrace is how long a job may be out of RUNNING (restarting,
// rescaling) before ClusterJob.Done calls it ended.
const restartGrace = 90 * time.Second

// StopWithSavepoint stops the job with a savepoint in dir (POST
// /jobs/:jobid/stop, drain false: the job is suspended, not drained),
// polls the savepoint (GET /jobs/:jobid/savepoints/:triggerid) until it
// completes (at most two minutes), waits for the job's end (at most a
// minute), and returns the savepoint's path.
func (j *ClusterJob) StopWithSavepoint(t testing.TB, dir string) string {
	t.Helper()
	var trig struct {
		RequestID string `json:"request-id"`
	}
	if err := j.c.JSON(http.MethodPost, "/jobs/"+j.ID+"/stop", map[string]any{"targetDirectory": dir, "drain": false}, &trig); err != nil || trig.RequestID == "" {
		t.Fatalf("flinktest: stop %s with a savepoint: %v", j.ID, err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	var location string
	for location == "" {
		var st struct {
			Status struct {
				ID string `json:"id"`
			} `json:"status"`
			Operation struct {
				Location     string          `json:"location"`
				FailureCause json.RawMessage `json:"failure-cause"`
			} `json:"operation"`
		}
		err := j.c.get("/jobs/"+j.ID+"/savepoints/"+trig.RequestID, &st)
		switch {
		case err == nil && st.Status.ID == "COMPLETED" && st.Operation.Location != "":
			location = st.Operation.Location
		case err == nil && st.Status.ID == "COMPLETED":
			t.Fatalf("flinktest: savepoint of %s failed: %s\n%s", j.ID, st.Operation.FailureCause, j.c.LogTail(30))
		case time.Now().After(deadline):
			t.Fatalf("flinktest: savepoint of %s not complete after 2 minutes (%v, %s):\n%s", j.ID, err, st.Status.ID, j.c.LogTail(30))
		default:
			time.Sleep(300 * time.Millisecond)
		}
	}
	select {
	case <-j.done:
	case <-time.After(time.Minute):
		t.Fatalf("flinktest: job %s still runs a minute after its savepoint", j.ID)
	}
	return location
}

// JobID returns the Flink job id.
func (j *ClusterJob) JobID() string { return j.ID }

// StartedAt returns when all the job's tasks ran.
func (j *ClusterJob) StartedAt() time.Time { return j.Started }

// Done is closed once the job has left RUNNING (or the cluster is gone).
func (j *ClusterJob) Done() <-chan struct{} { return j.done }

// Output returns the logs of the cluster's processes, where the job's
// code logs: the JobManager's, then each TaskManager's.
func (j *ClusterJob) Output() string {
	var b strings.Builder
	for _, l := range j.c.logPaths() {
		s, _ := os.ReadFile(l)
		b.Write(s)
	}
	return b.String()
}

// Tail returns the last n lines of each process's log.
func (j *ClusterJob) Tail(n int) string { return j.c.LogTail(n) }

// Stop cancels the job if it still runs, and waits for its end. It is
// safe to call twice.
func (j *ClusterJob) Stop() {
	j.stop.Do(func() {
		select {
		case <-j.done:
			return
		default:
		}
		_ = j.c.do(http.MethodPatch, "/jobs/"+j.ID+"?mode=cancel", "", nil, nil)
		select {
		case <-j.done:
		case <-time.After(time.Minute):
		}
	})
}

// RunLocal runs a job jar's entry class from main(), as a developer
// runs a job in local mode (Flink starts a MiniCluster in the JVM): the
// job jar and Flink's jars of version on the classpath, nothing in
// plugins/. The process is killed when the test ends; it returns the
// process, whose output is in the returned log file.
func RunLocal(t testing.TB, version, jar, entryClass string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	testenv.SkipShort(t, "a Flink job")
	cp := jar + string(os.PathListSeparator) + clusterClasspath(t, cmp.Or(version, Flink2))
	logPath := filepath.Join(t.TempDir(), "local.log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	jvm := append([]string{"-Xmx768m", "-XX:+UseSerialGC"}, javaOpens...)
	cmd := exec.Command("java", append(append(jvm, "-cp", cp, entryClass), args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("flinktest: start %s: %v", entryClass, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	return cmd, logPath
}

// VertexMetric returns the value of the job's metric whose id ends with
// suffix, in the first vertex whose name contains vertex, as Flink's REST
// API shows it (/jobs/:id/vertices/:vid/metrics: ids are
// "<subtask>.<operator>.<name>"); ok is false while there is none.
func (c *Cluster) VertexMetric(jobID, vertex, suffix string) (value string, ok bool) {
	var job struct {
		Vertices []struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"vertices"`
	}
	if err := c.get("/jobs/"+jobID, &job); err != nil {
		return "", false
	}
	for _, v := range job.Vertices {
		if !strings.Contains(v.Name, vertex) {
			continue
		}
		var ids []struct {
			ID string `json:"id"`
		}
		path := "/jobs/" + jobID + "/vertices/" + v.ID + "/metrics"
		if err := c.get(path, &ids); err != nil {
			return "", false
		}
		for _, m := range ids {
			if !strings.HasSuffix(m.ID, suffix) {
				continue
			}
			var vals []struct {
				ID    string `json:"id"`
				Value string `json:"value"`
			}
			if err := c.get(path+"?get="+url.QueryEscape(m.ID), &vals); err != nil || len(vals) == 0 {
				return "", false
			}
			return vals[0].Value, true
		}
		return "", false
	}
	return "", false
}

// Cluster returns the cluster the job runs on.
func (j *ClusterJob) Cluster() *Cluster { return j.c }
