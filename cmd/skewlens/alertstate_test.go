package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/internal/testenv/kafkatest"
	"github.com/skewlens/skewlens/skew/alert"
)

// webhookRecorder records the alerts posted to it, in order, as
// "id status" (take) and whole (all).
type webhookRecorder struct {
	mu     sync.Mutex
	alerts []string
	full   []alert.Alert
}

func (w *webhookRecorder) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var body struct {
		Alerts []alert.Alert `json:"alerts"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(rw, err.Error(), http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, a := range body.Alerts {
		w.alerts = append(w.alerts, a.ID+" "+a.Status)
	}
	w.full = append(w.full, body.Alerts...)
}

// all returns every alert posted so far.
func (w *webhookRecorder) all() []alert.Alert {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.full)
}

// take returns the alerts recorded since the last take.
func (w *webhookRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.alerts
	w.alerts = nil
	return out
}

// TestRunAlertStateSurvivesRestart runs the hot_key incident in real time
// through `run` twice, one run right after the other, against the same
// broker, ClickHouse and consumer group: the first run's alerts fire; the
// second resumes their state and, while the condition goes on, sends no
// new firing notification for them.
func TestRunAlertStateSurvivesRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kafka broker and ClickHouse, and runs for over a minute")
	}
	brokers := kafkatest.Start(t)
	chAddr := chtest.Start(t)
	rec := &webhookRecorder{}
	hook := httptest.NewServer(rec)
	defer hook.Close()
	run := func(duration string) string {
		t.Helper()
		code, _, errOut := runCLI(t, "", "demo", "--brokers", strings.Join(brokers, ","), "--clickhouse-addr", chAddr,
			"--database", "e2e_alertstate", "--group", "e2e-alertstate", "--topics", "as-metrics,as-samples",
			"--dead-letter-topic", "as-dead", "--listen", "127.0.0.1:0", "--simulate", "hot_key", "--speed", "1",
			"--alert-for", "10s", "--alert-resolve-after", "30s", "--alert-webhook-url", hook.URL,
			"--duration", duration, "--quiet", "--log-format", "json")
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, tail([]byte(errOut)))
		}
		return errOut
	}
	run("40s")
	fired := map[string]bool{}
	for _, a := range rec.take() {
		if id, ok := strings.CutSuffix(a, " firing"); ok {
			fired[id] = true
		}
	}
	if len(fired) == 0 {
		t.Fatal("the first run fired no alert")
	}
	errOut := run("35s")
	if !strings.Contains(errOut, `"msg":"alert state restored"`) || strings.Contains(errOut, `"firing":0}`) {
		t.Fatalf("the second run did not restore firing alerts:\n%s", tail([]byte(errOut)))
	}
	for _, a := range rec.take() {
		if id, ok := strings.CutSuffix(a, " firing"); ok && fired[id] {
			t.Errorf("the second run fired %s again", id)
		}
	}
	t.Logf("fired in the first run and not again: %v", fired)
}
