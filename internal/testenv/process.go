package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Launcher starts servers of one kind with the scripts of a deploy folder:
// install.sh [InstallArgs...], start.sh DIR PORT [StartArgs...] and
// stop.sh DIR. start.sh must return only once the server answers, leaving
// it running in the background with its pid in DIR/pid.
type Launcher struct {
	// Name names the server in messages and its folders, which are
	// skewlens-NAME-* in the temporary directory.
	Name string
	// Scripts is the folder with install.sh, start.sh and stop.sh.
	Scripts string
	// InstallArgs are install.sh's arguments (default none).
	InstallArgs []string
	// Env is added to the scripts' environment, e.g. the variable that
	// makes a server's watchdog stop it once the test process is gone
	// (default none).
	Env []string
	// Prepare, when set, readies a new server folder before its first
	// start (default: nothing to do).
	Prepare func(dir string) error
	// StartArgs, when set, returns start.sh's arguments after DIR PORT; it
	// is called before every start, Resume included (default none).
	StartArgs func(dir string) ([]string, error)
	// Logs are the server's log files, relative to its folder, whose tails
	// a failed start reports (default none).
	Logs []string
	// Timeout bounds one run of a script; install.sh, which may download
	// packages, gets ten times as long (default 60 s).
	Timeout time.Duration
	// Attempts is how many ports a start tries when start.sh reports its
	// port as taken ("already in use"), which happens when another process
	// binds the port between FreePort and the server's own bind
	// (default 3; 1 when Port is set).
	Attempts int
	// Port, when not zero, is the port the server listens on, for a
	// server whose peers must know its port before it starts (the
	// replicas of a cluster name each other in their configuration); a
	// start then tries that port alone (default 0: a free port from
	// FreePort per attempt).
	Port int
}

// Process is a server a Launcher started. Its methods are safe for
// concurrent use.
type Process struct {
	// Dir is the server's folder: its configuration, data, logs and pid.
	Dir string
	// Port is its loopback TCP port.
	Port int
	// Addr is 127.0.0.1:Port.
	Addr string

	l       *Launcher
	mu      sync.Mutex
	stopped bool
	stopErr error
}

func (l *Launcher) timeout() time.Duration {
	if l.Timeout > 0 {
		return l.Timeout
	}
	return 60 * time.Second
}

// run runs one of the scripts with args under a deadline and returns its
// combined output.
func (l *Launcher) run(timeout time.Duration, script string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(l.Scripts, script)}, args...)...)
	cmd.Env = append(os.Environ(), l.Env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// start.sh leaves the server and its watchdog running in their own
	// sessions with the output pipes inherited; do not wait for those.
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("%s %s: %w\n%s", script, strings.Join(args, " "), err, Tail(out.String(), 40))
	}
	return out.Bytes(), nil
}

// Start installs the server when it is missing (install.sh) and starts
// one in a new folder on a free port, trying another port when start.sh
// reports its port as taken. It blocks until the server answers or the
// start failed; on failure no server and no folder is left behind, and
// the error carries the tail of start.sh's output and of the logs.
func (l *Launcher) Start() (*Process, error) {
	begin := time.Now()
	if _, err := l.run(10*l.timeout(), "install.sh", l.InstallArgs...); err != nil {
		return nil, fmt.Errorf("%s: %w", l.Name, err)
	}
	if d := time.Since(begin); d > time.Second {
		fmt.Fprintf(os.Stderr, "testenv: %s installed in %s\n", l.Name, d.Round(100*time.Millisecond))
	}
	attempts := l.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	if l.Port != 0 {
		attempts = 1
	}
	var last error
	for range attempts {
		p, out, err := l.startOnce()
		if err == nil {
			fmt.Fprintf(os.Stderr, "testenv: %s ready at %s in %s (dir %s)\n",
				l.Name, p.Addr, time.Since(begin).Round(100*time.Millisecond), p.Dir)
			return p, nil
		}
		last = err
		if !bytes.Contains(out, []byte("already in use")) {
			break
		}
	}
	return nil, last
}

// startOnce starts a server on one free port; on failure it cleans up and
// returns start.sh's output too.
func (l *Launcher) startOnce() (*Process, []byte, error) {
	port := l.Port
	if port == 0 {
		var err error
		if port, err = FreePort(); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", l.Name, err)
		}
	}
	dir, err := os.MkdirTemp("", "skewlens-"+l.Name+"-")
	if err != nil {
		return nil, nil, fmt.Errorf("%s: make server folder: %w", l.Name, err)
	}
	p := &Process{Dir: dir, Port: port, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), l: l}
	if l.Prepare != nil {
		if err := l.Prepare(dir); err != nil {
			_ = os.RemoveAll(dir)
			return nil, nil, fmt.Errorf("%s: prepare %s: %w", l.Name, dir, err)
		}
	}
	out, err := p.start()
	if err != nil {
		_, _ = l.run(l.timeout(), "stop.sh", dir)
		_ = os.RemoveAll(dir)
		return nil, out, err
	}
	return p, out, nil
}

// start runs start.sh for p's folder and port.
func (p *Process) start() ([]byte, error) {
	args := []string{p.Dir, strconv.Itoa(p.Port)}
	if p.l.StartArgs != nil {
		more, err := p.l.StartArgs(p.Dir)
		if err != nil {
			return nil, fmt.Errorf("%s: start arguments: %w", p.l.Name, err)
		}
		args = append(args, more...)
	}
	out, err := p.l.run(p.l.timeout(), "start.sh", args...)
	if err != nil {
		return out, fmt.Errorf("%s: %w\n%s", p.l.Name, err, p.LogTail(30))
	}
	return out, nil
}

// LogTail returns the last n lines of each of the server's logs that
// exist, for failure messages.
func (p *Process) LogTail(n int) string {
	var b strings.Builder
	for _, name := range p.l.Logs {
		b.WriteString(FileTail(filepath.Join(p.Dir, name), n))
	}
	return b.String()
}

// Halt stops the server and waits until it has exited, keeping its folder
// for Resume. It fails after Stop.
func (p *Process) Halt() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return fmt.Errorf("%s: halt: the server was stopped", p.l.Name)
	}
	if _, err := p.l.run(p.l.timeout(), "stop.sh", p.Dir); err != nil {
		return fmt.Errorf("%s: %w", p.l.Name, err)
	}
	return nil
}

// Resume starts the halted server again in the same folder, with the same
// data and port, and returns once it answers. It fails after Stop.
func (p *Process) Resume() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return fmt.Errorf("%s: resume: the server was stopped", p.l.Name)
	}
	_, err := p.start()
	return err
}

// Kill sends SIGKILL to the server, as a crash would, and waits (at
// most 10 s) until it has gone, keeping its folder for Resume. It fails
// after Stop, or when the server does not run.
func (p *Process) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return fmt.Errorf("%s: kill: the server was stopped", p.l.Name)
	}
	pidFile := filepath.Join(p.Dir, "pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return fmt.Errorf("%s: kill: %w", p.l.Name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return fmt.Errorf("%s: kill: bad pid file %q", p.l.Name, b)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("%s: kill pid %d: %w", p.l.Name, pid, err)
	}
	for deadline := time.Now().Add(10 * time.Second); syscall.Kill(pid, 0) == nil; {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: pid %d still there 10s after SIGKILL", p.l.Name, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// start.sh reads a pid file of a running server as "already running".
	if err := os.Remove(pidFile); err != nil {
		return fmt.Errorf("%s: kill: %w", p.l.Name, err)
	}
	return nil
}

// Restart is Halt followed by Resume.
func (p *Process) Restart() error {
	if err := p.Halt(); err != nil {
		return err
	}
	return p.Resume()
}

// Stop stops the server and removes its folder. It is safe to call more
// than once; later calls return the first call's error.
func (p *Process) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return p.stopErr
	}
	p.stopped = true
	var errs []error
	if _, err := p.l.run(p.l.timeout(), "stop.sh", p.Dir); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(p.Dir); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", p.Dir, err))
	}
	if err := errors.Join(errs...); err != nil {
		p.stopErr = fmt.Errorf("%s: stop: %w", p.l.Name, err)
	}
	return p.stopErr
}
