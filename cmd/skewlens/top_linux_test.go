package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/skewlens/skewlens/internal/testenv"
)

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// topChild starts `skewlens top` (this test binary, see TestMain) against
// addr with stdin, and returns its stdout, a channel with its exit, and
// its end (for testenv.Eventually).
func topChild(t *testing.T, addr string, stdin *os.File, args ...string) (*exec.Cmd, *testenv.Buffer, <-chan error, testenv.End) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"top", "--clickhouse-addr", addr, "--color", "never"}, args...)...)
	cmd.Env = append(os.Environ(), envChild+"=1")
	out := &testenv.Buffer{}
	cmd.Stdout, cmd.Stderr, cmd.Stdin = out, out, stdin
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	exited := make(chan struct{})
	go func() { done <- cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	return cmd, out, done, testenv.End{Done: exited, Why: func() string { return "top exited:\n" + out.String() }}
}

// waitLines waits until out holds n lines with want.
func waitLines(t *testing.T, out *testenv.Buffer, want string, n int, ends ...testenv.End) {
	t.Helper()
	testenv.Eventually(t, 20*time.Second, fmt.Sprintf("%d lines with %q", n, want), func() bool { return strings.Count(out.String(), want) >= n }, ends...)
}

// TestTopWaitsForClickHouse: with ClickHouse away at start, top says it
// waits and tries again (docs/cli.md's promise) until Ctrl-C, which ends
// it cleanly; --once tries once and exits 1.
func TestTopWaitsForClickHouse(t *testing.T) {
	addr := closedAddr(t)
	cmd, out, done, end := topChild(t, addr, nil)
	waitLines(t, out, "waiting for ClickHouse at "+addr+" (try ", 2, end)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("top after Ctrl-C: %v\n%s", err, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("top did not stop on Ctrl-C while waiting")
	}

	_, out, done, _ = topChild(t, addr, nil, "--once")
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("top --once without ClickHouse: %v, want exit 1\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("top --once waited")
	}
	if strings.Contains(out.String(), "waiting for") {
		t.Errorf("top --once waited:\n%s", out.String())
	}
}

// TestTopQuitsOnQ: with a terminal on stdin, q quits top (here while it
// waits for ClickHouse) with exit 0 and the terminal's mode restored.
func TestTopQuitsOnQ(t *testing.T) {
	control, term := openPTY(t)
	before, err := unix.IoctlGetTermios(int(term.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	addr := closedAddr(t)
	_, out, done, end := topChild(t, addr, term)
	waitLines(t, out, "waiting for ClickHouse at "+addr, 1, end)
	if _, err := control.Write([]byte("q")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("top after q: %v\n%s", err, out.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("top did not quit on q:\n%s", out.String())
	}
	after, err := unix.IoctlGetTermios(int(term.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Errorf("top left the terminal in %+v, want %+v", *after, *before)
	}
}

// openPTY returns the two ends of a new pseudo-terminal, or skips the
// test where there is none.
func openPTY(t *testing.T) (control, term *os.File) {
	t.Helper()
	control, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { control.Close() })
	n, err := unix.IoctlGetUint32(int(control.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("no pseudo-terminal number: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(control.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("cannot unlock the pseudo-terminal: %v", err)
	}
	term, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("cannot open the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { term.Close() })
	return control, term
}
