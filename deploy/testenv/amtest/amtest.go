package amtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
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

// maxNotifications bounds the recorded notifications (oldest dropped).
const maxNotifications = 10000

// Notification is the body of an Alertmanager webhook (version 4).
type Notification struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   int               `json:"truncatedAlerts"`
	Status            string            `json:"status"`
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Alerts            []WebhookAlert    `json:"alerts"`
}

// WebhookAlert is one alert of a Notification.
type WebhookAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// APIAlert is one alert as GET /api/v2/alerts lists it.
type APIAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	UpdatedAt    time.Time         `json:"updatedAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
	Status       struct {
		State string `json:"state"`
	} `json:"status"`
	Receivers []struct {
		Name string `json:"name"`
	} `json:"receivers"`
}

// Server is the test process's Alertmanager and webhook receiver.
type Server struct {
	// URL is Alertmanager's base URL, http://127.0.0.1:PORT.
	URL string
	// Dir holds its configuration, data and log.
	Dir string

	hook *http.Server
	mu   sync.Mutex
	cond *sync.Cond
	got  []Notification
}

var shared struct {
	mu      sync.Mutex
	started bool
	s       *Server
	err     error
}

// Start returns the running Alertmanager, starting it the first time (see
// the package doc). It fails t, never skips, when it cannot start.
func Start(t testing.TB) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("needs an Alertmanager; skipped under -short")
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.started {
		shared.started = true
		begin := time.Now()
		shared.s, shared.err = start()
		if shared.err == nil {
			fmt.Fprintf(os.Stderr, "amtest: Alertmanager %s ready in %s (dir %s)\n",
				shared.s.URL, time.Since(begin).Round(10*time.Millisecond), shared.s.Dir)
		}
	}
	if shared.err != nil {
		t.Fatalf("amtest: cannot start Alertmanager: %v", shared.err)
	}
	return shared.s
}

// Stop stops the Alertmanager and receiver Start started, if any, and
// removes the folder. Safe to call more than once.
func Stop() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	s := shared.s
	if s == nil {
		return nil
	}
	shared.s = nil
	shared.err = errors.New("the server was stopped")
	out, err := exec.Command(script("stop.sh"), s.Dir).CombinedOutput()
	_ = s.hook.Close()
	if err != nil {
		return fmt.Errorf("amtest: stop.sh %s: %w\n%s", s.Dir, err, out)
	}
	if err := os.RemoveAll(s.Dir); err != nil {
		return fmt.Errorf("amtest: remove %s: %w", s.Dir, err)
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

// repoRoot is the module root, found from this file's location.
func repoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "."
	}
	// file is ROOT/deploy/testenv/amtest/amtest.go
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
}

func script(name string) string {
	return filepath.Join(repoRoot(), "deploy", "alertmanager", name)
}

// start starts the receiver, installs Alertmanager when needed and starts
// it, retrying a few times when the picked port was taken meanwhile.
func start() (*Server, error) {
	if out, err := exec.Command(script("install.sh")).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("install.sh: %w\n%s", err, tail(out, 40))
	}
	s := &Server{}
	s.cond = sync.NewCond(&s.mu)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("webhook receiver: %w", err)
	}
	s.hook = &http.Server{Handler: http.HandlerFunc(s.receive), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.hook.Serve(ln) }()
	hookURL := "http://" + ln.Addr().String() + "/hook"

	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			break
		}
		dir, err := os.MkdirTemp("", "skewlens-alertmanager-")
		if err != nil {
			lastErr = fmt.Errorf("make server folder: %w", err)
			break
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, script("start.sh"), dir, strconv.Itoa(port), hookURL)
		cmd.Env = append(os.Environ(),
			"SKEWLENS_AM_WATCH_PID="+strconv.Itoa(os.Getpid()),
			"SKEWLENS_AM_GROUP_WAIT=200ms",
			"SKEWLENS_AM_GROUP_INTERVAL=500ms",
			"SKEWLENS_AM_REPEAT_INTERVAL=1h",
		)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		// start.sh leaves Alertmanager and its watchdog running in their
		// own sessions; do not wait for their inherited output pipes.
		cmd.WaitDelay = time.Second
		err = cmd.Run()
		cancel()
		if err == nil {
			s.URL = "http://127.0.0.1:" + strconv.Itoa(port)
			s.Dir = dir
			return s, nil
		}
		lastErr = fmt.Errorf("start.sh %s %d: %w\n%s\n%s", dir, port, err, tail(out.Bytes(), 40), logTail(dir, 40))
		_ = exec.Command(script("stop.sh"), dir).Run()
		_ = os.RemoveAll(dir)
		if !strings.Contains(out.String(), "already in use") {
			break
		}
	}
	_ = s.hook.Close()
	return nil, lastErr
}

// receive records one webhook notification.
func (s *Server) receive(w http.ResponseWriter, r *http.Request) {
	var n Notification
	if err := json.NewDecoder(io.LimitReader(r.Body, 16<<20)).Decode(&n); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.got = append(s.got, n)
	if len(s.got) > maxNotifications {
		s.got = s.got[len(s.got)-maxNotifications:]
	}
	s.cond.Broadcast()
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// WaitNotification returns the first recorded notification (of the whole
// process, in arrival order) for which match is true, waiting up to
// timeout for one to arrive. It fails t, with Alertmanager's log tail,
// when none does.
func (s *Server) WaitNotification(t testing.TB, timeout time.Duration, match func(*Notification) bool) Notification {
	t.Helper()
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for i := range s.got {
			if match(&s.got[i]) {
				return s.got[i]
			}
		}
		if !time.Now().Before(deadline) {
			t.Fatalf("amtest: no matching notification within %s (%d received)\n%s", timeout, len(s.got), s.LogTail(30))
		}
		s.cond.Wait()
	}
}

// Notifications returns a copy of every recorded notification.
func (s *Server) Notifications() []Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Notification(nil), s.got...)
}

// Alerts returns GET /api/v2/alerts, filtered by Alertmanager matchers
// such as `job_id="j1"`. It fails t on errors.
func (s *Server) Alerts(t testing.TB, matchers ...string) []APIAlert {
	t.Helper()
	q := url.Values{}
	for _, m := range matchers {
		q.Add("filter", m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/api/v2/alerts?"+q.Encode(), nil)
	if err != nil {
		t.Fatalf("amtest: %v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("amtest: GET /api/v2/alerts: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("amtest: GET /api/v2/alerts: HTTP %d: %s", resp.StatusCode, body)
	}
	var out []APIAlert
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("amtest: GET /api/v2/alerts: %v: %s", err, body)
	}
	return out
}

// LogTail returns the last n lines of Alertmanager's log.
func (s *Server) LogTail(n int) string { return logTail(s.Dir, n) }

func logTail(dir string, n int) string {
	data, err := os.ReadFile(filepath.Join(dir, "alertmanager.log"))
	if err != nil || len(data) == 0 {
		return ""
	}
	return "--- tail of alertmanager.log:\n" + tail(data, n)
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

func tail(b []byte, lines int) string {
	s := strings.TrimRight(string(b), "\n")
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}
