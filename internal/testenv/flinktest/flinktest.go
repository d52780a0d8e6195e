package flinktest

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv"
)

// build is the module build of this test process.
var build struct {
	once sync.Once
	cp   string
	err  error
}

// ModuleDir returns the directory of the deploy/flink Maven module.
func ModuleDir() (string, error) {
	d := testenv.DeployDir("flink")
	if _, err := os.Stat(filepath.Join(d, "pom.xml")); err != nil {
		return "", fmt.Errorf("deploy/flink: %w", err)
	}
	return d, nil
}

// Classpath builds deploy/flink's main and test classes (once per test
// process) and returns the classpath that runs its test code. It fails t
// when the build fails.
func Classpath(t testing.TB) string {
	t.Helper()
	testenv.SkipShort(t, "Java and Maven to build deploy/flink")
	build.once.Do(func() {
		start := time.Now()
		build.cp, build.err = buildModule()
		if build.err == nil {
			fmt.Fprintf(os.Stderr, "flinktest: deploy/flink built in %s\n", time.Since(start).Round(100*time.Millisecond))
		}
	})
	if build.err != nil {
		t.Fatalf("flinktest: %v", build.err)
	}
	return build.cp
}

func buildModule() (string, error) {
	dir, err := ModuleDir()
	if err != nil {
		return "", err
	}
	cpFile := filepath.Join(dir, "target", "test-classpath.txt")
	if out, err := underBuildLock(dir, "mvn -B -q -DskipTests test-compile dependency:build-classpath "+
		"-Dmdep.includeScope=test -Dmdep.outputFile=target/test-classpath.txt"); err != nil {
		return "", fmt.Errorf("build deploy/flink: %w\n%s", err, testenv.Tail(string(out), 40))
	}
	deps, err := os.ReadFile(cpFile)
	if err != nil {
		return "", fmt.Errorf("build deploy/flink: %w", err)
	}
	cp := strings.Join([]string{
		filepath.Join(dir, "target", "test-classes"),
		filepath.Join(dir, "target", "classes"),
		strings.TrimSpace(string(deps)),
	}, string(os.PathListSeparator))
	return cp, nil
}

// underBuildLock runs a bash script in the Maven module dir (the
// script's $1, $2, ... are args) holding target/.build.lock: flock
// serialises the test processes (go test runs packages in parallel) that
// would otherwise write, or read while another writes, target/.
func underBuildLock(dir, script string, args ...string) ([]byte, error) {
	cmd := exec.Command("bash", append([]string{"-c", "set -e\nmkdir -p target\nexec 9>target/.build.lock\nflock 9\n" + script, "bash"}, args...)...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

// Job is a running ScenarioJob process.
type Job struct {
	// ID is the Flink job id the job printed.
	ID string
	// Started is when the job printed SCENARIO_READY.
	Started time.Time

	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	out  bytes.Buffer
	stop sync.Once
}

// StartScenario starts io.github.skewlens.flink.scenario.ScenarioJob with
// args and waits (at most two minutes) until it prints
// "SCENARIO_READY job_id=<id>". The job is stopped when the test ends.
func StartScenario(t testing.TB, args ...string) *Job {
	t.Helper()
	cp := Classpath(t)
	j := &Job{done: make(chan struct{})}
	j.cmd = exec.Command("java", append([]string{"-Xmx1g", "-XX:+UseSerialGC", "-cp", cp,
		"io.github.skewlens.flink.scenario.ScenarioJob"}, args...)...)
	j.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	j.cmd.Stdout, j.cmd.Stderr = pw, pw
	if err := j.cmd.Start(); err != nil {
		t.Fatalf("flinktest: start ScenarioJob: %v", err)
	}
	pw.Close()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			j.mu.Lock()
			j.out.WriteString(line)
			j.out.WriteByte('\n')
			j.mu.Unlock()
			if id, ok := strings.CutPrefix(line, "SCENARIO_READY job_id="); ok {
				select {
				case ready <- strings.TrimSpace(id):
				default:
				}
			}
		}
	}()
	go func() { _ = j.cmd.Wait(); close(j.done) }()
	t.Cleanup(j.Stop)
	select {
	case id := <-ready:
		j.ID, j.Started = id, time.Now()
	case <-j.done:
		t.Fatalf("flinktest: ScenarioJob exited before it was ready (%v):\n%s", j.cmd.ProcessState, j.Tail(60))
	case <-time.After(2 * time.Minute):
		t.Fatalf("flinktest: ScenarioJob not ready after 2 minutes:\n%s", j.Tail(60))
	}
	return j
}

// Stop stops the job (SIGTERM, SIGKILL after 30 s) and waits for it. It
// is safe to call more than once.
func (j *Job) Stop() {
	j.stop.Do(func() {
		_ = j.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-j.done:
		case <-time.After(30 * time.Second):
			_ = j.cmd.Process.Kill()
			<-j.done
		}
	})
}

// Done is closed when the process has exited.
func (j *Job) Done() <-chan struct{} { return j.done }

// JobID returns the Flink job id.
func (j *Job) JobID() string { return j.ID }

// StartedAt returns when the job printed SCENARIO_READY.
func (j *Job) StartedAt() time.Time { return j.Started }

// Output returns everything the job printed so far.
func (j *Job) Output() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.out.String()
}

// Tail returns the last n lines the job printed.
func (j *Job) Tail(n int) string { return testenv.Tail(j.Output(), n) }
