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
	"github.com/skewlens/skewlens/alert/incident"
	"github.com/skewlens/skewlens/internal/simfeed"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/plans"
	"github.com/skewlens/skewlens/skew"
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

	type planList struct{ Plans []plans.Plan }
	getJSON := func(path string, v any) bool {
		resp, err := http.Get("http://" + api + path)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == 200 && json.NewDecoder(resp.Body).Decode(v) == nil
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			select {
			case <-r.done:
				t.Fatalf("run ended before %s:\n%s", what, r.logTail())
			case <-ctx.Done():
				t.Fatalf("%s: not in time\n%s", what, r.logTail())
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	// The hot-key job's plan is published (read from the plans topic,
	// which keeps it: the job's three minutes pass in seconds, and its
	// plan may be served and retired within one write of the pipeline).
	rd := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: "cancel-plans-e2e_cancel", Partition: 0, MaxWait: 200 * time.Millisecond})
	defer rd.Close()
	var plan plans.Plan
	for plan.JobName != string(simulate.HotKey) {
		m, err := rd.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("no plan of the hot-key job on the plans topic: %v\n%s", err, r.logTail())
		}
		if m.Value != nil {
			if err := json.Unmarshal(m.Value, &plan); err != nil {
				t.Fatalf("plan %s: %v", m.Key, err)
			}
		}
	}
	// Its run ends: the plan goes from the API.
	wait("the plan retired", func() bool {
		var l planList
		if !getJSON("/v1/salting", &l) {
			return false
		}
		for _, p := range l.Plans {
			if p.JobID == plan.JobID {
				return false
			}
		}
		return true
	})
	var incs struct{ Incidents []incident.Incident }
	wait("the incidents closed", func() bool {
		if !getJSON("/v1/incidents?job_id="+plan.JobID, &incs) || len(incs.Incidents) == 0 {
			return false
		}
		for _, in := range incs.Incidents {
			if in.State != incident.StateClosed {
				return false
			}
		}
		return true
	})
	stopped := 0
	for _, in := range incs.Incidents {
		if in.Resolution == "job stopped reporting" {
			stopped++
		}
	}
	if stopped == 0 {
		t.Errorf("no incident of the cancelled job closed as stopped: %+v", incs.Incidents)
	}
	var ends struct{ Findings []skew.Finding }
	if !getJSON("/v1/findings?kind=job_end&job_id="+plan.JobID, &ends) || len(ends.Findings) != 1 ||
		ends.Findings[0].JobEnd == nil || ends.Findings[0].JobEnd.Reason != skew.EndStopped {
		t.Errorf("job_end findings of the cancelled job: %+v", ends.Findings)
	}
	wait("the engine to track one job", func() bool { return scrape(t, r.listen, "skewlens_engine_jobs") == 1 })

	// The plans topic: after the plan, its tombstone.
	key := plans.Key(plan.JobID, plan.TaskName)
	for tombstone := false; !tombstone; {
		m, err := rd.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("no tombstone of %s on the plans topic: %v", key, err)
		}
		tombstone = string(m.Key) == key && m.Value == nil
	}
}
