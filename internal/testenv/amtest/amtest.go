package amtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv"
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

	p    *testenv.Process
	hook *http.Server
	mu   sync.Mutex
	cond *sync.Cond
	got  []Notification
}

// shared is the test process's one Alertmanager. See the package doc for
// why this is package-level state.
var shared testenv.Shared[*Server]

// Start returns the running Alertmanager, starting it the first time (see
// the package doc). It skips t under -short and fails t when Alertmanager
// cannot start.
func Start(t testing.TB) *Server {
	t.Helper()
	return shared.Get(t, "an Alertmanager", start)
}

// Stop stops the Alertmanager and receiver Start started, if any, and
// removes the folder. Safe to call more than once.
func Stop() error {
	return shared.Stop(func(s *Server) error {
		err := s.p.Stop()
		_ = s.hook.Close()
		return err
	})
}

// Main runs the tests of m, stops the server and exits with the tests'
// exit code. Call it from TestMain.
func Main(m *testing.M) { testenv.Main(m, Stop) }

// start starts the receiver, then Alertmanager (installed when needed)
// with a configuration that routes every alert to the receiver.
func start() (*Server, error) {
	s := &Server{}
	s.cond = sync.NewCond(&s.mu)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("webhook receiver: %w", err)
	}
	s.hook = &http.Server{Handler: http.HandlerFunc(s.receive), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.hook.Serve(ln) }()
	hookURL := "http://" + ln.Addr().String() + "/hook"
	l := &testenv.Launcher{
		Name:    "alertmanager",
		Scripts: testenv.DeployDir("alertmanager"),
		Env: []string{
			"SKEWLENS_AM_WATCH_PID=" + strconv.Itoa(os.Getpid()),
			"SKEWLENS_AM_GROUP_WAIT=200ms",
			"SKEWLENS_AM_GROUP_INTERVAL=500ms",
			"SKEWLENS_AM_REPEAT_INTERVAL=1h",
		},
		StartArgs: func(string) ([]string, error) { return []string{hookURL}, nil },
		Logs:      []string{"alertmanager.log"},
	}
	s.p, err = l.Start()
	if err != nil {
		_ = s.hook.Close()
		return nil, err
	}
	s.URL = "http://" + s.p.Addr
	s.Dir = s.p.Dir
	return s, nil
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
func (s *Server) LogTail(n int) string { return s.p.LogTail(n) }
