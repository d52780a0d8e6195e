package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/internal/ops"
	"github.com/skewlens/skewlens/serve/webui"
	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew/plans"
)

// Registry is where the Server registers its metrics and what GET
// /metrics serves, usually the process's one *prometheus.Registry (which
// the ClickHouse sink registers with too).
type Registry interface {
	prometheus.Registerer
	prometheus.Gatherer
}

// Server is the skewlens HTTP API. Create it with New, then Run it.
type Server struct {
	cfg       Config
	store     servestore.Store
	log       *slog.Logger
	m         *metrics
	endpoints *ops.Endpoints // GET /metrics, /healthz, /readyz
	tokens    []token
	snaps     *snapshots
	queries   chan struct{} // semaphore of MaxConcurrentQueries
	writes    chan struct{} // one slot: serialises writes, context-aware
	clock     *clock
	authLog   *authLog
	handler   http.Handler
	ln        net.Listener
	srv       *http.Server
	tls       bool

	mu       sync.Mutex
	started  bool
	stopped  bool
	stopCh   chan struct{}
	stopOnce sync.Once
	runDone  chan struct{}
}

// New validates cfg, whose zero fields mean their defaults
// (DefaultConfig), reads the TLS key pair if one is configured,
// registers the metrics with reg (nil: a registry of the Server's own)
// and listens on cfg.Addr. It does not serve until Run. log may be nil to
// discard the Server's log records.
func New(cfg Config, store servestore.Store, log *slog.Logger, reg Registry) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkStore(store); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, store: store, log: log, m: m,
		endpoints: ops.NewEndpoints(reg, cfg.StoreTimeout),
		tokens:    newTokens(cfg.Tokens),
		queries:   make(chan struct{}, cfg.MaxConcurrentQueries),
		writes:    make(chan struct{}, 1),
		clock:     &clock{now: time.Now},
		authLog:   &authLog{log: log, interval: AuthFailureLogInterval, now: time.Now},
		stopCh:    make(chan struct{}),
		runDone:   make(chan struct{}),
	}
	s.endpoints.AddCheck("store", s.storeReady)
	s.snaps = &snapshots{
		ttl: cfg.CacheTTL, timeout: cfg.StoreTimeout, now: time.Now, m: m,
		build: func(ctx context.Context) (snap *snapshot, err error) {
			err = s.call(ctx, "snapshot", func(ctx context.Context) (err error) {
				snap, err = buildSnapshot(ctx, store, time.Now())
				return err
			})
			return snap, err
		},
	}
	page, err := webui.Handler()
	if err != nil {
		return nil, err
	}
	s.handler = s.buildHandler(page)
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: cfg.ReadHeaderTimeout,
		ReadTimeout:       cfg.ReadTimeout,
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	if cfg.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
		if err != nil {
			return nil, fmt.Errorf("serve: tls key pair: %w", err)
		}
		s.srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
		s.tls = true
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("serve: listen %s: %w", cfg.Addr, err)
	}
	s.ln = ln
	return s, nil
}

// checkStore reports a field of store left nil (Incidents may be).
func checkStore(s servestore.Store) error {
	if s.Ready == nil || s.Plans == nil || s.Overrides == nil || s.Audit == nil || s.Findings == nil || s.Stats == nil {
		return errors.New("serve: store incomplete (nil Ready, Plans, Overrides, Audit, Findings or Stats)")
	}
	return nil
}

// Addr returns the address the Server listens on, e.g. "127.0.0.1:8080".
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Handler returns the Server's routes, with the same metrics, limits and
// JSON errors as when it runs.
func (s *Server) Handler() http.Handler { return s.handler }

// Run serves until ctx ends or Stop is called, then shuts down
// gracefully: it stops accepting, waits up to Config.ShutdownTimeout for
// requests in flight and then cuts them. It returns nil after a clean
// shutdown (also when Stop came before Run), and an error when serving
// failed or Run was called before.
func (s *Server) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("serve: Run called twice")
	}
	s.started = true
	stopped := s.stopped
	s.mu.Unlock()
	defer close(s.runDone)
	if stopped {
		return nil
	}
	errc := make(chan error, 1)
	go func() {
		if s.tls {
			errc <- s.srv.ServeTLS(s.ln, "", "")
		} else {
			errc <- s.srv.Serve(s.ln)
		}
	}()
	s.log.Info("skewlens API serving", "addr", s.Addr(), "tls", s.tls, "write_tokens", len(s.tokens))
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	case <-s.stopCh:
	}
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	if err != nil {
		_ = s.srv.Close()
	}
	<-errc
	s.log.Info("skewlens API stopped", "addr", s.Addr())
	if err != nil {
		return fmt.Errorf("serve: graceful shutdown: %w", err)
	}
	return nil
}

// Stop makes Run shut down and waits until it has returned; before Run
// it closes the listener, and Run then returns at once. It is safe to
// call more than once and from several goroutines.
func (s *Server) Stop() {
	s.stopOnce.Do(func() { close(s.stopCh) })
	s.mu.Lock()
	started := s.started
	first := !s.stopped
	s.stopped = true
	s.mu.Unlock()
	if started {
		<-s.runDone
		return
	}
	if first {
		_ = s.ln.Close()
	}
}

// route is one endpoint: method, path pattern (net/http syntax, which is
// also OpenAPI's path template syntax) and handler.
type route struct {
	method, pattern string
	handler         http.HandlerFunc
}

// routes lists every endpoint; docs/openapi.yaml describes exactly these
// (a test checks). GET /metrics, /healthz and /readyz are package ops's.
func (s *Server) routes() []route {
	rs := []route{
		{http.MethodGet, "/v1/salting", s.getPlans},
		{http.MethodGet, "/v1/salting/{job_id}/{task_name}", s.getPlan},
		{http.MethodPost, "/v1/salting/{job_id}/{task_name}/pin", s.postOverride(plans.ActionPin)},
		{http.MethodPost, "/v1/salting/{job_id}/{task_name}/override", s.postOverride(plans.ActionOverride)},
		{http.MethodPost, "/v1/salting/{job_id}/{task_name}/exclude", s.postOverride(plans.ActionExclude)},
		{http.MethodDelete, "/v1/salting/{job_id}/{task_name}/overrides/{action}", s.deleteOverride},
		{http.MethodGet, "/v1/findings", s.getFindings},
		{http.MethodGet, "/v1/incidents", s.getIncidents},
		{http.MethodGet, "/v1/actions/{job_id}", s.getActions},
		{http.MethodGet, "/v1/stats", s.getStats},
		{http.MethodGet, "/v1/audit", s.getAudit},
	}
	for _, rt := range s.endpoints.Routes() {
		rs = append(rs, route{rt.Method, rt.Pattern, rt.Handler})
	}
	return rs
}

// buildHandler registers the routes, each instrumented, and the web view
// page (GET / and its assets under /ui/, package webui: not part of the
// API, so not in routes), and answers what matches none (404, 405) with a
// JSON error too.
func (s *Server) buildHandler(page http.Handler) http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.routes() {
		mux.Handle(rt.method+" "+rt.pattern, s.instrument(rt.pattern, rt.handler))
	}
	mux.Handle("GET /{$}", s.instrument(webui.PagePath, page.ServeHTTP))
	mux.Handle("GET "+webui.AssetPrefix, s.instrument(webui.AssetPrefix, page.ServeHTTP))
	unmatched := s.instrument("unmatched", func(w http.ResponseWriter, r *http.Request) {
		h, _ := mux.Handler(r)
		h.ServeHTTP(&jsonErrors{ResponseWriter: w}, r)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			unmatched.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// jsonErrors turns the plain-text errors of http.ServeMux (404, 405) into
// JSON errors; redirects pass through.
type jsonErrors struct {
	http.ResponseWriter
	replaced bool
}

func (w *jsonErrors) WriteHeader(code int) {
	if code >= 400 {
		w.replaced = true
		msg := "no such endpoint"
		if code == http.StatusMethodNotAllowed {
			msg = "method not allowed (see the Allow header)"
		}
		writeError(w.ResponseWriter, code, msg)
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *jsonErrors) Write(b []byte) (int, error) {
	if w.replaced {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// statusRecorder remembers the status code written.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// instrument counts and times requests by route and turns a panic into a
// 500 instead of a dropped connection.
func (s *Server) instrument(route string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("skewlens API: handler panicked", "route", route, "panic", v)
				if rec.code == 0 {
					writeError(rec, http.StatusInternalServerError, "internal error")
				}
			}
			code := rec.code
			if code == 0 {
				code = http.StatusOK
			}
			s.m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
			s.m.duration.WithLabelValues(route).Observe(time.Since(start).Seconds())
		}()
		h(rec, r)
	})
}

// clock hands out change times for overrides: strictly increasing, and
// later than the time of the override a change replaces, so the change
// wins in the store even when clocks of several servers disagree.
type clock struct {
	now  func() time.Time
	mu   sync.Mutex
	last time.Time
}

// next returns a time after both the last one handed out and after.
func (c *clock) next(after time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now().UTC().Round(0)
	if !t.After(c.last) {
		t = c.last.Add(time.Nanosecond)
	}
	if !t.After(after) {
		t = after.UTC().Add(time.Nanosecond)
	}
	c.last = t
	return t
}
