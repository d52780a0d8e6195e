package flinktest

import (
	"cmp"
	"fmt"
	"maps"
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
