package serve

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/internal/testenv"
)

// set changes what the fake store does: err fails every call,
// block makes calls wait (nil: neither).
func (f *fakeStore) set(err error, block chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err, f.block = err, block
}

// TestStaleSnapshot: while the store is unavailable, the plan endpoints
// answer from the last good snapshot with Warning 110 and
// X-Skewlens-Stale-Since, at once after the first failed refresh, and
// answer fresh again, without those headers, once the store is back. A
// permanent store error is no outage: it is answered as before.
func TestStaleSnapshot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// outage makes the store fail: by an error, or by not answering.
		err   error
		block bool
		// want is the status of GET /v1/salting during the outage.
		want      int
		wantStale bool
	}{
		{"unavailable", errors.New("connection refused"), false, 200, true},
		{"not answering", nil, true, 200, true},
		{"permanent error", retry.Permanent("read", errors.New("no such table")), false, 500, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := newFakeStore(testPlan(jobID, "T", 1, time.Now(), "k"))
			const timeout = 300 * time.Millisecond
			s, _ := newTestServer(t, Config{StoreTimeout: timeout, CacheTTL: -1}, store)
			h := s.Handler()
			fresh := do(t, h, request{method: "GET", target: "/v1/salting"})
			task := do(t, h, request{method: "GET", target: "/v1/salting/" + jobID + "/T"})
			if fresh.code != 200 || task.code != 200 || fresh.header.Get("Warning") != "" || fresh.header.Get(HeaderStaleSince) != "" {
				t.Fatalf("before the outage: %d %d, headers %v", fresh.code, task.code, fresh.header)
			}

			before := time.Now()
			var block chan struct{}
			if tt.block {
				block = make(chan struct{})
			}
			store.set(tt.err, block)
			first := do(t, h, request{method: "GET", target: "/v1/salting"})
			if first.code != tt.want {
				t.Fatalf("first request of the outage: %d %s, want %d", first.code, first.body, tt.want)
			}
			if !tt.wantStale {
				if first.header.Get("Warning") != "" || first.header.Get(HeaderStaleSince) != "" {
					t.Errorf("permanent error answered with stale headers: %v", first.header)
				}
				return
			}
			// Later requests: at once, from the last good snapshot.
			begin := time.Now()
			rs := map[string]response{
				"all":      do(t, h, request{method: "GET", target: "/v1/salting"}),
				"task":     do(t, h, request{method: "GET", target: "/v1/salting/" + jobID + "/T"}),
				"no task":  do(t, h, request{method: "GET", target: "/v1/salting/" + jobID + "/nope"}),
				"if match": do(t, h, request{method: "GET", target: "/v1/salting", header: map[string]string{"If-None-Match": fresh.header.Get("ETag")}}),
				"first":    first,
			}
			if took := time.Since(begin); took >= timeout {
				t.Errorf("4 requests during the outage took %s: they waited for the store (timeout %s)", took, timeout)
			}
			wantCode := map[string]int{"all": 200, "task": 200, "no task": 404, "if match": 304, "first": 200}
			wantBody := map[string]string{"all": fresh.body, "task": task.body, "first": fresh.body}
			for name, r := range rs {
				if r.code != wantCode[name] {
					t.Errorf("%s: %d %s, want %d", name, r.code, r.body, wantCode[name])
				}
				if b, ok := wantBody[name]; ok && r.body != b {
					t.Errorf("%s: body %s, want the last good one %s", name, r.body, b)
				}
				since, err := time.Parse(time.RFC3339, r.header.Get(HeaderStaleSince))
				if err != nil || since.Before(before.Add(-time.Second)) || since.After(time.Now()) {
					t.Errorf("%s: %s %q (%v), want the outage's start, about %s", name, HeaderStaleSince, r.header.Get(HeaderStaleSince), err, before.UTC().Format(time.RFC3339))
				}
				if w := r.header.Get("Warning"); !strings.HasPrefix(w, `110 - "stale: `) || !strings.Contains(w, r.header.Get(HeaderStaleSince)) {
					t.Errorf("%s: Warning %q", name, w)
				}
				if r.code == 200 && r.header.Get("Cache-Control") != "no-cache" {
					t.Errorf("%s: Cache-Control %q for a stale answer", name, r.header.Get("Cache-Control"))
				}
			}
			if n := testutil.ToFloat64(s.m.snapshots.WithLabelValues("stale")); n < 5 {
				t.Errorf("snapshot_total{result=stale} = %v, want at least 5", n)
			}
			// Other endpoints have no snapshot to fall back on.
			if r := do(t, h, request{method: "GET", target: "/readyz"}); r.code != 503 {
				t.Errorf("readyz during the outage: %d", r.code)
			}

			// The store is back: fresh answers again, once the refresh
			// running in the background has found it.
			store.set(nil, nil)
			if block != nil {
				close(block)
			}
			var r response
			testenv.Eventually(t, 10*time.Second, "a fresh answer after the store came back", func() bool {
				r = do(t, h, request{method: "GET", target: "/v1/salting"})
				return r.code == 200 && r.header.Get("Warning") == "" && r.header.Get(HeaderStaleSince) == ""
			})
			if r.body != fresh.body {
				t.Errorf("after the outage: %s, want %s", r.body, fresh.body)
			}
		})
	}
}

// TestWriteEndsStaleness: a write through the server that succeeds shows
// the store is back, so the next read waits for the store and sees the
// write, rather than answer the stale snapshot from before it.
func TestWriteEndsStaleness(t *testing.T) {
	t.Parallel()
	store := newFakeStore(testPlan(jobID, "T", 1, time.Now(), "k"))
	s, _ := newTestServer(t, Config{StoreTimeout: 200 * time.Millisecond, CacheTTL: -1}, store)
	h := s.Handler()
	fresh := do(t, h, request{method: "GET", target: "/v1/salting/" + jobID + "/T"})
	store.set(errors.New("connection refused"), nil)
	if r := do(t, h, request{method: "GET", target: "/v1/salting/" + jobID + "/T"}); r.code != 200 || r.header.Get(HeaderStaleSince) == "" {
		t.Fatalf("during the outage: %d %v", r.code, r.header)
	}
	// The store is back, but no refresh has found out yet when the write
	// comes; the snapshot stays stale until a read succeeds.
	store.set(nil, nil)
	if r := do(t, h, request{method: "POST", target: "/v1/salting/" + jobID + "/T/exclude", token: aliceToken,
		body: `{"key":"k","reason":"bot"}`}); r.code/100 != 2 {
		t.Fatalf("exclude: %d %s", r.code, r.body)
	}
	r := do(t, h, request{method: "GET", target: "/v1/salting/" + jobID + "/T"})
	if r.header.Get(HeaderStaleSince) != "" || r.header.Get("Warning") != "" || r.body == fresh.body {
		t.Errorf("read after a successful write: %d %v %s, want the fresh plan without the excluded key", r.code, r.header, r.body)
	}
}
