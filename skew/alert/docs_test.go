package alert_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/sinks/webhook"
	"github.com/skewlens/skewlens/skew/alert"
)

// TestDocsJSON checks that the JSON examples in docs/alerts.md decode,
// field by field, into the types they document, so the documentation
// cannot drift from the contract.
func TestDocsJSON(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "alerts.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, part := range strings.Split(string(doc), "```json\n")[1:] {
		end := strings.Index(part, "```")
		if end < 0 {
			t.Fatal("unterminated json block")
		}
		blocks = append(blocks, part[:end])
	}
	if len(blocks) != 2 {
		t.Fatalf("%d json blocks in docs/alerts.md, want 2 (the alert and the webhook body)", len(blocks))
	}
	strict := func(block string, v any) {
		t.Helper()
		dec := json.NewDecoder(bytes.NewBufferString(block))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			t.Fatalf("docs/alerts.md example does not decode: %v\n%s", err, block)
		}
	}
	var a alert.Alert
	strict(blocks[0], &a)
	if a.ID == "" || a.Labels["alertname"] != alert.NameSubtaskSkew || a.Finding == nil || a.Finding.Evidence == nil {
		t.Errorf("alert example: %+v", a)
	}
	if got := a.Annotations["window_start"]; got != a.StartsAt.Add(10e9).Format("2006-01-02T15:04:05.000Z07:00") {
		t.Errorf("example window_start %s does not follow starts_at %s", got, a.StartsAt)
	}
	var m webhook.Message
	strict(blocks[1], &m)
	if m.Version != "1" || m.Sender != "skewlens" || len(m.Alerts) != 1 || m.Alerts[0].Status != alert.StatusResolved || m.Alerts[0].EndsAt.IsZero() {
		t.Errorf("webhook example: %+v", m)
	}
}
