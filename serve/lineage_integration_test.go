package serve_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/skewlens/skewlens/serve"
	"github.com/skewlens/skewlens/skew/plans"
)

// TestLineageFromClickHouse: against the real ClickHouse store, a new run
// of a job (issue 32) asking with its name and parallelism pair is served
// its job's plan until the run's own plan is stored (skewlens linked the
// runs and carried the plan over, retiring the old run's).
func TestLineageFromClickHouse(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sink, _ := newTestSink(t, "lineage")
	_, base := runServer(t, serve.Config{CacheTTL: -1}, chStore(sink))
	const newRun = "ffe678ee000000000000000000000000"
	now := time.Now().UTC().Truncate(time.Millisecond)
	old := serve.TestPlan(serve.JobID, "Agg", 4, now, "customer-42")
	old.JobName = "orders"
	if err := sink.Writer().WritePlans(ctx, []plans.Change{{JobID: serve.JobID, TaskName: "Agg", Plan: &old}}); err != nil {
		t.Fatal(err)
	}
	asNewRun := taskURL(base, newRun, "Agg") + "?job_name=orders&parallelism=4&max_parallelism=128"

	r := call(t, "GET", asNewRun, "", "", nil)
	var p plans.Plan
	if err := json.Unmarshal([]byte(r.body), &p); r.code != 200 || err != nil || p.JobID != serve.JobID || p.Version != 4 {
		t.Fatalf("new run's first poll: %d %.300s (%v), want the old run's v4", r.code, r.body, err)
	}
	if r.header.Get(serve.HeaderLineage) != serve.JobID {
		t.Errorf("%s = %q", serve.HeaderLineage, r.header.Get(serve.HeaderLineage))
	}
	if r2 := call(t, "GET", asNewRun, "", "", map[string]string{"If-None-Match": r.header.Get("ETag")}); r2.code != 304 {
		t.Errorf("polling the lineage answer with its ETag: %d", r2.code)
	}
	if r := call(t, "GET", taskURL(base, newRun, "Agg")+"?job_name=orders&parallelism=8&max_parallelism=128", "", "", nil); r.code != 404 {
		t.Errorf("another parallelism: %d, want 404", r.code)
	}

	// skewlens links the runs: the plan carries over as the new run's v1
	// and the old run's retires.
	mine := serve.TestPlan(newRun, "Agg", 1, now.Add(10*time.Second), "customer-42")
	mine.JobName = "orders"
	if err := sink.Writer().WritePlans(ctx, []plans.Change{
		{JobID: newRun, TaskName: "Agg", Plan: &mine},
		{JobID: serve.JobID, TaskName: "Agg", Retired: true},
	}); err != nil {
		t.Fatal(err)
	}
	r = call(t, "GET", asNewRun, "", "", nil)
	if err := json.Unmarshal([]byte(r.body), &p); r.code != 200 || err != nil || p.JobID != newRun || p.Version != 1 ||
		r.header.Get(serve.HeaderLineage) != "" {
		t.Errorf("after the carry-over: %d %.300s (%v), lineage header %q; want the run's own v1", r.code, r.body, err, r.header.Get(serve.HeaderLineage))
	}
}
