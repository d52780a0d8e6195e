package chtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvAddr names the environment variable that points the tests at an
// existing server (host:port of its native protocol port).
const EnvAddr = "SKEWLENS_CLICKHOUSE_ADDR"

// server is the test process's one server. See the package doc for why
// this is package-level state.
var server struct {
	mu      sync.Mutex
	started bool   // a start was attempted
	addr    string // set when running
	dir     string // the server's folder (removed by Stop)
	err     error  // the start error, reported to every later Start
}

// Start returns the address of a running ClickHouse server, starting one
// the first time it is called in the test process (see the package doc).
// It fails t, never skips, when no server can be started.
func Start(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a ClickHouse server; skipped under -short")
	}
	if addr := os.Getenv(EnvAddr); addr != "" {
		return addr
	}
	server.mu.Lock()
	defer server.mu.Unlock()
	if !server.started {
		server.started = true
		server.addr, server.dir, server.err = start()
	}
	if server.err != nil {
		t.Fatalf("chtest: cannot start ClickHouse: %v", server.err)
	}
	return server.addr
}

// Stop stops the server Start started, if any, and removes its folder. It
// is safe to call more than once.
func Stop() error {
	server.mu.Lock()
	defer server.mu.Unlock()
	if server.dir == "" {
		return nil
	}
	dir := server.dir
	server.dir, server.addr = "", ""
	server.err = errors.New("the server was stopped")
	out, err := exec.Command(script("stop.sh"), dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("chtest: stop.sh %s: %w\n%s", dir, err, out)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("chtest: remove %s: %w", dir, err)
	}
	return nil
}

// Main runs the tests of m, stops the server and exits with the tests'
// exit code. Call it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	if err := Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// RepoRoot returns the root folder of the skewlens module, found from
// this source file's location (tests run in their package's folder, which
// varies).
func RepoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("chtest: cannot locate the source file")
	}
	// file is ROOT/deploy/testenv/chtest/chtest.go
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

func script(name string) string {
	return filepath.Join(RepoRoot(), "deploy", "clickhouse", name)
}

// start installs ClickHouse when needed and starts a server. Port races
// (another process taking the port between picking and binding) are
// retried a few times.
func start() (addr, dir string, err error) {
	if out, err := exec.Command(script("install.sh")).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("install.sh: %w\n%s", err, tail(out, 40))
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return "", "", err
		}
		dir, err := os.MkdirTemp("", "skewlens-clickhouse-")
		if err != nil {
			return "", "", fmt.Errorf("make server folder: %w", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, script("start.sh"), dir, strconv.Itoa(port))
		cmd.Env = append(os.Environ(), "SKEWLENS_CH_WATCH_PID="+strconv.Itoa(os.Getpid()))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		// start.sh leaves the server and its watchdog running in their
		// own sessions; do not wait for their inherited output pipes.
		cmd.WaitDelay = time.Second
		err = cmd.Run()
		cancel()
		if err == nil {
			return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir, nil
		}
		lastErr = fmt.Errorf("start.sh %s %d: %w\n%s%s", dir, port, err, tail(out.Bytes(), 60), logTail(dir))
		_ = exec.Command(script("stop.sh"), dir).Run()
		_ = os.RemoveAll(dir)
		if !strings.Contains(out.String(), "Address already in use") {
			break
		}
	}
	return "", "", lastErr
}

// freePort asks the kernel for a free loopback TCP port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// logTail returns the last lines of the server logs under dir, if any.
func logTail(dir string) string {
	var b strings.Builder
	for _, name := range []string{"stderr.log", "clickhouse-server.err.log", "clickhouse-server.log"} {
		data, err := os.ReadFile(filepath.Join(dir, "log", name))
		if err != nil || len(data) == 0 {
			continue
		}
		fmt.Fprintf(&b, "--- %s:\n%s\n", name, tail(data, 30))
	}
	return b.String()
}

func tail(b []byte, lines int) string {
	s := strings.TrimRight(string(b), "\n")
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
