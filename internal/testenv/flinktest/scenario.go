package flinktest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv"
)

// StartScenario starts io.github.skewlens.flink.scenario.ScenarioJob with
// args, a MiniCluster in a `java` process of its own (Classpath), and
// waits (at most two minutes) until it prints
// "SCENARIO_READY job_id=<id>". The job is stopped when the test ends.
func StartScenario(t testing.TB, args ...string) *Job {
	t.Helper()
	cp := Classpath(t)
	p := &scenarioProcess{}
	j := &Job{run: p, done: make(chan struct{})}
	p.cmd = exec.Command("java", append([]string{"-Xmx1g", "-XX:+UseSerialGC", "-cp", cp,
		"io.github.skewlens.flink.scenario.ScenarioJob"}, args...)...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("flinktest: start ScenarioJob: %v", err)
	}
	pw.Close()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.out.WriteString(line)
			p.out.WriteByte('\n')
			p.mu.Unlock()
			if id, ok := strings.CutPrefix(line, "SCENARIO_READY job_id="); ok {
				select {
				case ready <- strings.TrimSpace(id):
				default:
				}
			}
		}
	}()
	go func() { _ = p.cmd.Wait(); close(j.done) }()
	t.Cleanup(j.Stop)
	select {
	case id := <-ready:
		j.ID, j.Started = id, time.Now()
	case <-j.done:
		t.Fatalf("flinktest: ScenarioJob exited before it was ready (%v):\n%s", p.cmd.ProcessState, j.Tail(60))
	case <-time.After(2 * time.Minute):
		t.Fatalf("flinktest: ScenarioJob not ready after 2 minutes:\n%s", j.Tail(60))
	}
	return j
}

// scenarioProcess is the runner of a ScenarioJob: its process and
// everything it printed.
type scenarioProcess struct {
	cmd *exec.Cmd
	mu  sync.Mutex // guards out
	out bytes.Buffer
}

func (p *scenarioProcess) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *scenarioProcess) tail(n int) string { return testenv.Tail(p.output(), n) }

// stop sends SIGTERM, SIGKILL after 30 s, and waits for the process.
func (p *scenarioProcess) stop(j *Job) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-j.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-j.done
	}
}
