package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv/flinktest"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
	"github.com/skewlens/skewlens/skew/plans"
)

// TestFlinkJobRestart restarts a real Flink job under `skewlens run`: the
// hot-key job runs until skewlens serves it a plan (the job does not apply
// it), is stopped, and is submitted again under the same name, which gives
// it a new job id; the reporter's own records flow on the metrics topic
// all along. The first run ends as restarted by the second, its plan
// carries over to the second run (same parallelism and max parallelism)
// at that moment, its data_skew incident therefore continues in the
// second run while its other incidents close "job restarted as <short
// id>", and the hot key of the second run is found as fast as the first
// run's was.
func TestFlinkJobRestart(t *testing.T) {
	const hotKey = "customer-42"
	jobArgs := []string{"--hot-key", hotKey, "--hot-share", "0.7", "--rate", "1400"}
	l := startLoopWith(t, loopOptions{scenario: "hot_key", name: "restart", jobArgs: jobArgs})
	ctx := context.Background()
	isSkew := func(f loopFinding) bool { return f.cause == "data_skew" && f.task == keyedTask }
	first := l.job
	_, found1 := l.firstFinding(ctx, "data_skew of the first run", isSkew)
	latency1 := found1.Sub(first.Started)
	t.Logf("first run %s: data_skew %s after it started", first.ID, latency1.Round(100*time.Millisecond))
	l.waitFor(time.Minute, "the first run's plan", func() bool { _, err := l.plan(keyedTask); return err == nil })

	first.Stop()
	stopped := time.Now()
	second := flinktest.StartScenario(t, l.jobArgs("hot_key", jobArgs)...)
	l.job = second
	t.Logf("second run %s ready %s after the first stopped", second.ID, second.Started.Sub(stopped).Round(100*time.Millisecond))
	if second.ID == first.ID {
		t.Fatalf("the second run has the first run's job id %s", first.ID)
	}

	// The first run ends, restarted as the second.
	var end skew.Finding
	l.waitFor(2*time.Minute, "the first run's job_end", func() bool {
		var ends struct{ Findings []skew.Finding }
		if !l.getJSON("/v1/findings?kind=job_end&job_id="+url.QueryEscape(first.ID), &ends) || len(ends.Findings) == 0 {
			return false
		}
		end = ends.Findings[0]
		return true
	})
	if end.JobEnd == nil || end.JobEnd.Reason != skew.EndRestarted || end.JobEnd.Successor != second.ID {
		t.Fatalf("job_end of the first run: %+v, want restarted as %s", end.JobEnd, second.ID)
	}
	t.Logf("job_end: restarted, window ending %s after the second run started", time.UnixMilli(end.WindowEnd).Sub(second.Started).Round(time.Second))

	// Its incidents close as restarted, but for the data_skew incident of
	// the keyed task: its plan carried over to the second run, so it
	// goes on there (the same incident and alert, no second one).
	var incs struct{ Incidents []incident.Incident }
	l.waitFor(time.Minute, "the first run's incidents closed or continued", func() bool {
		if !l.getJSON("/v1/incidents?job_id="+url.QueryEscape(first.ID), &incs) || len(incs.Incidents) == 0 {
			return false
		}
		return !slices.ContainsFunc(incs.Incidents, func(in incident.Incident) bool {
			return in.State != incident.StateClosed && in.RunJobID != second.ID
		})
	})
	want, skewed := "job restarted as "+skew.ShortID(second.ID), 0
	for _, in := range incs.Incidents {
		switch {
		case in.Cause == "data_skew" && in.TaskName == keyedTask:
			skewed++
			if in.RunJobID != second.ID || in.State != incident.StateOpen && in.Resolution == want {
				t.Errorf("data_skew incident %s of the first run: run %q, %s %q; want it continued in %s", in.ID, in.RunJobID, in.State, in.Resolution, second.ID)
			}
		case in.RunJobID == "" && in.Resolution != want:
			t.Errorf("incident %s (%s) of the first run closed %q, want %q", in.ID, in.Cause, in.Resolution, want)
		}
	}
	if skewed == 0 {
		t.Errorf("no data_skew incident of the first run among %d", len(incs.Incidents))
	}

	// Its plan carries over: served for the second run from the job_end's
	// window, before the second run's own findings could make one.
	var p plans.Plan
	l.waitFor(time.Minute, "the second run's plan", func() bool { return l.getJSON(l.planPath(keyedTask), &p) })
	if !p.GeneratedAt.Equal(time.UnixMilli(end.WindowEnd)) || len(p.HotKeys) == 0 || p.HotKeys[0].Key != hotKey {
		t.Errorf("the second run's plan v%d made %s with %+v: want %s carried over at the job_end (%s)",
			p.Version, p.GeneratedAt.Format(time.TimeOnly), p.HotKeys, hotKey, time.UnixMilli(end.WindowEnd).UTC().Format(time.TimeOnly))
	}
	if l.getJSON("/v1/salting/"+url.PathEscape(first.ID)+"/"+url.PathEscape(keyedTask), &plans.Plan{}) {
		t.Errorf("the first run's plan is still served")
	}

	// The second run's hot key, found as fast as the first's (a window of
	// slack: the restart's first window may be partial).
	_, found2 := l.firstFinding(ctx, "data_skew of the second run", isSkew)
	latency2 := found2.Sub(second.Started)
	t.Logf("second run: data_skew %s after it started", latency2.Round(100*time.Millisecond))
	if latency2 > latency1+15*time.Second {
		t.Errorf("the second run's data_skew took %s, the first run's %s", latency2, latency1)
	}
}

// jobArgs are the flags of a job of the loop running scenario, with extra
// after them (so they win).
func (l *loop) jobArgs(scenario string, extra []string) []string {
	return append([]string{"--scenario", scenario, "--duration", "10m",
		"--kafka-bootstrap", l.brokers[0], "--metrics-topic", l.prefix + "-metrics",
		"--samples-topic", l.prefix + "-samples", "--report-interval", "5s", "--out", l.out}, extra...)
}

// planPath is the salting API's path of the plan of the job's task.
func (l *loop) planPath(task string) string {
	return "/v1/salting/" + url.PathEscape(l.job.JobID()) + "/" + url.PathEscape(task)
}

// getJSON decodes the 200 answer of the API to GET path into v.
func (l *loop) getJSON(path string, v any) bool {
	resp, err := http.Get("http://" + l.api + path)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
}
