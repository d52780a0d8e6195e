package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/skewlens/skewlens/internal/simfeed"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
	"github.com/skewlens/skewlens/skew/plans"
)

// TestAnalyzeJobRestart replays two runs of one job (same name, new job
// id, 45 s apart, longer than the resolve-after time): a job_end finding
// ends the first run as restarted, naming the second, and the first
// run's incidents close "job restarted as <id>" in -o text, not as
// absent, but for its data_skew incident, whose salting plan carried
// over to the second run: it continues there.
func TestAnalyzeJobRestart(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	ids := map[string]bool{}
	for i, seed := range []uint64{43, 143} {
		cfg := exampleIncident(simulate.HotKey)
		cfg.Seed = seed
		cfg.Duration = 3 * time.Minute
		cfg.Start += int64(i) * (cfg.Duration + 45*time.Second).Milliseconds()
		g, err := simulate.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := g.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "run"+string(rune('1'+i))+".log")
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	code, js, errOut := runCLI(t, "", "analyze", "-i", strings.Join(paths, ","))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var ends []skew.Finding
	for _, f := range decodeFindings(t, js) {
		ids[f.JobID] = true
		if f.Kind == skew.KindJobEnd {
			ends = append(ends, f)
		}
	}
	if len(ids) != 2 {
		t.Fatalf("job ids %v, want two runs", ids)
	}
	if len(ends) != 1 || ends[0].JobEnd.Reason != skew.EndRestarted || !ids[ends[0].JobEnd.Successor] || ends[0].JobEnd.Successor == ends[0].JobID {
		t.Fatalf("job_end findings %+v, want one: the first run restarted as the second", ends)
	}
	code, text, errOut := runCLI(t, "", "analyze", "-i", strings.Join(paths, ","), "-o", "text")
	if code != 0 {
		t.Fatalf("text: exit %d: %s", code, errOut)
	}
	first, second := ends[0].JobID, ends[0].JobEnd.Successor
	restarted, continued := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		switch {
		case strings.Contains(line, skew.ShortID(first)+")") && strings.Contains(line, " data_skew "):
			// Its salting plan carried over to the second run (same
			// parallelism): the incident goes on there, across the gap,
			// instead of closing and opening again.
			if strings.Contains(line, "job restarted") || !strings.Contains(line, " open ") || !strings.Contains(line, "6m40s") {
				t.Errorf("first run's data_skew incident did not continue in the second run: %s", line)
			}
			continued++
		case strings.Contains(line, skew.ShortID(first)+")"):
			if !strings.Contains(line, "job restarted as "+skew.ShortID(second)) || !strings.Contains(line, " closed ") {
				t.Errorf("first run's incident not closed as restarted: %s", line)
			}
			restarted++
		case !strings.Contains(line, skew.ShortID(second)+")"):
			t.Errorf("line of neither run: %s", line)
		case strings.Contains(line, " data_skew "):
			t.Errorf("a new data_skew incident in the second run: %s", line)
		}
	}
	if restarted == 0 || continued != 1 {
		t.Fatalf("%d incidents of the first run closed as restarted, %d continued, in\n%s", restarted, continued, text)
	}
}

// TestRunEndsCancelledJob plays two simulated jobs into the real broker
// under `skewlens run`: a hot-key job that is cancelled for good after 3
// minutes of event time, and a healthy one that goes on. Once the
// hot-key job is served a salting plan and then sends nothing for
// --job-end-after (1 min), its run ends: the plan is gone from GET
// /v1/salting and tombstoned on the plans topic, its incidents are
// closed "job stopped reporting", a job_end finding is stored, and the
// engine tracks one job.
func TestRunEndsCancelledJob(t *testing.T) {
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	api := "127.0.0.1:" + strconv.Itoa(port)
	r := startRun(t, brokers, chAddr, "cancel", "cancel", "e2e_cancel", "--api-listen", api)
	now := time.Now()
	var jobs []simulate.Config
	for i, sc := range []simulate.Scenario{simulate.HotKey, simulate.Healthy} {
		jc := simulate.DefaultConfig()
		jc.Duration = []time.Duration{3 * time.Minute, 12 * time.Minute}[i]
		jc.Scenario, jc.Seed, jc.JobName = sc, uint64(i+1), string(sc)
		jc.Start = now.Add(-12 * time.Minute).Truncate(jc.Interval).UnixMilli()
		jobs = append(jobs, jc)
	}
	fcfg := simfeed.DefaultConfig()
	fcfg.Brokers, fcfg.MetricsTopic, fcfg.SamplesTopic, fcfg.Speed, fcfg.Jobs = brokers, "cancel-metrics", "cancel-samples", 20, jobs
	feed, err := simfeed.New(fcfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	go func() { _ = feed.Run(ctx) }()
	defer feed.Stop()

	// The hot-key job's plan is published (read from the plans topic,
	// which keeps it: the job's three minutes pass in seconds, and its
	// plan may be served and retired within one write of the pipeline).
	rd := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: "cancel-plans-e2e_cancel", Partition: 0, MaxWait: 200 * time.Millisecond})
	defer rd.Close()
	plan := readPlan(ctx, t, r, rd, string(simulate.HotKey))
	// Its run ends: the plan goes from the API, its incidents close.
	waitRun(ctx, t, r, "the plan retired", func() bool { return planGone(api, plan.JobID) })
	waitRun(ctx, t, r, "the incidents closed", func() bool { return incidentsClosed(api, plan.JobID) != nil })
	checkStopped(t, api, plan.JobID)
	waitRun(ctx, t, r, "the engine to track one job", func() bool { return scrape(t, r.listen, "skewlens_engine_jobs") == 1 })
	readTombstone(ctx, t, rd, plan)
}

// TestRunEndsLastJob (issue 32): the only job reporting to `skewlens
// run` stops, and nothing else reports, so event time stands still.
// Wall time ends its run: within --job-end-after (20 s here) plus one
// window (10 s) after its last report, its plan is gone from GET
// /v1/salting and tombstoned on the plans topic, its incidents are
// closed "job stopped reporting", a job_end finding (stopped) is stored,
// and the engine tracks no job. It logs the time from the last report
// to each.
func TestRunEndsLastJob(t *testing.T) {
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	api := "127.0.0.1:" + strconv.Itoa(port)
	const jobEndAfter, window = 20 * time.Second, 10 * time.Second
	r := startRun(t, brokers, chAddr, "last", "last", "e2e_last", "--api-listen", api, "--job-end-after", jobEndAfter.String())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// The pipeline is up before the job reports, so that it reads each
	// report as it comes.
	waitRun(ctx, t, r, "the API", func() bool { return apiGet(api, "/v1/salting", &struct{}{}) })
	jc := simulate.DefaultConfig()
	jc.Duration, jc.Scenario, jc.Seed, jc.JobName = 3*time.Minute, simulate.HotKey, 1, string(simulate.HotKey)
	jc.Start = time.Now().Add(-3 * time.Minute).Truncate(jc.Interval).UnixMilli()
	fcfg := simfeed.DefaultConfig()
	fcfg.Brokers, fcfg.MetricsTopic, fcfg.SamplesTopic, fcfg.Speed, fcfg.Jobs = brokers, "last-metrics", "last-samples", 20, []simulate.Config{jc}
	feed, err := simfeed.New(fcfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Run returns once the job's last report is written (and half an
	// interval at speed 20 later).
	if err := feed.Run(ctx); err != nil {
		t.Fatal(err)
	}
	last := time.Now()
	rd := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: "last-plans-e2e_last", Partition: 0, MaxWait: 200 * time.Millisecond})
	defer rd.Close()
	plan := readPlan(ctx, t, r, rd, string(simulate.HotKey))
	var retired, closed time.Duration
	waitRun(ctx, t, r, "the plan retired and the incidents closed", func() bool {
		if retired == 0 && planGone(api, plan.JobID) {
			retired = time.Since(last)
		}
		if closed == 0 && incidentsClosed(api, plan.JobID) != nil {
			closed = time.Since(last)
		}
		return retired > 0 && closed > 0
	})
	t.Logf("from the last report: plan retired after %s, incidents closed after %s (bound: --job-end-after %s + a window %s)",
		retired.Round(100*time.Millisecond), closed.Round(100*time.Millisecond), jobEndAfter, window)
	// The bound, and the pipeline's own delays: the flush interval (1 s),
	// the writes and the polling here.
	if limit := jobEndAfter + window + 3*time.Second; retired > limit || closed > limit {
		t.Errorf("the run ended later than %s after its last report", limit)
	}
	if retired < jobEndAfter-time.Second || closed < jobEndAfter-time.Second {
		t.Errorf("the run ended before --job-end-after %s passed", jobEndAfter)
	}
	checkStopped(t, api, plan.JobID)
	waitRun(ctx, t, r, "the engine to track no job", func() bool { return scrape(t, r.listen, "skewlens_engine_jobs") == 0 })
	readTombstone(ctx, t, rd, plan)
	if !strings.Contains(r.logTail(), "jobs silent for --job-end-after ended on wall time") {
		t.Errorf("no log line of the end on wall time:\n%s", r.logTail())
	}
}

// apiGet decodes the JSON of GET path from the API at api into v, and
// reports whether it could.
func apiGet(api, path string, v any) bool {
	resp, err := http.Get("http://" + api + path)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(v) == nil
}

// waitRun polls ok until it holds, failing when the run ends or ctx is
// done first.
func waitRun(ctx context.Context, t *testing.T, r *runProc, what string, ok func() bool) {
	t.Helper()
	testenv.Eventually(t, left(ctx), what, ok, r.end())
}

// readPlan reads the plans topic until a plan of the job named name.
func readPlan(ctx context.Context, t *testing.T, r *runProc, rd *kafka.Reader, name string) plans.Plan {
	t.Helper()
	var plan plans.Plan
	for plan.JobName != name {
		m, err := rd.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("no plan of job %s on the plans topic: %v\n%s", name, err, r.logTail())
		}
		if m.Value != nil {
			if err := json.Unmarshal(m.Value, &plan); err != nil {
				t.Fatalf("plan %s: %v", m.Key, err)
			}
		}
	}
	return plan
}

// readTombstone reads the plans topic on until the plan's tombstone.
func readTombstone(ctx context.Context, t *testing.T, rd *kafka.Reader, plan plans.Plan) {
	t.Helper()
	key := plans.Key(plan.JobID, plan.TaskName)
	for tombstone := false; !tombstone; {
		m, err := rd.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("no tombstone of %s on the plans topic: %v", key, err)
		}
		tombstone = string(m.Key) == key && m.Value == nil
	}
}

// planGone reports whether GET /v1/salting answers without a plan of job.
func planGone(api, job string) bool {
	var l struct{ Plans []plans.Plan }
	if !apiGet(api, "/v1/salting", &l) {
		return false
	}
	for _, p := range l.Plans {
		if p.JobID == job {
			return false
		}
	}
	return true
}

// incidentsClosed returns the job's incidents once it has some and all
// are closed, else nil.
func incidentsClosed(api, job string) []incident.Incident {
	var incs struct{ Incidents []incident.Incident }
	if !apiGet(api, "/v1/incidents?job_id="+job, &incs) || len(incs.Incidents) == 0 {
		return nil
	}
	for _, in := range incs.Incidents {
		if in.State != incident.StateClosed {
			return nil
		}
	}
	return incs.Incidents
}

// checkStopped checks that job's incidents closed as stopped and that one
// job_end finding, reason stopped, is stored.
func checkStopped(t *testing.T, api, job string) {
	t.Helper()
	incs := incidentsClosed(api, job)
	stopped := 0
	for _, in := range incs {
		if in.Resolution == "job stopped reporting" {
			stopped++
		}
	}
	if stopped == 0 {
		t.Errorf("no incident of the job closed as stopped: %+v", incs)
	}
	var ends struct{ Findings []skew.Finding }
	if !apiGet(api, "/v1/findings?kind=job_end&job_id="+job, &ends) || len(ends.Findings) != 1 ||
		ends.Findings[0].JobEnd == nil || ends.Findings[0].JobEnd.Reason != skew.EndStopped {
		t.Errorf("job_end findings of the job: %+v", ends.Findings)
	}
}
