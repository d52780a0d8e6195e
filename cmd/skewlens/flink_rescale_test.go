package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv/flinktest"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/alert"
	"github.com/skewlens/skewlens/skew/incident"
	"github.com/skewlens/skewlens/skew/rescale"
)

// TestFlinkClusterRescale is the second closed loop, rescale and verify,
// on a standalone cluster of each Flink line: the example job runs its
// summing task too small (parallelism 2, balanced keys, 2400 orders/s of
// 1 ms each: each subtask is offered 1.2× what it can do), `skewlens run`
// finds it under_provisioned, and the test plays the operator with only
// what skewlens emitted, the finding's change as the findings API serves
// it (package skew/rescale's forms). Flink runs the task at the
// recommended parallelism, its subtasks' busy time falls under the
// saturation line in Flink's own counters, and the under_provisioned
// incident closes resolved by the rescale, with the receipt, on the
// incident and in the resolved alert.
//
// Flink 1.20.5: stop with a savepoint and resubmit the jar with the
// override in flinkConfiguration (a new job id, which the incident
// follows), on the package's shared 1.20.5 cluster. Flink 2.3.0 ignores
// the override for DataStream jobs (FLINK-38770: the clients submit a
// StreamGraph, and only the Dispatcher's JobGraph path applies it), so
// there the cluster runs the adaptive scheduler and the change goes to
// PUT /jobs/:id/resource-requirements, and the job rescales in place: on
// a cluster of the test's own, as the JobMaster takes its scheduler from
// the cluster's configuration alone (jobmanager.scheduler; a job's
// flinkConfiguration does not choose it).
func TestFlinkClusterRescale(t *testing.T) {
	for _, c := range []struct{ name, version string }{{"flink1", flinktest.Flink1}, {"flink2", flinktest.Flink2}} {
		t.Run(c.version, func(t *testing.T) { clusterRescale(t, c.name, c.version) })
	}
}

func clusterRescale(t *testing.T, name, version string) {
	inPlace := version == flinktest.Flink2
	var conf map[string]string // nil: the shared cluster
	if inPlace {
		conf = map[string]string{"jobmanager.scheduler": "adaptive"}
	}
	rec := &webhookRecorder{}
	hook := httptest.NewServer(rec)
	defer hook.Close()
	l := startLoopWith(t, loopOptions{scenario: "under_provisioned", name: "rescale-" + name, cluster: version, clusterConfig: conf,
		runArgs: []string{"--alert-webhook-url", hook.URL},
		jobArgs: []string{"--hot-share", "0", "--rate", "2400", "--cost-ms", "1", "--parallelism", "2", "--max-parallelism", "128"}})
	defer l.stop()
	old := l.job
	c := old.Cluster()
	busy := watchBusy(t, l.brokers, l.metrics, l.group("-busy"), l.keyed)
	start := old.StartedAt()

	// 1. under_provisioned on the summing task, as the findings API
	// serves it, with the change ready to apply.
	var f skew.Finding
	detectedAt := l.waitFor(3*time.Minute, "an under_provisioned finding in the findings API", func() bool {
		var ok bool
		f, ok = l.apiUnderProvisioned(old.ID)
		return ok
	})
	// Only what skewlens emitted: the forms in the finding's evidence.
	forms := f.Saturation.Evidence.Rescale
	if forms == nil {
		t.Fatalf("the finding carries no rescale: %+v", f.Saturation.Evidence)
	}
	want := overridden(t, forms.Overrides)
	t.Logf("step 1: under_provisioned %s after the job ran: %s", detectedAt.Sub(start).Round(100*time.Millisecond), f.Summary)
	if ev := f.Saturation.Evidence; want.Parallelism <= 2 || 128%want.Parallelism != 0 || ev.Parallelism != 2 || ev.MaxParallelism != 128 {
		t.Fatalf("recommended %d from %d (max %d): want more than 2, a divisor of 128", want.Parallelism, ev.Parallelism, ev.MaxParallelism)
	}
	if v := vertex(t, c, old.ID, want.ID); v.Name != l.keyed || v.Parallelism != 2 {
		t.Fatalf("vertex %s is %q at %d in Flink's REST API, want %q at 2", want.ID, v.Name, v.Parallelism, l.keyed)
	}
	l.waitFor(time.Minute, "the under_provisioned incident open", func() bool {
		in, ok := l.apiIncident(old.ID)
		return ok && in.State == incident.StateOpen
	})
	// The operator acts on the page: an incident closed before its alert
	// fired (two windows) discards the alert, and no resolved one follows.
	// (The job's alerts alone: run reads the other tests' jobs too on a
	// shared cluster's topic.)
	l.waitFor(time.Minute, "the under_provisioned alert firing", func() bool {
		return slices.ContainsFunc(rec.all(), func(a alert.Alert) bool {
			return a.Status == alert.StatusFiring && a.Labels["cause"] == skew.CauseUnderProvisioned && a.Labels["job_id"] == old.ID
		})
	})

	// 2. The operator applies it.
	run := old
	var stopped time.Time
	if inPlace {
		// The adaptive scheduler takes every vertex's requirements at
		// once: the current ones, with the emitted vertex's replaced.
		var reqs map[string]json.RawMessage
		if err := c.JSON(http.MethodGet, "/jobs/"+old.ID+"/resource-requirements", nil, &reqs); err != nil {
			t.Fatal(err)
		}
		body := forms.ResourceRequirements
		var emitted map[string]json.RawMessage
		if err := json.Unmarshal(body, &emitted); err != nil {
			t.Fatal(err)
		}
		maps.Copy(reqs, emitted)
		if err := c.JSON(http.MethodPut, "/jobs/"+old.ID+"/resource-requirements", reqs, nil); err != nil {
			t.Fatalf("PUT resource-requirements %s: %v", body, err)
		}
		t.Logf("step 2: PUT /jobs/%s/resource-requirements with %s", old.ID, body)
	} else {
		savepoint := old.StopWithSavepoint(t, "file://"+filepath.Join(c.Dir, "savepoints"))
		stopped = time.Now()
		req := old.Request
		req.SavepointPath = savepoint
		req.FlinkConfiguration = map[string]string{rescale.OverridesKey: forms.Overrides}
		run = c.Start(t, old.JarID, req)
		l.job = run
		t.Logf("step 2: stopped with a savepoint (%s), resubmitted with %s=%s as %s; %s from the finding to running again",
			savepoint, rescale.OverridesKey, forms.Overrides, run.ID, time.Since(detectedAt).Round(100*time.Millisecond))
	}

	// 3. Flink runs the task at the recommended parallelism.
	appliedAt := l.waitFor(3*time.Minute, "the task at the recommended parallelism in Flink's REST API", func() bool {
		v := vertex(t, c, run.ID, want.ID)
		return v.Parallelism == want.Parallelism && v.Status == "RUNNING"
	})
	t.Logf("step 3: %q runs %d subtasks %s after the finding", l.keyed, want.Parallelism, appliedAt.Sub(detectedAt).Round(100*time.Millisecond))

	// 4. Flink's own busy time: every subtask under the saturation line.
	before, _ := busy.worst(old.ID, 2, start, detectedAt)
	var after float64
	reliefAt := l.waitFor(2*time.Minute, "every subtask of the task below 800 ms/s busy in Flink's counters", func() bool {
		var all bool
		after, all = busy.worst(run.ID, want.Parallelism, appliedAt.Add(5*time.Second), time.Now())
		return all && after < 800
	})
	t.Logf("step 4: busiest subtask %.0f ms/s before (parallelism 2), %.0f after (parallelism %d), %s after it ran",
		before, after, want.Parallelism, reliefAt.Sub(appliedAt).Round(100*time.Millisecond))
	if before < 800 {
		t.Errorf("the task was busy only %.0f ms/s before the rescale: not saturated", before)
	}

	// 5. The receipt on the incident.
	var receipt incident.Incident
	receiptAt := l.waitFor(3*time.Minute, "the under_provisioned incident resolved by the rescale", func() bool {
		in, ok := l.apiIncident(old.ID)
		receipt = in
		return ok && in.State == incident.StateClosed
	})
	r := receipt.Rescale
	t.Logf("step 5: incident %s: %s; %s after the finding, %s after the task ran at %d",
		receipt.ID, receipt.Why(), receiptAt.Sub(detectedAt).Round(100*time.Millisecond), receiptAt.Sub(appliedAt).Round(100*time.Millisecond), want.Parallelism)
	if !stopped.IsZero() {
		t.Logf("step 5: %s from the stop to the receipt", receiptAt.Sub(stopped).Round(100*time.Millisecond))
	}
	wantRun := ""
	if !inPlace {
		wantRun = run.ID
	}
	if r == nil || receipt.Resolution != fmt.Sprintf("resolved by rescale to %d", want.Parallelism) || receipt.RunJobID != wantRun ||
		r.ParallelismBefore != 2 || r.ParallelismAfter != want.Parallelism || r.BusyBefore < 800 || r.BusyAfterPeak >= 800 || r.Took() <= 0 {
		t.Fatalf("incident %+v, receipt %+v: want resolved by rescale to %d in run %q, from 2, busy from at least 800 ms/s to under it",
			receipt, r, want.Parallelism, wantRun)
	}

	// 6. The resolved alert carries it.
	var resolved alert.Alert
	l.waitFor(time.Minute, "the under_provisioned alert resolved", func() bool {
		for _, a := range rec.all() {
			if a.Status == alert.StatusResolved && a.Labels["cause"] == skew.CauseUnderProvisioned && a.Labels["job_id"] == old.ID {
				resolved = a
				return true
			}
		}
		return false
	})
	if resolved.Reason != incident.ReasonResolvedByRescale || resolved.Annotations["resolution"] != receipt.Why() {
		t.Errorf("the resolved alert: reason %q, resolution %q; want %q, %q", resolved.Reason, resolved.Annotations["resolution"],
			incident.ReasonResolvedByRescale, receipt.Why())
	}
}

// apiUnderProvisioned returns the job's latest under_provisioned finding
// of the loop's task from the findings API, once it names the vertex.
func (l *loop) apiUnderProvisioned(jobID string) (skew.Finding, bool) {
	var body struct {
		Findings []skew.Finding `json:"findings"`
	}
	if err := l.apiGet("/v1/findings?"+url.Values{"job_id": {jobID}, "kind": {skew.KindSaturation}}.Encode(), &body); err != nil {
		return skew.Finding{}, false
	}
	var latest skew.Finding
	for _, f := range body.Findings {
		if f.TaskName == l.keyed && f.Saturation != nil && f.Cause == skew.CauseUnderProvisioned && f.Evidence != nil &&
			f.Evidence.VertexID != "" && f.WindowEnd > latest.WindowEnd {
			latest = f
		}
	}
	return latest, latest.WindowEnd > 0
}

// apiIncident returns the job's under_provisioned incident of the loop's
// task from the incidents API.
func (l *loop) apiIncident(jobID string) (incident.Incident, bool) {
	var body struct {
		Incidents []incident.Incident `json:"incidents"`
	}
	if err := l.apiGet("/v1/incidents?"+url.Values{"job_id": {jobID}}.Encode(), &body); err != nil {
		return incident.Incident{}, false
	}
	for _, in := range body.Incidents {
		if in.Cause == skew.CauseUnderProvisioned && in.TaskName == l.keyed {
			return in, true
		}
	}
	return incident.Incident{}, false
}

func (l *loop) apiGet(path string, out any) error {
	resp, err := http.Get("http://" + l.api + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// vertex returns the job's vertex id as Flink's REST API shows it (its
// zero value while the API does not answer or has no such vertex).
func vertex(t *testing.T, c *flinktest.Cluster, jobID, id string) flinktest.Vertex {
	t.Helper()
	vs, err := c.Vertices(jobID)
	if err != nil {
		t.Logf("GET /jobs/%s: %v", jobID, err)
		return flinktest.Vertex{}
	}
	for _, v := range vs {
		if v.ID == id {
			return v
		}
	}
	return flinktest.Vertex{}
}

// busyWatch follows Flink's accumulateBusyTimeMs counter of every subtask
// of one task, of every job, as the TaskManagers report it through the
// Kafka reporter.
type busyWatch struct {
	mu  sync.Mutex
	pts map[string]map[int][]counterPoint // job id -> subtask -> reports
}

func watchBusy(t *testing.T, brokers []string, topic, group, task string) *busyWatch {
	w := &busyWatch{pts: map[string]map[int][]counterPoint{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		readBusyCounters(ctx, brokers, topic, group, func(c busyCounter) {
			if c.task != task {
				return
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.pts[c.jobID] == nil {
				w.pts[c.jobID] = map[int][]counterPoint{}
			}
			w.pts[c.jobID][c.subtask] = append(w.pts[c.jobID][c.subtask], c.counterPoint)
		})
	}()
	return w
}

// rate is the subtask's busy ms/s between its first report in [from, to]
// (after the latest restart of its counter) and its last; ok is false
// while those are less than 8 s apart.
func (w *busyWatch) rate(job string, sub int, from, to time.Time) (float64, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var first, last *counterPoint
	for i, p := range w.pts[job][sub] {
		if p.ts < from.UnixMilli() || p.ts > to.UnixMilli() {
			continue
		}
		if first == nil || p.value < last.value { // a new attempt counts from 0
			first = &w.pts[job][sub][i]
		}
		last = &w.pts[job][sub][i]
	}
	if first == nil || last.ts-first.ts < 8000 {
		return 0, false
	}
	return (last.value - first.value) / float64(last.ts-first.ts) * 1000, true
}

// worst is the highest rate of the job's subtasks 0..n-1; all is false
// while one of them has none.
func (w *busyWatch) worst(job string, n int, from, to time.Time) (worst float64, all bool) {
	all = true
	for s := range n {
		b, ok := w.rate(job, s, from, to)
		all = all && ok
		worst = max(worst, b)
	}
	return worst, all
}

// overridden reads the one vertex of an emitted
// pipeline.jobvertex-parallelism-overrides value ("id:p"), as the test
// checks it against Flink's REST API.
func overridden(t *testing.T, v string) rescale.Vertex {
	t.Helper()
	id, p, ok := strings.Cut(v, ":")
	n, err := strconv.Atoi(p)
	if !ok || err != nil || strings.Contains(v, ",") || !rescale.ValidID(id) {
		t.Fatalf("emitted overrides %q: want one vertex id:parallelism", v)
	}
	return rescale.Vertex{ID: id, Parallelism: n}
}
