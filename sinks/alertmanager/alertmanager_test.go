package alertmanager

import (
	"context"
	"encoding/json"
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
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/skew/alert"
)

func TestPostable(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	past, future := now.Add(-time.Hour), now.Add(time.Hour)
	tests := []struct {
		name             string
		a                alert.Alert
		wantStart, wantE time.Time
	}{
		{"firing ends EndsAfter from now", alert.Alert{Status: alert.StatusFiring, StartsAt: past}, past, now.Add(4 * time.Minute)},
		{"a start in the future is now", alert.Alert{Status: alert.StatusFiring, StartsAt: future}, now, now.Add(4 * time.Minute)},
		{"resolved keeps its end", alert.Alert{Status: alert.StatusResolved, StartsAt: past, EndsAt: past.Add(time.Minute)}, past, past.Add(time.Minute)},
		{"a resolved end in the future is now", alert.Alert{Status: alert.StatusResolved, StartsAt: past, EndsAt: future}, past, now},
		{"resolved entirely in the future: start = end = now", alert.Alert{Status: alert.StatusResolved, StartsAt: future, EndsAt: future.Add(time.Minute)}, now, now},
		{"zero times", alert.Alert{Status: alert.StatusResolved}, now, now},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.a.Labels = map[string]string{"alertname": "X"}
			p := Postable(&tt.a, now, 4*time.Minute, "http://gen")
			if !p.StartsAt.Equal(tt.wantStart) || !p.EndsAt.Equal(tt.wantE) || p.GeneratorURL != "http://gen" || p.Labels["alertname"] != "X" {
				t.Errorf("got start %v end %v gen %q, want start %v end %v", p.StartsAt, p.EndsAt, p.GeneratorURL, tt.wantStart, tt.wantE)
			}
			if p.EndsAt.Before(p.StartsAt) {
				t.Errorf("endsAt %v before startsAt %v: Alertmanager refuses that", p.EndsAt, p.StartsAt)
			}
		})
	}
}

// fakeAM records POST /api/v2/alerts bodies and answers with statuses in
// order (200 after them).
type fakeAM struct {
	mu       sync.Mutex
	statuses []int
	posts    [][]PostableAlert
	calls    int
}

func (f *fakeAM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if r.URL.Path != "/am/api/v2/alerts" || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		http.Error(w, "wrong request "+r.Method+" "+r.URL.Path, 404)
		return
	}
	status := 200
	if len(f.statuses) > 0 {
		status, f.statuses = f.statuses[0], f.statuses[1:]
	}
	if status != 200 {
		http.Error(w, "nope", status)
		return
	}
	var ps []PostableAlert
	if err := json.Unmarshal(body, &ps); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	f.posts = append(f.posts, ps)
}

func (f *fakeAM) snapshot() (calls int, posts [][]PostableAlert) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, append([][]PostableAlert(nil), f.posts...)
}

func testAlert(id, status string) alert.Alert {
	return alert.Alert{ID: id, Status: status, Labels: map[string]string{"alertname": "FlinkSlowSubtask", "id": id},
		Annotations: map[string]string{"summary": "s " + id}, StartsAt: time.Now().Add(-time.Minute), EndsAt: time.Now().Add(-time.Second)}
}

func newTest(t *testing.T, f *fakeAM, cfg Config, reg prometheus.Registerer) *Notifier {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg.URL = srv.URL + "/am/"
	n, err := New(cfg, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

func TestNotify(t *testing.T) {
	tests := []struct {
		name          string
		statuses      []int
		wantErr       bool
		wantPermanent bool
		wantCalls     int
	}{
		{name: "accepted", wantCalls: 1},
		{name: "500 is retried", statuses: []int{500, 502}, wantCalls: 3},
		{name: "400 is permanent at once", statuses: []int{400}, wantErr: true, wantPermanent: true, wantCalls: 1},
		{name: "retries run out", statuses: []int{500, 500, 500}, wantErr: true, wantCalls: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAM{statuses: tt.statuses}
			n := newTest(t, f, Config{ResendInterval: time.Hour, GeneratorURL: "http://skewlens/x"}, nil)
			// The notifier makes one attempt; its caller retries, as
			// alertdeliver.Fanout does, with retry.Do.
			policy := retry.Policy{MaxRetries: 2, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}
			err := retry.Do(context.Background(), policy, nil, func(ctx context.Context) error {
				return n.Notify(ctx, []alert.Alert{testAlert("a", alert.StatusFiring), testAlert("b", alert.StatusResolved)})
			})
			if (err != nil) != tt.wantErr || retry.IsPermanent(err) != tt.wantPermanent {
				t.Fatalf("err = %v (permanent %v), want error %v permanent %v", err, retry.IsPermanent(err), tt.wantErr, tt.wantPermanent)
			}
			calls, posts := f.snapshot()
			if calls != tt.wantCalls {
				t.Errorf("%d calls, want %d", calls, tt.wantCalls)
			}
			if tt.wantErr {
				return
			}
			if len(posts) != 1 || len(posts[0]) != 2 {
				t.Fatalf("posts = %+v", posts)
			}
			fir, res := posts[0][0], posts[0][1]
			if fir.Labels["id"] != "a" || fir.Annotations["summary"] != "s a" || fir.GeneratorURL != "http://skewlens/x" || !fir.EndsAt.After(time.Now().Add(time.Hour)) {
				t.Errorf("firing alert posted as %+v (want endsAt 4h ahead)", fir)
			}
			if res.Labels["id"] != "b" || !res.EndsAt.Before(time.Now()) {
				t.Errorf("resolved alert posted as %+v (want endsAt in the past)", res)
			}
		})
	}
}

// TestResend checks that firing alerts are re-posted with a fresh endsAt
// until they resolve, and not after.
func TestResend(t *testing.T) {
	f := &fakeAM{}
	reg := prometheus.NewRegistry()
	n := newTest(t, f, Config{ResendInterval: 20 * time.Millisecond}, reg)
	if err := n.Notify(context.Background(), []alert.Alert{testAlert("a", alert.StatusFiring), testAlert("b", alert.StatusFiring)}); err != nil {
		t.Fatal(err)
	}
	resends := func() float64 { return testutil.ToFloat64(n.m.resends.WithLabelValues("ok")) }
	testenv.Eventually(t, 5*time.Second, "re-posts", func() bool { return resends() >= 3 })
	_, posts := f.snapshot()
	last := posts[len(posts)-1]
	if len(last) != 2 || last[0].Labels["id"] != "a" || last[1].Labels["id"] != "b" {
		t.Fatalf("re-post = %+v, want a and b", last)
	}
	if !last[0].EndsAt.After(posts[0][0].EndsAt) {
		t.Errorf("re-post endsAt %v not after the first %v", last[0].EndsAt, posts[0][0].EndsAt)
	}
	if err := n.Notify(context.Background(), []alert.Alert{testAlert("a", alert.StatusResolved)}); err != nil {
		t.Fatal(err)
	}
	if got := n.Active(); len(got) != 1 || got[0] != "b" {
		t.Errorf("active = %v, want [b]", got)
	}
	if g := testutil.ToFloat64(n.m.active); g != 1 {
		t.Errorf("active gauge = %v, want 1", g)
	}
	// A re-post holds the lock Notify held: those from now on are
	// after the resolve.
	_, before := f.snapshot()
	since := resends()
	testenv.Eventually(t, 5*time.Second, "two re-posts after the resolve", func() bool { return resends() >= since+2 })
	_, after := f.snapshot()
	for _, p := range after[len(before):] {
		for _, a := range p {
			if a.Labels["id"] == "a" {
				t.Fatalf("resolved alert a re-posted as firing: %+v", a)
			}
		}
	}
	if len(after) == len(before) {
		t.Error("b not re-posted")
	}
	_ = n.Close()
	_ = n.Close()
	// Close returns once the re-posting goroutine has ended: no re-post
	// can follow.
	select {
	case <-n.done:
	default:
		t.Error("Close returned with the re-posting goroutine running")
	}
}

func TestMaxActive(t *testing.T) {
	f := &fakeAM{}
	n := newTest(t, f, Config{MaxActive: 1, ResendInterval: time.Hour}, nil)
	if err := n.Notify(context.Background(), []alert.Alert{testAlert("a", alert.StatusFiring), testAlert("b", alert.StatusFiring)}); err != nil {
		t.Fatal(err)
	}
	if u := testutil.ToFloat64(n.m.untracked); u != 1 {
		t.Errorf("untracked = %v, want 1", u)
	}
	if _, posts := f.snapshot(); len(posts) != 1 || len(posts[0]) != 2 {
		t.Errorf("both alerts must still be posted once: %+v", posts)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tt := range []struct {
		cfg     Config
		wantErr string
	}{
		{Config{URL: "http://am:9093"}, ""},
		{Config{}, "url"},
		{Config{URL: "http://am", ResendInterval: time.Minute, EndsAfter: time.Second}, "ends after"},
		{Config{URL: "http://am", Timeout: -1}, "timeout"},
	} {
		err := tt.cfg.withDefaults().Validate() // as New sees it
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.cfg, err, tt.wantErr)
		}
	}
	c := Config{URL: "http://am"}
	if err := c.Validate(); err == nil {
		t.Errorf("Validate accepted %+v without defaults", c)
	}
	c = c.withDefaults()
	if err := c.Validate(); err != nil || c.EndsAfter != 4*time.Minute || c.ResendInterval != time.Minute {
		t.Errorf("defaults: %+v, %v", c, err)
	}
	d := DefaultConfig()
	d.URL = c.URL
	if !reflect.DeepEqual(c, d) {
		t.Errorf("zero fields filled with %+v, want DefaultConfig %+v", c, d)
	}
	if c := (Config{URL: "http://am", ResendInterval: time.Second}).withDefaults(); c.EndsAfter != 4*time.Second {
		t.Errorf("EndsAfter %s for a 1s resend interval, want 4s", c.EndsAfter)
	}
}
