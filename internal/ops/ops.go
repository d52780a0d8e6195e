package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/skewlens/skewlens/internal/knob"
)

// Config configures a Server. Its tags declare each setting once
// (internal/knob).
type Config struct {
	// Listen is the address to serve on (":0" or a port of 0 picks a free
	// one, see Addr).
	Listen string `name:"listen" default:"127.0.0.1:9464" range:"[1,]" help:"Address of /metrics, /healthz, /readyz and /debug/pprof."`
	// ReadyTimeout bounds each readiness check.
	ReadyTimeout time.Duration `kong:"-" default:"2s" range:"(0s,]"`
}

// DefaultConfig returns the defaults the tags declare.
func DefaultConfig() Config { return knob.Defaults[Config]() }

// Validate reports every invalid field; it changes nothing.
func (c Config) Validate() error {
	if err := knob.Check(c); err != nil {
		return fmt.Errorf("ops config: %w", err)
	}
	return nil
}

// Check reports whether one dependency is ready. Its error's text is what
// GET /readyz shows for it, to any client.
type Check func(ctx context.Context) error

// Route is one endpoint: method, path pattern (net/http syntax) and
// handler.
type Route struct {
	Method, Pattern string
	Handler         http.HandlerFunc
}

// Endpoints is the one implementation of GET /metrics, /healthz and
// /readyz, with the readiness checks /readyz runs. The ops Server serves
// it; another server (skewlens serve's API) mounts its Routes beside its
// own.
type Endpoints struct {
	metrics      http.Handler
	readyTimeout time.Duration
	mu           sync.Mutex
	checks       map[string]Check
}

// NewEndpoints returns the endpoints serving the metrics gathered by g,
// with no readiness check yet; readyTimeout (positive) bounds each check.
func NewEndpoints(g prometheus.Gatherer, readyTimeout time.Duration) *Endpoints {
	return &Endpoints{
		metrics:      promhttp.HandlerFor(g, promhttp.HandlerOpts{}),
		readyTimeout: readyTimeout,
		checks:       map[string]Check{},
	}
}

// AddCheck registers a readiness check under name, replacing the one of
// that name.
func (e *Endpoints) AddCheck(name string, c Check) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.checks[name] = c
}

// Routes returns GET /metrics, /healthz and /readyz.
func (e *Endpoints) Routes() []Route {
	return []Route{
		{http.MethodGet, "/metrics", e.metrics.ServeHTTP},
		{http.MethodGet, "/healthz", healthz},
		{http.MethodGet, "/readyz", e.ready},
	}
}

// healthBody is the /healthz answer of every skewlens process.
const healthBody = `{"status":"ok"}` + "\n"

// healthz answers that the process is alive: it checks nothing else.
func healthz(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, healthBody)
}

// readyBody is the /readyz answer: "ready" with every check "ok", or
// "not ready" with the failed checks' errors.
type readyBody struct {
	Status string            `json:"status"`
	Checks map[string]string `json:"checks"`
}

// ready runs every check, each bounded by readyTimeout, and answers 200
// when all pass, else 503.
func (e *Endpoints) ready(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	checks := maps.Clone(e.checks)
	e.mu.Unlock()
	body := readyBody{Status: "ready", Checks: make(map[string]string, len(checks))}
	status := http.StatusOK
	for n, check := range checks {
		ctx, cancel := context.WithTimeout(r.Context(), e.readyTimeout)
		err := check(ctx)
		cancel()
		if err != nil {
			status, body.Status, body.Checks[n] = http.StatusServiceUnavailable, "not ready", err.Error()
			continue
		}
		body.Checks[n] = "ok"
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body) // map keys are written sorted
}

// Server is the ops HTTP server: the Endpoints and Go's profiles on a
// listener of their own.
type Server struct {
	cfg  Config
	log  *slog.Logger
	ep   *Endpoints
	srv  *http.Server
	ln   net.Listener
	stop sync.Once
}

// New validates cfg, listens on cfg.Listen and serves the metrics
// gathered by g. log may be nil to discard the Server's log records.
func New(cfg Config, log *slog.Logger, g prometheus.Gatherer) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("ops listen %s: %w", cfg.Listen, err)
	}
	s := &Server{cfg: cfg, log: log, ln: ln, ep: NewEndpoints(g, cfg.ReadyTimeout)}
	mux := http.NewServeMux()
	for _, rt := range s.ep.Routes() {
		mux.Handle(rt.Method+" "+rt.Pattern, rt.Handler)
	}
	// Go's profiles (heap, CPU, goroutines), as Prometheus and
	// VictoriaMetrics serve them: what an operator needs when memory or
	// CPU grows. The listener is loopback by default (the command line
	// and heap are the process's own; no secret is passed as a flag).
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// AddCheck registers a readiness check under name (Endpoints.AddCheck).
func (s *Server) AddCheck(name string, c Check) { s.ep.AddCheck(name, c) }

// Serve serves until Stop; it returns nil after Stop.
func (s *Server) Serve() error {
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("ops serve: %w", err)
	}
	return nil
}

// Stop shuts the server down, waiting up to 5 s for requests in flight.
// It is safe to call more than once.
func (s *Server) Stop() {
	s.stop.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(ctx)
	})
}
