package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/simfeed"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
	"github.com/skewlens/skewlens/pipeline/simulate"
	"github.com/skewlens/skewlens/skew"
)

// TestGroupLinksJobRuns: two `skewlens run` instances share one consumer
// group (four partitions, two each) while four jobs are each restarted
// once (same name, new job id), as the reporter and sampler produce them:
// keyed by job name. Every run of a job reaches the instance that read
// the one before, so every first run ends as restarted, naming its
// successor, whichever instance owns it. Keyed by job id (simfeed's key
// before), the runs of two of these jobs land on two instances, and the
// first run then ends as stopped: the test fails.
func TestGroupLinksJobRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kafka broker, ClickHouse and two pipelines")
	}
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	const prefix, db = "lineage", "lineage"
	createRunTopics(t, brokers, prefix)

	// Each job: a first run of 3 minutes, then, 30 s after its end, a
	// second of 3 minutes under a new id. The names reach both halves of
	// the partitions (range assignment gives 0-1 to one instance and 2-3
	// to the other), so both instances link runs.
	start := time.Now().Add(-time.Hour).Truncate(10 * time.Second).UnixMilli()
	names := []string{"orders", "payments", "billing", "search"}
	scenarios := []simulate.Scenario{simulate.HotKey, simulate.Healthy, simulate.SlowSink, simulate.Healthy}
	halves := map[int]bool{}
	successor := map[string]string{} // first run's id -> second run's
	var cfgs []simulate.Config
	for i, name := range names {
		halves[(&kafka.Hash{}).Balance(kafka.Message{Key: []byte(name)}, 0, 1, 2, 3)/2] = true
		var ids []string
		for run := range 2 {
			cfg := simulate.Config{Scenario: scenarios[i], Seed: uint64(100*run + i + 1), JobName: name, Duration: 3 * time.Minute,
				Start: start + int64(run)*(3*time.Minute+30*time.Second).Milliseconds()}
			g, err := simulate.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, g.Truth().JobID)
			cfgs = append(cfgs, cfg)
		}
		if ids[0] == ids[1] {
			t.Fatalf("%s: both runs have job id %s", name, ids[0])
		}
		successor[ids[0]] = ids[1]
	}
	if len(halves) != 2 {
		t.Fatalf("the job names all hash to one half of the partitions: pick others")
	}

	// The instances join the group first; the records then come live, at
	// 30x, each run from its own Start (simfeed plays the jobs on one
	// clock), so that a partition's records come in event-time order.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	first := startRun(t, brokers, chAddr, prefix, db, db)
	second := startRun(t, brokers, chAddr, prefix, db, db)
	first.waitAssigned(ctx, t, 1)
	second.waitAssigned(ctx, t, 1)
	feed, err := simfeed.New(simfeed.Config{Brokers: brokers, MetricsTopic: prefix + "-metrics", SamplesTopic: prefix + "-samples",
		Speed: 30, Jobs: cfgs}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := feed.Run(ctx); err != nil {
		t.Fatal(err)
	}

	conn, err := ch.Open(&ch.Options{Addr: []string{chAddr}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var ends map[string]skew.JobEnd
	defer func() {
		if t.Failed() {
			t.Logf("job ends %v, want the %d first runs' (instances:\n%s\n%s)", ends, len(successor), first.logTail(), second.logTail())
		}
	}()
	testenv.Eventually(t, left(ctx), "the first runs' job ends", func() bool {
		ends = jobEnds(ctx, t, conn, db)
		return len(ends) >= len(successor)
	})
	var wrong []string
	for id, next := range successor {
		if e, ok := ends[id]; !ok || e.Reason != skew.EndRestarted || e.Successor != next {
			wrong = append(wrong, fmt.Sprintf("%s: %+v (last event at +%d ms), want restarted as %s", id, e, e.LastEventAt-start, next))
		}
	}
	if len(wrong) > 0 {
		t.Fatalf("first runs not linked to their successors:\n%s", strings.Join(wrong, "\n"))
	}
	// Both instances read partitions, so the links were made on both.
	for _, r := range []*runProc{first, second} {
		if n, ok := r.messages(); !ok || n == 0 {
			t.Errorf("%s processed no messages", r.db)
		}
	}
}

// jobEnds returns the job_end findings stored in db, by job id.
func jobEnds(ctx context.Context, t *testing.T, conn ch.Conn, db string) map[string]skew.JobEnd {
	t.Helper()
	rows, err := conn.Query(ctx, "SELECT job_id, body FROM "+db+".findings FINAL WHERE kind = 'job_end'")
	if err != nil {
		if ctx.Err() == nil && strings.Contains(err.Error(), "doesn't exist") {
			return nil // not migrated yet
		}
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]skew.JobEnd{}
	for rows.Next() {
		var id, body string
		if err := rows.Scan(&id, &body); err != nil {
			t.Fatal(err)
		}
		var f skew.Finding
		if err := json.Unmarshal([]byte(body), &f); err != nil || f.JobEnd == nil {
			t.Fatalf("job_end body %q: %v", body, err)
		}
		out[id] = *f.JobEnd
	}
	return out
}
