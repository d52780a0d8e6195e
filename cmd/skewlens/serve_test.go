package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/amtest"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
	"github.com/skewlens/skewlens/skew/keygroup"
	"github.com/skewlens/skewlens/skew/plans"
)

// TestRunServesPlansAndAlerts runs the pipeline on the hot_key incident
// with the salting API, a real Alertmanager and a plans topic on the real
// broker, as make run does with embedded servers: the API serves a plan
// for the hot key whose salted keys land on distinct subtasks under
// Flink's routing, a second poll with the ETag gets 304, the plan is on
// the compacted topic, and the alert reaches Alertmanager with its labels
// and runbook.
func TestRunServesPlansAndAlerts(t *testing.T) {
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	am := amtest.Start(t)
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	api := fmt.Sprintf("127.0.0.1:%d", port)
	run := startCLI(t, "demo", "--brokers", strings.Join(brokers, ","), "--clickhouse-addr", chAddr,
		"--database", "e2e_serve", "--group", "e2e-serve", "--topics", "serve-metrics,serve-samples",
		"--dead-letter-topic", "serve-dead", "--plans-topic", "serve-plans", "--listen", "127.0.0.1:0",
		"--api-listen", api, "--alertmanager-url", am.URL, "--simulate", "hot_key", "--speed", "20",
		"--duration", "45s", "--quiet", "--log-format", "json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The plan of the hot key, from the API.
	var plan *plans.Plan
	var etag string
	getUntil(t, "http://"+api+"/v1/salting", left(ctx), "the hot key's plan served", func(a httpAnswer) bool {
		var body struct{ Plans []plans.Plan }
		if err := json.Unmarshal([]byte(a.body), &body); err != nil || a.code != 200 {
			t.Fatalf("GET /v1/salting: %d %v", a.code, err)
		}
		for i := range body.Plans {
			if p := &body.Plans[i]; p.JobName == "hot_key" && len(p.HotKeys) > 0 && p.HotKeys[0].Key == "u42" {
				plan, etag = p, a.header.Get("ETag")
			}
		}
		return plan != nil
	}, run.end())
	r, err := keygroup.NewRouter(plan.Parallelism, plan.MaxParallelism)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, s := range plan.HotKeys[0].Salted {
		if got := r.Subtask(s.Key); got != s.Subtask {
			t.Errorf("salted key %q: Flink routes it to subtask %d, the plan says %d", s.Key, got, s.Subtask)
		}
		if seen[s.Subtask] {
			t.Errorf("two salted keys on subtask %d", s.Subtask)
		}
		seen[s.Subtask] = true
	}
	if len(seen) < 2 {
		t.Fatalf("plan salts u42 onto %d subtasks", len(seen))
	}
	t.Logf("plan v%d salts u42 onto subtasks %v", plan.Version, seen)

	// A poll with the ETag: 304 while the plans are unchanged (they may
	// change between two polls, so a few tries).
	got304 := false
	for try := 0; try < 10 && !got304; try++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+api+"/v1/salting", nil)
		req.Header.Set("If-None-Match", etag)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		got304 = resp.StatusCode == http.StatusNotModified
		etag = resp.Header.Get("ETag")
	}
	if !got304 {
		t.Error("no 304 for a poll with the current ETag")
	}

	// The alert in Alertmanager, with labels and runbook.
	n := am.WaitNotification(t, time.Minute, func(n *amtest.Notification) bool {
		for _, a := range n.Alerts {
			if a.Labels["job_name"] == "hot_key" && a.Labels["alertname"] == "FlinkHotKey" && a.Status == "firing" {
				return true
			}
		}
		return false
	})
	for _, a := range n.Alerts {
		if a.Labels["job_name"] != "hot_key" {
			continue
		}
		if a.Labels["task_name"] != "wideReduce-toNarrow" || a.Annotations["summary"] == "" || !strings.Contains(a.Annotations["runbook"], "salting plan") {
			t.Errorf("alert labels %v annotations %v", a.Labels, a.Annotations)
		}
	}

	// The plan on the compacted topic, keyed job_id/task_name.
	rd := kafka.NewReader(kafka.ReaderConfig{Brokers: brokers, Topic: "serve-plans", Partition: 0, MaxWait: 200 * time.Millisecond})
	defer rd.Close()
	for {
		m, err := rd.ReadMessage(ctx)
		if err != nil {
			t.Fatalf("plan not on the topic: %v", err)
		}
		if string(m.Key) == plans.Key(plan.JobID, plan.TaskName) && m.Value != nil {
			break
		}
	}
	if code, _, errOut := run.wait(); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, tail([]byte(errOut)))
	}
}

// TestServeCommand runs `skewlens serve` as a process with a token file:
// reads need no token, a write without one is 401 and changes nothing,
// a write with one is stored and audited under the token's name.
func TestServeCommand(t *testing.T) {
	chAddr := chtest.Start(t)
	port, err := testenv.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	api := fmt.Sprintf("http://127.0.0.1:%d", port)
	tokens := t.TempDir() + "/tokens.yaml"
	if err := os.WriteFile(tokens, []byte("oncall-alice: 0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startChild(t, "serve", "serve", "--clickhouse-addr", chAddr, "--database", "e2e_serve_cmd",
		"--api-listen", fmt.Sprintf("127.0.0.1:%d", port), "--token-file", tokens, "--log-format", "json")
	do := func(method, path, token, body string) (int, string) {
		t.Helper()
		a := answerUntil(t, 10*time.Second, "serve answering "+method+" "+path, func() (*http.Response, error) {
			req, _ := http.NewRequest(method, api+path, strings.NewReader(body))
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			return http.DefaultClient.Do(req)
		}, anyAnswer, srv.end())
		return a.code, a.body
	}
	if code, body := do("GET", "/v1/salting", "", ""); code != 200 || !strings.Contains(body, `"plans"`) {
		t.Fatalf("GET /v1/salting: %d %s", code, body)
	}
	exclude := `{"key":"u42","reason":"it's a bot"}`
	if code, _ := do("POST", "/v1/salting/job1/agg/exclude", "", exclude); code != http.StatusUnauthorized {
		t.Fatalf("write without a token: %d, want 401", code)
	}
	if code, _ := do("POST", "/v1/salting/job1/agg/exclude", "wrong-token-0000000000", exclude); code != http.StatusUnauthorized {
		t.Fatalf("write with a wrong token: %d, want 401", code)
	}
	if code, body := do("GET", "/v1/audit?job_id=job1", "0123456789abcdef0123", ""); code != 200 || strings.Contains(body, "oncall-alice") {
		t.Fatalf("audit before any valid write: %d %s", code, body)
	}
	if code, body := do("POST", "/v1/salting/job1/agg/exclude", "0123456789abcdef0123", exclude); code/100 != 2 {
		t.Fatalf("write with the token: %d %s", code, body)
	}
	if code, body := do("GET", "/v1/audit?job_id=job1", "0123456789abcdef0123", ""); code != 200 || !strings.Contains(body, "oncall-alice") || !strings.Contains(body, "u42") {
		t.Fatalf("audit after the write: %d %s", code, body)
	}
}
