package testenv

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// SkipShort skips t under go test -short, saying that it needs what (for
// example "a ClickHouse server"). Tests that start servers, install
// packages or reach the network call it, through the helpers' Start
// functions, so that -short runs the unit tests alone.
func SkipShort(t testing.TB, what string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs %s; skipped under -short", what)
	}
}

// Main runs the tests of m, then calls each stop (all of them, even when
// one fails), and exits with the tests' exit code, or 1 when the tests
// passed but a stop failed. Call it from TestMain.
func Main(m *testing.M, stops ...func() error) {
	code := m.Run()
	for _, stop := range stops {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

// RepoRoot returns the root folder of the skewlens module, found from this
// source file's location: tests run in their own package's folder, which
// varies.
func RepoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		// Only a binary built without caller information gets here, and
		// no test binary is.
		panic("testenv: cannot locate the source file")
	}
	// file is ROOT/internal/testenv/testenv.go
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// DeployDir returns the folder ROOT/deploy/name, which holds a server's
// scripts.
func DeployDir(name string) string {
	return filepath.Join(RepoRoot(), "deploy", name)
}

// FreePort asks the kernel for a loopback TCP port that is free at the
// time of the call. Another process may take it before the caller binds
// it; Launcher.Start retries for that reason.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Tail returns the last n lines of s, without a trailing newline, for
// failure messages.
func Tail(s string, n int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > n {
		parts = parts[len(parts)-n:]
	}
	return strings.Join(parts, "\n")
}

// FileTail returns "--- tail of PATH:\n" and the last n lines of the file
// at path, or "" when it is missing or empty: a server that never started
// may not have written its log yet.
func FileTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return ""
	}
	return fmt.Sprintf("--- tail of %s:\n%s\n", path, Tail(string(data), n))
}
