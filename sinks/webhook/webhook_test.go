package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/internal/testenv/alerttest"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/alert"
)

// server answers with the statuses in order (200 after them) and keeps
// the bodies it got.
type server struct {
	mu       sync.Mutex
	statuses []int
	delay    time.Duration
	bodies   []Message
	calls    int
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.calls++
	status := 200
	if len(s.statuses) > 0 {
		status, s.statuses = s.statuses[0], s.statuses[1:]
	}
	delay := s.delay
	s.mu.Unlock()
	// Read the body first: the server notices a client that gave up only
	// once the body is read.
	var m Message
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if r.Method != http.MethodPost || r.Header.Get("X-Token") != "t" {
		http.Error(w, "bad request", 400)
		return
	}
	if status == 200 {
		s.mu.Lock()
		s.bodies = append(s.bodies, m)
		s.mu.Unlock()
	}
	w.WriteHeader(status)
}

func testAlerts(t testing.TB, n int) []alert.Alert {
	tr, err := alert.NewStateMachine(alert.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var fs []skew.Finding
	for i := range n {
		sub := i
		fs = append(fs, skew.Finding{Kind: skew.KindSaturation, JobID: "j1", TaskName: "sink", SubtaskIndex: &sub,
			WindowStart: 0, WindowEnd: 10_000, Summary: "slow",
			Saturation: &skew.Saturation{Cause: skew.CauseSlowSubtask, Host: "h", Evidence: &skew.Evidence{BusyMsPerSecond: 990}}})
	}
	var out []alert.Alert
	for _, e := range tr.Apply(alerttest.Incidents(t, -1).Observe(fs)) {
		if e.Notify() {
			out = append(out, e.Alert)
		}
	}
	return out
}

func TestNotify(t *testing.T) {
	tests := []struct {
		name          string
		statuses      []int
		delay         time.Duration
		alerts        int
		maxBatch      int
		wantErr       bool
		wantPermanent bool
		wantCalls     int
		wantBodies    []int // alerts per accepted body
		wantRetry     float64
	}{
		{name: "one request", alerts: 3, wantCalls: 1, wantBodies: []int{3}},
		{name: "split into batches", alerts: 5, maxBatch: 2, wantCalls: 3, wantBodies: []int{2, 2, 1}},
		{name: "retries 500 then succeeds", statuses: []int{500, 503}, alerts: 1, wantCalls: 3, wantBodies: []int{1}, wantRetry: 2},
		{name: "gives up on 400 at once as permanent", statuses: []int{400}, alerts: 1, wantErr: true, wantPermanent: true, wantCalls: 1},
		{name: "gives up after the retries on 500", statuses: []int{500, 500, 500, 500}, alerts: 1, wantErr: true, wantCalls: 3, wantRetry: 2},
		{name: "timeout is retryable", delay: 300 * time.Millisecond, alerts: 1, wantErr: true, wantCalls: 3, wantRetry: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &server{statuses: tt.statuses, delay: tt.delay}
			srv := httptest.NewServer(s)
			defer srv.Close()
			n, err := New(Config{
				URL: srv.URL + "/hook", Headers: map[string]string{"X-Token": "t"}, Timeout: 100 * time.Millisecond, MaxBatch: tt.maxBatch,
			}, nil, prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			defer n.Close()
			// The notifier makes one attempt; its caller retries, as
			// alertdeliver.Fanout does, with retry.Do.
			retries := 0
			policy := retry.Policy{MaxRetries: 2, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}
			alerts := testAlerts(t, tt.alerts)
			err = retry.Do(context.Background(), policy, func(int, time.Duration, error) { retries++ }, func(ctx context.Context) error {
				return n.Notify(ctx, alerts)
			})
			if (err != nil) != tt.wantErr || retry.IsPermanent(err) != tt.wantPermanent {
				t.Fatalf("err = %v (permanent %v), want error %v permanent %v", err, retry.IsPermanent(err), tt.wantErr, tt.wantPermanent)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.calls != tt.wantCalls {
				t.Errorf("%d requests, want %d", s.calls, tt.wantCalls)
			}
			if len(s.bodies) != len(tt.wantBodies) {
				t.Fatalf("%d accepted bodies, want %d", len(s.bodies), len(tt.wantBodies))
			}
			for i, b := range s.bodies {
				if len(b.Alerts) != tt.wantBodies[i] || b.Version != "1" || b.Sender != "skewlens" {
					t.Errorf("body %d: version %q sender %q with %d alerts, want %d", i, b.Version, b.Sender, len(b.Alerts), tt.wantBodies[i])
				}
				for _, a := range b.Alerts {
					if a.Status != alert.StatusFiring || a.Labels["alertname"] != alert.NameSlowSubtask || a.Annotations["summary"] != "slow" || a.Finding == nil {
						t.Errorf("alert in body: %+v", a)
					}
				}
			}
			if r := float64(retries); r != tt.wantRetry {
				t.Errorf("retries = %v, want %v", r, tt.wantRetry)
			}
			ok, failed := testutil.ToFloat64(n.m.requests.WithLabelValues("ok")), testutil.ToFloat64(n.m.requests.WithLabelValues("error"))
			if ok != float64(len(tt.wantBodies)) || failed != float64(tt.wantCalls-len(tt.wantBodies)) {
				t.Errorf("requests ok %v, error %v; want %d and %d", ok, failed, len(tt.wantBodies), tt.wantCalls-len(tt.wantBodies))
			}
		})
	}
}

func TestNotifyContextCanceled(t *testing.T) {
	srv := httptest.NewServer(&server{statuses: []int{500, 500, 500, 500, 500, 500}})
	defer srv.Close()
	n, err := New(Config{URL: srv.URL, Headers: map[string]string{"X-Token": "t"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = retry.Do(ctx, retry.Policy{MaxRetries: 100, MinBackoff: time.Second, MaxBackoff: time.Second}, nil, func(ctx context.Context) error {
		return n.Notify(ctx, testAlerts(t, 1))
	})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Errorf("err = %v after %s, want the context's deadline promptly", err, time.Since(start))
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg     Config
		wantErr string
	}{
		{Config{URL: "http://x/hook"}, ""},
		{Config{}, "url"},
		{Config{URL: "x/hook"}, "scheme"},
		{Config{URL: "http://x", Timeout: -1}, "timeout"},
		{Config{URL: "http://x", MaxBatch: -1}, "max batch"},
	} {
		err := tt.cfg.withDefaults().Validate() // as New sees it
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.cfg, err, tt.wantErr)
		}
	}
	c := Config{URL: "http://x/hook"}
	if err := c.Validate(); err == nil {
		t.Errorf("Validate accepted %+v without defaults", c)
	}
	d := DefaultConfig()
	d.URL = c.URL
	if got := c.withDefaults(); !reflect.DeepEqual(got, d) || d.Timeout != 5*time.Second || d.MaxBatch != 100 || d.Sender != "skewlens" {
		t.Errorf("defaults: %+v, DefaultConfig %+v", got, d)
	}
}
