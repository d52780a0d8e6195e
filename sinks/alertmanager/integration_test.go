package alertmanager

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/alerttest"
	"github.com/skewlens/skewlens/internal/testenv/amtest"
	"github.com/skewlens/skewlens/sinks/alertdeliver"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/alert"
	"github.com/skewlens/skewlens/skew/incident"
)

func TestMain(m *testing.M) { amtest.Main(m) }

const window = 10_000 // ms

func slowSubtask(job string, ws int64) skew.Finding {
	sub := 2
	return skew.Finding{
		Kind: skew.KindSaturation, JobID: job, JobName: "orders", TaskName: "Sink: es", SubtaskIndex: &sub,
		WindowStart: ws, WindowEnd: ws + window,
		Saturation: &skew.Saturation{Cause: skew.CauseSlowSubtask, Host: "10.0.0.7", TaskAttemptID: "14fc6da2", Evidence: &skew.Evidence{
			BusyMsPerSecond: 990, RecordsInPerSecond: 1000, PeerMedianRecordsInPerSecond: 1000, InputRatio: 1, Subtasks: 4, SaturatedSubtasks: 1, SustainedWindows: 2,
		}},
		Summary: `Subtask 2 of "Sink: es" is busy 990 ms/s while its input is 1.0× its peers': it is slow, not overloaded; jstack the TaskManager on host 10.0.0.7.`,
	}
}

func hotKey(job string, ws int64) skew.Finding {
	sub := 3
	return skew.Finding{Kind: skew.KindHotKey, JobID: job, JobName: "orders", TaskName: "Window agg", SubtaskIndex: &sub,
		WindowStart: ws, WindowEnd: ws + window, HotKey: &skew.HotKey{Key: "u42", Share: 0.31, EstimatedRecords: 31000}}
}

// TestRealAlertmanager drives the state machine with a sequence of
// findings through the Alertmanager notifier into a real Alertmanager
// 0.25, whose webhook calls back into the test: the alerts fire with the
// right labels and annotations, are listed by GET /api/v2/alerts, are
// re-posted while firing, and resolve once the findings stop.
func TestRealAlertmanager(t *testing.T) {
	am := amtest.Start(t)
	job := fmt.Sprintf("it-%d", time.Now().UnixNano())
	reg := prometheus.NewRegistry()
	n, err := New(Config{URL: am.URL, ResendInterval: 300 * time.Millisecond, GeneratorURL: "http://skewlens.test/findings"}, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := alertdeliver.New(alertdeliver.Config{
		StateMachine: alert.Config{PlanVersion: func(j, task string) (uint64, bool) { return 4, j == job && task == "Window agg" }},
		Fanout:       alertdeliver.FanoutConfig{Retry: retry.Policy{MaxRetries: retry.Unlimited, MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}},
	}, []alertdeliver.Target{{Name: Name, Notifier: n}}, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()

	// Event time a few minutes back, so every time is in Alertmanager's
	// past: three windows with both conditions, fired after the second.
	base := (time.Now().Add(-5*time.Minute).UnixMilli() / window) * window
	it := alerttest.Incidents(t, incident.DefaultConfig().Hysteresis.For)
	for i := range int64(3) {
		ws := base + i*window
		a.Apply(it.Observe([]skew.Finding{slowSubtask(job, ws), hotKey(job, ws)}))
		a.Apply(it.Advance(ws + window))
	}
	lastSeen := base + 3*window
	if got := len(a.Active()); got != 2 {
		t.Fatalf("%d alerts firing in the tracker, want 2", got)
	}

	byName := func(status, name string) func(*amtest.Notification) bool {
		return func(x *amtest.Notification) bool {
			return x.Status == status && x.CommonLabels["job_id"] == job && x.CommonLabels["alertname"] == name
		}
	}
	slow := am.WaitNotification(t, 15*time.Second, byName("firing", alert.NameSlowSubtask))
	if len(slow.Alerts) != 1 {
		t.Fatalf("slow_subtask notification has %d alerts", len(slow.Alerts))
	}
	sa := slow.Alerts[0]
	wantLabels := map[string]string{"alertname": "FlinkSlowSubtask", "severity": "warning", "job_id": job, "job_name": "orders",
		"task_name": "Sink: es", "subtask": "2", "cause": "slow_subtask", "host": "10.0.0.7"}
	for k, v := range wantLabels {
		if sa.Labels[k] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", k, sa.Labels[k], v, sa.Labels)
		}
	}
	if len(sa.Labels) != len(wantLabels) {
		t.Errorf("labels %v, want exactly %v", sa.Labels, wantLabels)
	}
	if sa.Annotations["summary"] != slowSubtask(job, 0).Summary {
		t.Errorf("summary = %q", sa.Annotations["summary"])
	}
	if !strings.Contains(sa.Annotations["runbook"], "jstack the TaskManager on host 10.0.0.7") {
		t.Errorf("runbook = %q", sa.Annotations["runbook"])
	}
	var ev skew.Evidence
	if err := json.Unmarshal([]byte(sa.Annotations["evidence"]), &ev); err != nil || ev.BusyMsPerSecond != 990 {
		t.Errorf("evidence %q: %v", sa.Annotations["evidence"], err)
	}
	if sa.GeneratorURL != "http://skewlens.test/findings" || !sa.StartsAt.Equal(time.UnixMilli(base)) {
		t.Errorf("generatorURL %q startsAt %v, want the first window's start %v", sa.GeneratorURL, sa.StartsAt, time.UnixMilli(base).UTC())
	}

	hot := am.WaitNotification(t, 15*time.Second, byName("firing", alert.NameHotKey))
	if ha := hot.Alerts[0]; !strings.Contains(ha.Annotations["runbook"], "Apply salting plan v4 (GET /v1/salting/"+job+"/Window%20agg)") ||
		ha.Labels["severity"] != "info" || ha.Annotations["hot_keys"] != `"u42" 31.0%` {
		t.Errorf("hot key alert: labels %v annotations %v", ha.Labels, ha.Annotations)
	}

	listed := am.Alerts(t, fmt.Sprintf("job_id=%q", job))
	if len(listed) != 2 {
		t.Fatalf("GET /api/v2/alerts lists %d alerts of the job, want 2: %+v", len(listed), listed)
	}
	for _, l := range listed {
		if l.Status.State != "active" || !l.EndsAt.After(time.Now()) || l.Labels["job_id"] != job {
			t.Errorf("listed alert %+v: want active, ending in the future", l)
		}
	}

	// While firing, the notifier re-posts (Alertmanager would otherwise
	// resolve the alerts at their endsAt).
	testenv.Eventually(t, 10*time.Second, "re-posts while firing", func() bool {
		return testutil.ToFloat64(n.m.resends.WithLabelValues("ok")) >= 2
	})

	// The findings stop; the job keeps reporting (the watermark moves) and
	// after ResolveAfter (30 s of event time) both alerts resolve.
	a.Apply(it.Advance(lastSeen + 29_999))
	if got := len(a.Active()); got != 2 {
		t.Fatalf("%d alerts firing just before ResolveAfter, want 2", got)
	}
	a.Apply(it.Advance(lastSeen + 30_000))
	if got := len(a.Active()); got != 0 {
		t.Fatalf("%d alerts firing after ResolveAfter, want 0", got)
	}
	res := am.WaitNotification(t, 15*time.Second, byName("resolved", alert.NameSlowSubtask))
	if ra := res.Alerts[0]; ra.Status != "resolved" || !ra.EndsAt.Equal(time.UnixMilli(lastSeen)) || ra.Annotations["resolved_reason"] != "absent" {
		t.Errorf("resolved alert: status %q endsAt %v (want the last window's end %v) annotations %v",
			ra.Status, ra.EndsAt, time.UnixMilli(lastSeen).UTC(), ra.Annotations)
	}
	am.WaitNotification(t, 15*time.Second, byName("resolved", alert.NameHotKey))
	if listed := am.Alerts(t, fmt.Sprintf("job_id=%q", job)); len(listed) != 0 {
		t.Errorf("GET /api/v2/alerts still lists %d alerts of the job after resolving: %+v", len(listed), listed)
	}
	if ids := n.Active(); len(ids) != 0 {
		t.Errorf("notifier still re-posts %v", ids)
	}
	// The fan-out counts a delivery once Notify has returned, which may
	// be a moment after Alertmanager has acted on it.
	sent := func() float64 {
		return counterValue(t, reg, "skewlens_alert_notifications_total", map[string]string{"notifier": Name, "result": "sent"})
	}
	testenv.Eventually(t, 5*time.Second, "4 notifications sent (2 firing, 2 resolved)", func() bool { return sent() >= 4 })
	if got := sent(); got != 4 {
		t.Errorf("notifications sent = %v, want 4 (2 firing, 2 resolved)", got)
	}
}

// counterValue returns the value of one series of a registered counter,
// -1 when there is none.
func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metric
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return -1
}
