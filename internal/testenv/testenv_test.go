package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestTail(t *testing.T) {
	for _, tt := range []struct {
		in    string
		lines int
		want  string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb", 5, "a\nb"},
		{"", 3, ""},
	} {
		if got := Tail(tt.in, tt.lines); got != tt.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", tt.in, tt.lines, got, tt.want)
		}
	}
}

func TestFileTail(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full.log")
	if err := os.WriteFile(full, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.log")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path string
		want string
	}{
		{full, "--- tail of " + full + ":\ntwo\nthree\n"},
		{empty, ""},
		{filepath.Join(dir, "missing.log"), ""},
	} {
		if got := FileTail(tt.path, 2); got != tt.want {
			t.Errorf("FileTail(%s) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestFreePort(t *testing.T) {
	p, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if p <= 0 || p > 65535 {
		t.Fatalf("FreePort = %d", p)
	}
}

func TestRepoRoot(t *testing.T) {
	if _, err := os.Stat(filepath.Join(RepoRoot(), "go.mod")); err != nil {
		t.Fatalf("RepoRoot %s has no go.mod: %v", RepoRoot(), err)
	}
}

// TestScriptsExecutable checks the scripts the harnesses run: the
// Launchers run them with bash, but install-chdb.sh and the docs
// (docs/production.md, docs/alerts.md) run them directly.
func TestScriptsExecutable(t *testing.T) {
	for _, tt := range []struct {
		dir     string
		scripts []string
	}{
		{"clickhouse", []string{"install-chdb.sh"}},
		{"../internal/localch", []string{"install.sh", "start.sh", "stop.sh"}},
		{"alertmanager", []string{"install.sh", "start.sh", "stop.sh"}},
		{"kafka", []string{"install.sh", "start.sh", "stop.sh"}},
		{"prometheus", []string{"install.sh"}},
		{"systemd", []string{"install.sh"}},
		{"kubernetes", []string{"install.sh"}},
		{"zookeeper", []string{"install.sh", "start.sh", "stop.sh"}},
	} {
		for _, name := range tt.scripts {
			st, err := os.Stat(filepath.Join(DeployDir(tt.dir), name))
			if err != nil {
				t.Errorf("%s/%s: %v", tt.dir, name, err)
				continue
			}
			if st.Mode()&0o111 == 0 {
				t.Errorf("%s/%s is not executable", tt.dir, name)
			}
		}
	}
}

func TestSharedStartsOnce(t *testing.T) {
	var s Shared[int]
	starts := 0
	start := func() (int, error) { starts++; return 40 + starts, nil }
	for range 3 {
		if got := s.get(t, "a counter", start); got != 41 {
			t.Fatalf("get = %d, want 41", got)
		}
	}
	if starts != 1 {
		t.Fatalf("start ran %d times, want 1", starts)
	}
	var stopped []int
	stop := func(v int) error { stopped = append(stopped, v); return errors.New("stop failed") }
	if err := s.Stop(stop); err == nil || err.Error() != "stop failed" {
		t.Fatalf("Stop = %v, want stop's error", err)
	}
	if err := s.Stop(stop); err != nil {
		t.Fatalf("second Stop = %v, want nil", err)
	}
	if len(stopped) != 1 || stopped[0] != 41 {
		t.Fatalf("stop called with %v, want [41]", stopped)
	}
	var running bool
	s.Do(func(_ int, r bool) { running = r })
	if running {
		t.Fatal("Do reports a running server after Stop")
	}
}

// fatalRecorder records Fatalf instead of ending the test, to check that
// Shared fails a test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = format
	for _, a := range args {
		if err, ok := a.(error); ok {
			f.msg += " " + err.Error()
		}
	}
}

func TestSharedFailures(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(*Shared[int])
		start   func() (int, error)
		want    string
	}{
		{"start fails", func(*Shared[int]) {}, func() (int, error) { return 0, errors.New("no binary") }, "no binary"},
		{"stopped", func(s *Shared[int]) {
			s.get(t, "x", func() (int, error) { return 1, nil })
			_ = s.Stop(func(int) error { return nil })
		}, func() (int, error) { return 2, nil }, "was stopped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Shared[int]
			tt.prepare(&s)
			for range 2 { // a failed start is reported again, not retried
				rec := &fatalRecorder{TB: t}
				s.get(rec, "a counter", tt.start)
				if !strings.Contains(rec.msg, tt.want) {
					t.Fatalf("failure = %q, want it to contain %q", rec.msg, tt.want)
				}
			}
		})
	}
}

// fakeScripts writes install.sh, start.sh and stop.sh that keep a server's
// state in files: DIR/state is "running" or "stopped", DIR/starts counts
// starts. start.sh fails with "Address already in use" while the file
// $FAKE_BUSY holds a number above zero (counting down), and fails with a
// log line when its third argument is "fail".
func fakeScripts(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	scripts := map[string]string{
		"install.sh": `echo installed >>"$FAKE_LOG"`,
		"start.sh": `dir=$1 port=$2
n=$(cat "$FAKE_BUSY" 2>/dev/null || echo 0)
if [ "$n" -gt 0 ]; then echo $((n-1)) >"$FAKE_BUSY"; echo "bind 127.0.0.1:$port: Address already in use"; exit 1; fi
if [ "${3:-}" = fail ]; then echo "fatal: no config" >"$dir/server.log"; exit 1; fi
if [ "${3:-}" = proc ]; then setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $! >"$dir/pid"; fi
echo running >"$dir/state"
echo "$port" >>"$dir/starts"
echo "start $dir" >>"$FAKE_LOG"`,
		"stop.sh": `if [ -f "$1/pid" ]; then kill "$(cat "$1/pid")" 2>/dev/null || true; rm -f "$1/pid"; fi
[ -d "$1" ] && echo stopped >"$1/state"
echo "stop $1" >>"$FAKE_LOG"`,
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("set -eu\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func fakeLauncher(t *testing.T, busy int, args ...string) (*Launcher, string) {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir()) // server folders land here
	work := t.TempDir()
	busyFile := filepath.Join(work, "busy")
	if err := os.WriteFile(busyFile, []byte(strconv.Itoa(busy)), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(work, "log")
	l := &Launcher{
		Name:    "fake",
		Scripts: fakeScripts(t),
		Env:     []string{"FAKE_BUSY=" + busyFile, "FAKE_LOG=" + log},
		Logs:    []string{"server.log"},
		StartArgs: func(string) ([]string, error) {
			return args, nil
		},
	}
	return l, log
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// serverDirs lists the server folders in the temporary directory.
func serverDirs(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(os.TempDir(), "skewlens-fake-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLauncherLifecycle(t *testing.T) {
	l, log := fakeLauncher(t, 0)
	p, err := l.Start()
	if err != nil {
		t.Fatal(err)
	}
	if p.Addr != "127.0.0.1:"+strconv.Itoa(p.Port) {
		t.Errorf("Addr = %s, Port = %d", p.Addr, p.Port)
	}
	if got := readFile(t, filepath.Join(p.Dir, "state")); got != "running\n" {
		t.Fatalf("state after Start = %q", got)
	}
	if err := p.Restart(); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(p.Port)
	if got := readFile(t, filepath.Join(p.Dir, "starts")); got != port+"\n"+port+"\n" {
		t.Errorf("starts = %q, want port %s twice (same port after Restart)", got, port)
	}
	if err := p.Halt(); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(p.Dir, "state")); got != "stopped\n" {
		t.Fatalf("state after Halt = %q", got)
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := os.Stat(p.Dir); !os.IsNotExist(err) {
		t.Errorf("folder %s left after Stop: %v", p.Dir, err)
	}
	if err := p.Resume(); err == nil {
		t.Error("Resume after Stop succeeded")
	}
	want := "installed\nstart D\nstop D\nstart D\nstop D\nstart D\nstop D\n"
	if got := strings.ReplaceAll(readFile(t, log), p.Dir, "D"); got != want {
		t.Errorf("script calls:\n%s\nwant:\n%s", got, want)
	}
}

func TestLauncherRetriesTakenPort(t *testing.T) {
	tests := []struct {
		name     string
		busy     int // starts that report a taken port
		attempts int
		wantErr  string
	}{
		{"free at once", 0, 0, ""},
		{"taken twice", 2, 0, ""},
		{"taken more often than attempts", 3, 3, "already in use"},
		{"one attempt", 1, 1, "already in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := fakeLauncher(t, tt.busy)
			l.Attempts = tt.attempts
			p, err := l.Start()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Start error = %v, want %q", err, tt.wantErr)
				}
				if d := serverDirs(t); len(d) != 0 {
					t.Errorf("failed starts left folders %v", d)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := serverDirs(t); len(d) != 1 || d[0] != p.Dir {
				t.Errorf("folders %v, want only %s (failed attempts cleaned up)", d, p.Dir)
			}
			if err := p.Stop(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLauncherFixedPort: a Launcher with Port starts on that port, and
// tries no other one when start.sh reports it taken.
func TestLauncherFixedPort(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		busy    int
		wantErr string
	}{
		{"free", 0, ""},
		{"taken", 1, "already in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := fakeLauncher(t, tt.busy)
			l.Port = port
			p, err := l.Start()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Start error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop()
			if p.Port != port || p.Addr != "127.0.0.1:"+strconv.Itoa(port) {
				t.Errorf("Port %d, Addr %s; want port %d", p.Port, p.Addr, port)
			}
			if got := readFile(t, filepath.Join(p.Dir, "starts")); got != strconv.Itoa(port)+"\n" {
				t.Errorf("starts = %q, want port %d once", got, port)
			}
		})
	}
}

// TestProcessKill: Kill SIGKILLs the server's process and waits for it
// to go; Resume starts it again in the same folder; after Stop, Kill
// fails.
func TestProcessKill(t *testing.T) {
	l, _ := fakeLauncher(t, 0, "proc")
	p, err := l.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	pidOf := func() int {
		t.Helper()
		pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, filepath.Join(p.Dir, "pid"))))
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
	first := pidOf()
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(first, 0); err == nil {
		t.Errorf("pid %d still there after Kill", first)
	}
	if _, err := os.Stat(filepath.Join(p.Dir, "pid")); !os.IsNotExist(err) {
		t.Errorf("pid file left after Kill: %v", err)
	}
	if err := p.Kill(); err == nil {
		t.Error("Kill of a killed server succeeded")
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	if second := pidOf(); second == first || syscall.Kill(second, 0) != nil {
		t.Errorf("after Resume: pid %d (was %d), want a new running one", second, first)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err == nil {
		t.Error("Kill after Stop succeeded")
	}
}

func TestLauncherStartFailureReportsLog(t *testing.T) {
	l, _ := fakeLauncher(t, 0, "fail")
	_, err := l.Start()
	if err == nil {
		t.Fatal("Start succeeded")
	}
	for _, want := range []string{"fake", "start.sh", "fatal: no config", "server.log"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if d := serverDirs(t); len(d) != 0 {
		t.Errorf("failed start left folders %v", d)
	}
}

// TestEventually: a condition that comes true is seen, one that never
// does fails the wait after its timeout, and an end fails it at once.
func TestEventually(t *testing.T) {
	n := 0
	Eventually(t, time.Second, "the third poll", func() bool { n++; return n >= 3 })
	if n != 3 {
		t.Errorf("cond called %d times, want 3", n)
	}
	for _, c := range []struct {
		name string
		ends []End
		want string
	}{
		{"timeout", nil, "never: not within 20ms"},
		{"end", []End{{Done: closed(), Why: func() string { return "the server exited" }}}, "never: the server exited"},
	} {
		ft := &fatalT{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			Eventually(ft, 20*time.Millisecond, "never", func() bool { return false }, c.ends...)
		}()
		<-done
		if ft.msg != c.want {
			t.Errorf("%s: failed with %q, want %q", c.name, ft.msg, c.want)
		}
	}
}

func closed() <-chan struct{} { c := make(chan struct{}); close(c); return c }

// fatalT records Fatalf's message and ends the goroutine, as testing.T's.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Helper() {}
func (f *fatalT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
