package serve

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew/plans"
)

// TestPlanLineage: a new run of a job (a new id, the same name) that asks
// with its job name and parallelism pair gets its job's newest plan until
// it has one of its own (issue 32).
func TestPlanLineage(t *testing.T) {
	t.Parallel()
	const newRun = "ffe678ee000000000000000000000000"
	now := time.Now().UTC().Truncate(time.Second)
	old := testPlan(jobID, "Agg/1", 7, now, "user-42")
	old.JobName = "orders & co"
	other := testPlan("0b", "Agg/1", 2, now, "k")
	other.JobName = "payments"
	store := newFakeStore(old, other)
	s, _ := newTestServer(t, Config{CacheTTL: -1}, store)
	h := s.Handler()
	path := "/v1/salting/" + newRun + "/" + url.PathEscape("Agg/1")
	query := func(name string, par, maxPar string) string {
		return path + "?job_name=" + url.QueryEscape(name) + "&parallelism=" + par + "&max_parallelism=" + maxPar
	}

	r := do(t, h, request{method: "GET", target: query("orders & co", "4", "128")})
	if r.code != 200 {
		t.Fatalf("lineage GET: %d %s", r.code, r.body)
	}
	var p plans.Plan
	if err := json.Unmarshal([]byte(r.body), &p); err != nil || p.JobID != jobID || p.Version != 7 {
		t.Errorf("lineage answer = %+v, %v; want v7 of %s", p, err, jobID)
	}
	if got := r.header.Get(HeaderLineage); got != jobID {
		t.Errorf("%s = %q, want %q", HeaderLineage, got, jobID)
	}
	own := do(t, h, request{method: "GET", target: "/v1/salting/" + jobID + "/" + url.PathEscape("Agg/1")})
	if own.body != r.body || own.header.Get("ETag") != r.header.Get("ETag") {
		t.Error("the lineage answer is not the old run's plan as served to it")
	}
	if own.header.Get(HeaderLineage) != "" {
		t.Errorf("the run's own plan is marked %s", HeaderLineage)
	}
	if r := do(t, h, request{method: "GET", target: query("orders & co", "4", "128"),
		header: map[string]string{"If-None-Match": own.header.Get("ETag")}}); r.code != 304 {
		t.Errorf("If-None-Match on a lineage answer: %d", r.code)
	}

	for _, tt := range []struct{ name, target string }{
		{"no job name", path},
		{"another name", query("payments-v2", "4", "128")},
		{"another parallelism", query("orders & co", "8", "128")},
		{"another max parallelism", query("orders & co", "4", "256")},
		{"another task", "/v1/salting/" + newRun + "/Other?job_name=orders&parallelism=4&max_parallelism=128"},
	} {
		if r := do(t, h, request{method: "GET", target: tt.target}); r.code != 404 {
			t.Errorf("%s: %d %s, want 404", tt.name, r.code, r.body)
		}
	}

	for _, tt := range []struct{ name, query, want string }{
		{"name alone", "?job_name=orders", "give all three or none"},
		{"bad parallelism", "?job_name=orders&parallelism=0&max_parallelism=128", "parallelism \"0\""},
		{"max below parallelism", "?job_name=orders&parallelism=8&max_parallelism=4", "max_parallelism \"4\""},
		{"max too large", "?job_name=orders&parallelism=8&max_parallelism=40000", "max_parallelism \"40000\""},
		{"control character", "?job_name=a%0Ab&parallelism=1&max_parallelism=1", "job_name \"a\\nb\": contains control character"},
		{"unknown parameter", "?job=orders", "unknown"},
	} {
		r := do(t, h, request{method: "GET", target: path + tt.query})
		if r.code != 400 || !strings.Contains(errorOf(t, r), tt.want) {
			t.Errorf("%s: %d %s, want 400 with %q", tt.name, r.code, r.body, tt.want)
		}
	}

	// Once the run has a plan of its own (skewlens linked the runs), that is served.
	mine := testPlan(newRun, "Agg/1", 1, now, "user-42")
	mine.JobName = "orders & co"
	store.mu.Lock()
	store.plans = append(store.plans, mine)
	store.mu.Unlock()
	r = do(t, h, request{method: "GET", target: query("orders & co", "4", "128")})
	if err := json.Unmarshal([]byte(r.body), &p); r.code != 200 || err != nil || p.JobID != newRun || r.header.Get(HeaderLineage) != "" {
		t.Errorf("own plan: %d %+v %v %q", r.code, p, err, r.header.Get(HeaderLineage))
	}
}
