package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/keygroup"
	"github.com/skewlens/skewlens/skew/plans"
)

// fakeStore is an in-memory Store for the unit tests.
type fakeStore struct {
	mu        sync.Mutex
	plans     []plans.Plan
	overrides []plans.Override
	audit     []servestore.AuditEntry
	findings  []json.RawMessage
	lastQuery servestore.FindingsQuery
	stats     []json.RawMessage
	lastStats servestore.StatsQuery
	calls     map[string]int
	// err, when set, fails every call; block, when set, makes calls wait
	// for it to be closed (or their context to end).
	err   error
	block chan struct{}
}

func newFakeStore(ps ...plans.Plan) *fakeStore {
	return &fakeStore{plans: ps, calls: map[string]int{}}
}

func (f *fakeStore) enter(ctx context.Context, op string) error {
	f.mu.Lock()
	f.calls[op]++
	block, err := f.block, f.err
	f.mu.Unlock()
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

func (f *fakeStore) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *fakeStore) Ping(ctx context.Context) error { return f.enter(ctx, "ping") }

func (f *fakeStore) CurrentPlans(ctx context.Context, now time.Time) ([]plans.Plan, error) {
	if err := f.enter(ctx, "plans"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []plans.Plan
	for _, p := range f.plans {
		if p.ExpiresAt.IsZero() || p.ExpiresAt.After(now) {
			out = append(out, p)
		}
	}
	return out, nil
}

func (f *fakeStore) Plan(ctx context.Context, job, task string, now time.Time) (*plans.Plan, error) {
	ps, err := f.CurrentPlans(ctx, now)
	for i := range ps {
		if ps[i].JobID == job && ps[i].TaskName == task {
			return &ps[i], err
		}
	}
	return nil, err
}

func (f *fakeStore) Overrides(ctx context.Context) ([]plans.Override, error) {
	if err := f.enter(ctx, "overrides"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.overrides), nil
}

func (f *fakeStore) PutOverride(ctx context.Context, o plans.Override, a servestore.AuditEntry) error {
	if err := f.enter(ctx, "put"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.audit = append(f.audit, a)
	f.overrides = slices.DeleteFunc(f.overrides, func(x plans.Override) bool {
		return x.JobID == o.JobID && x.TaskName == o.TaskName && x.Action == o.Action && x.Key == o.Key
	})
	f.overrides = append(f.overrides, o)
	return nil
}

func (f *fakeStore) DeleteOverride(ctx context.Context, job, task, action, key string, a servestore.AuditEntry) error {
	if err := f.enter(ctx, "delete"); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.audit = append(f.audit, a)
	f.overrides = slices.DeleteFunc(f.overrides, func(x plans.Override) bool {
		return x.JobID == job && x.TaskName == task && x.Action == action && x.Key == key
	})
	return nil
}

func (f *fakeStore) Audit(ctx context.Context, job string, limit int) ([]servestore.AuditEntry, error) {
	if err := f.enter(ctx, "audit"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []servestore.AuditEntry
	for i := len(f.audit) - 1; i >= 0 && len(out) < limit; i-- {
		if job == "" || f.audit[i].JobID == job {
			out = append(out, f.audit[i])
		}
	}
	return out, nil
}

func (f *fakeStore) Findings(ctx context.Context, q servestore.FindingsQuery) ([]json.RawMessage, error) {
	if err := f.enter(ctx, "findings"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastQuery = q
	return f.findings[:min(len(f.findings), q.Limit)], nil
}

func (f *fakeStore) Stats(ctx context.Context, q servestore.StatsQuery) ([]json.RawMessage, error) {
	if err := f.enter(ctx, "stats"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastStats = q
	return f.stats[:min(len(f.stats), q.Limit)], nil
}

// allStore is one value that is every part of a Store, as fakeStore is.
type allStore interface {
	servestore.Pinger
	servestore.PlanReader
	servestore.OverrideWriter
	servestore.AuditReader
	servestore.FindingReader
	servestore.StatsReader
}

var _ allStore = (*fakeStore)(nil)

// storeOf returns the Store whose every part is a.
func storeOf(a allStore) servestore.Store {
	return servestore.Store{Ready: a, Plans: a, Overrides: a, Audit: a, Findings: a, Stats: a}
}

// testPlan returns a valid engine plan for job and task with two buckets
// per key, routed as Flink routes them at parallelism 4 / 128.
func testPlan(job, task string, version uint64, updated time.Time, keys ...string) plans.Plan {
	r := keygroup.Router{Parallelism: 4, MaxParallelism: 128}
	p := plans.Plan{
		JobID: job, TaskName: task, Parallelism: 4, MaxParallelism: 128, Version: version,
		GeneratedAt: updated.UTC(), UpdatedAt: updated.UTC(), ExpiresAt: updated.Add(time.Hour).UTC(),
		Separator: "#", Source: plans.SourceEngine, MaxOverMeanBefore: 2, MaxOverMeanAfter: 1.1,
	}
	slices.Sort(keys)
	for _, k := range keys {
		hk := plans.HotKey{Key: k, Share: 0.25, Subtask: r.Subtask(k), Buckets: 2, LastHotAt: updated.UTC(),
			PredictedLoadBefore: 1, PredictedLoadAfter: 0.5}
		for b := 0; b < 2; b++ {
			sk := fmt.Sprintf("%s#%d", k, b)
			kg, st := r.Route(keygroup.StringHash(sk))
			hk.Salted = append(hk.Salted, skew.SaltTarget{Key: sk, KeyGroup: kg, Subtask: st})
		}
		p.HotKeys = append(p.HotKeys, hk)
	}
	return p
}

// Test tokens.
const (
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-9876543210ab"
)

// newTestServer returns a Server on store with two tokens (alice, bob)
// unless cfg has its own, and its registry. It is stopped when the test
// ends.
func newTestServer(t *testing.T, cfg Config, store allStore) (*Server, *prometheus.Registry) {
	t.Helper()
	return newStoreServer(t, cfg, storeOf(store))
}

// newStoreServer is newTestServer on a Store made of parts.
func newStoreServer(t *testing.T, cfg Config, store servestore.Store) (*Server, *prometheus.Registry) {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Tokens == nil {
		cfg.Tokens = map[string]string{"alice": aliceToken, "bob": bobToken}
	}
	reg := prometheus.NewRegistry()
	s, err := New(cfg, store, slog.New(slog.NewTextHandler(io.Discard, nil)), reg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(s.Stop)
	return s, reg
}

// request is one HTTP exchange against a handler.
type request struct {
	method, target, token, body string
	header                      map[string]string
}

type response struct {
	code   int
	header http.Header
	body   string
}

func do(t *testing.T, h http.Handler, rq request) response {
	t.Helper()
	var body io.Reader
	if rq.body != "" {
		body = strings.NewReader(rq.body)
	}
	req := httptest.NewRequest(rq.method, rq.target, body)
	if rq.token != "" {
		req.Header.Set("Authorization", "Bearer "+rq.token)
	}
	for k, v := range rq.header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{code: rec.Code, header: rec.Header(), body: rec.Body.String()}
}

// errorOf returns the error message of a JSON error body ("" if none).
func errorOf(t *testing.T, r response) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.body), &e); err != nil {
		t.Fatalf("error body %q is not JSON: %v", r.body, err)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("error Content-Type %q", ct)
	}
	return e.Error
}
