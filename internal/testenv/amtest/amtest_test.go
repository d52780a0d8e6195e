package amtest

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// TestStart checks that Start gives a ready Alertmanager that accepts an
// alert, lists it, and notifies the receiver; a second Start returns the
// same server.
func TestStart(t *testing.T) {
	s := Start(t)
	if again := Start(t); again != s {
		t.Fatalf("second Start = %s, want %s", again.URL, s.URL)
	}
	job := fmt.Sprintf("amtest-%d", time.Now().UnixNano())
	body := fmt.Sprintf(`[{"labels":{"alertname":"AmtestProbe","job_id":%q},"annotations":{"summary":"probe"},"startsAt":%q,"endsAt":%q}]`,
		job, time.Now().Add(-time.Second).UTC().Format(time.RFC3339), time.Now().Add(time.Minute).UTC().Format(time.RFC3339))
	resp, err := http.Post(s.URL+"/api/v2/alerts", "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /api/v2/alerts: HTTP %d", resp.StatusCode)
	}
	listed := s.Alerts(t, fmt.Sprintf("job_id=%q", job))
	if len(listed) != 1 || listed[0].Labels["alertname"] != "AmtestProbe" || listed[0].Annotations["summary"] != "probe" {
		t.Fatalf("GET /api/v2/alerts = %+v, want the probe", listed)
	}
	n := s.WaitNotification(t, 10*time.Second, func(n *Notification) bool { return n.CommonLabels["job_id"] == job })
	if n.Status != "firing" || len(n.Alerts) != 1 || n.Alerts[0].Annotations["summary"] != "probe" || n.Receiver != "skewlens-webhook" {
		t.Errorf("notification = %+v", n)
	}
}
