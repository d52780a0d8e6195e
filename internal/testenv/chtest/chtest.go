package chtest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/skewlens/skewlens/internal/testenv"
)

// EnvAddr names the environment variable that points the tests at an
// existing server (host:port of its native protocol port).
const EnvAddr = "SKEWLENS_CLICKHOUSE_ADDR"

// server is a ClickHouse server of the tests: p is nil for the one named
// by EnvAddr, which the tests did not start.
type server struct {
	addr string
	p    *testenv.Process
}

// shared is the test process's one server. See the package doc for why
// this is package-level state.
var shared testenv.Shared[server]

// launcher starts servers with internal/localch's scripts.
func launcher() *testenv.Launcher {
	return &testenv.Launcher{
		Name:    "clickhouse",
		Scripts: filepath.Join(testenv.RepoRoot(), "internal", "localch"),
		Env:     []string{"SKEWLENS_CH_WATCH_PID=" + strconv.Itoa(os.Getpid())},
		Logs:    []string{"log/stderr.log", "log/clickhouse-server.err.log", "log/clickhouse-server.log"},
	}
}

// Start returns the address of a running ClickHouse server, starting one
// the first time it is called in the test process (see the package doc).
// It skips t under -short and fails t when no server can be started.
func Start(t testing.TB) string {
	t.Helper()
	return shared.Get(t, "a ClickHouse server", func() (server, error) {
		if addr := os.Getenv(EnvAddr); addr != "" {
			return server{addr: addr}, nil
		}
		p, err := launcher().Start()
		if err != nil {
			return server{}, err
		}
		return server{addr: p.Addr, p: p}, nil
	}).addr
}

// StartPrivate starts a ClickHouse server of t's own, even when EnvAddr is
// set, and stops it and removes its folder when t ends; for tests that
// stop and start the server (Process.Halt, Process.Resume). It skips t
// under -short and fails t when the server cannot be started.
func StartPrivate(t testing.TB) *testenv.Process {
	t.Helper()
	testenv.SkipShort(t, "a ClickHouse server")
	p, err := launcher().Start()
	if err != nil {
		t.Fatalf("chtest: cannot start ClickHouse: %v", err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("chtest: %v", err)
		}
	})
	return p
}

// Stop stops the server Start started, if any, and removes its folder. It
// is safe to call more than once.
func Stop() error {
	return shared.Stop(func(s server) error {
		if s.p == nil {
			return nil
		}
		return s.p.Stop()
	})
}

// Main runs the tests of m, stops the server and exits with the tests'
// exit code. Call it from TestMain.
func Main(m *testing.M) { testenv.Main(m, Stop) }

// RepoRoot returns the root folder of the skewlens module (see
// testenv.RepoRoot); tests use it to find files of the checkout.
func RepoRoot() string { return testenv.RepoRoot() }
