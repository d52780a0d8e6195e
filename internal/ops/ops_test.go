package ops

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// header returns the named header of the answer to GET url.
func header(t *testing.T, url, name string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.Header.Get(name)
}

func TestEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "skewlens_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Add(3)
	cfg := DefaultConfig()
	cfg.Listen = "127.0.0.1:0"
	s, err := New(cfg, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve()
	defer s.Stop()
	base := "http://" + s.Addr()
	// The same answer as skewlens serve's /healthz (serve's TestLifecycle).
	if code, body := get(t, base+"/healthz"); code != 200 || body != `{"status":"ok"}`+"\n" {
		t.Errorf("healthz %d %q", code, body)
	}
	if ct := header(t, base+"/healthz", "Content-Type"); ct != "application/json" {
		t.Errorf("healthz Content-Type %q, want application/json", ct)
	}
	if code, body := get(t, base+"/metrics"); code != 200 || !strings.Contains(body, "skewlens_test_total 3") {
		t.Errorf("metrics %d %q", code, body)
	}
	// Go's profiles, for an operator whose instance grows.
	if code, body := get(t, base+"/debug/pprof/heap?debug=1"); code != 200 || !strings.Contains(body, "heap profile") {
		t.Errorf("heap profile %d %.80q", code, body)
	}
	if code, body := get(t, base+"/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("profile index %d %.80q", code, body)
	}
	ready := errors.New("clickhouse: connection refused")
	s.AddCheck("kafka", func(context.Context) error { return nil })
	s.AddCheck("clickhouse", func(context.Context) error { return ready })
	const notReady = `{"status":"not ready","checks":{"clickhouse":"clickhouse: connection refused","kafka":"ok"}}` + "\n"
	if code, body := get(t, base+"/readyz"); code != 503 || body != notReady {
		t.Errorf("readyz %d %q, want 503 %q", code, body, notReady)
	}
	if ct := header(t, base+"/readyz", "Content-Type"); ct != "application/json" {
		t.Errorf("readyz Content-Type %q, want application/json", ct)
	}
	ready = nil
	s.AddCheck("clickhouse", func(context.Context) error { return nil })
	const isReady = `{"status":"ready","checks":{"clickhouse":"ok","kafka":"ok"}}` + "\n"
	if code, body := get(t, base+"/readyz"); code != 200 || body != isReady {
		t.Errorf("readyz %d %q after recovery, want 200 %q", code, body, isReady)
	}
	s.Stop()
	s.Stop()
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     func() Config
		wantErr string // "" means valid
	}{
		{"defaults", DefaultConfig, ""},
		{"empty listen", func() Config { c := DefaultConfig(); c.Listen = ""; return c }, "listen"},
		{"zero ready timeout", func() Config { c := DefaultConfig(); c.ReadyTimeout = 0; return c }, "ready timeout"},
		{"negative ready timeout", func() Config { c := DefaultConfig(); c.ReadyTimeout = -time.Second; return c }, "ready timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg().Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one about %q", err, tt.wantErr)
			}
			if _, err := New(tt.cfg(), nil, prometheus.NewRegistry()); err == nil {
				t.Fatal("New accepted the config")
			}
		})
	}
	if d := DefaultConfig(); d.Listen != "127.0.0.1:9464" || d.ReadyTimeout != 2*time.Second {
		t.Errorf("defaults: %+v", d)
	}
}

// TestEndpointsMounted: another server mounts the Routes (as skewlens
// serve's API does) and answers as the ops Server does; the profiles are
// the ops Server's alone.
func TestEndpointsMounted(t *testing.T) {
	e := NewEndpoints(prometheus.NewRegistry(), 50*time.Millisecond)
	mux := http.NewServeMux()
	var patterns []string
	for _, rt := range e.Routes() {
		mux.Handle(rt.Method+" "+rt.Pattern, rt.Handler)
		patterns = append(patterns, rt.Method+" "+rt.Pattern)
	}
	if want := []string{"GET /metrics", "GET /healthz", "GET /readyz"}; !slices.Equal(patterns, want) {
		t.Errorf("routes %v, want %v", patterns, want)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	if code, body := get(t, srv.URL+"/healthz"); code != 200 || body != `{"status":"ok"}`+"\n" {
		t.Errorf("healthz %d %q", code, body)
	}
	if code, _ := get(t, srv.URL+"/debug/pprof/"); code != 404 {
		t.Errorf("profiles mounted with the routes: %d", code)
	}
	e.AddCheck("store", func(ctx context.Context) error {
		<-ctx.Done() // bounded by the ready timeout
		return errors.New("the store does not answer")
	})
	const notReady = `{"status":"not ready","checks":{"store":"the store does not answer"}}` + "\n"
	if code, body := get(t, srv.URL+"/readyz"); code != 503 || body != notReady {
		t.Errorf("readyz %d %q, want 503 %q", code, body, notReady)
	}
}
