package kafkasrc

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// deadLetterLines decodes the JSON log lines of a deadLetterLog.
func deadLetterLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	buf.Reset()
	return out
}

// TestDeadLetterLogIsRateLimited: the first dead letter of a topic and
// reason is logged at once with its count, reason and topic; the next
// ones within the interval are only counted, and the first after it logs
// their count; another reason has its own line; flush logs what is left.
func TestDeadLetterLogIsRateLimited(t *testing.T) {
	var buf bytes.Buffer
	l := newDeadLetterLog(slog.New(slog.NewJSONHandler(&buf, nil)), "dlq")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }

	l.sent("flink-metrics", 0, 10, "invalid_json", "unexpected end")
	got := deadLetterLines(t, &buf)
	if len(got) != 1 || got[0]["level"] != "WARN" || got[0]["count"] != 1.0 || got[0]["total"] != 1.0 ||
		got[0]["reason"] != "invalid_json" || got[0]["topic"] != "flink-metrics" || got[0]["dead_letter_topic"] != "dlq" ||
		got[0]["last_offset"] != 10.0 || got[0]["last_err"] != "unexpected end" {
		t.Fatalf("first dead letter: %v, want one WARN line with count 1, reason, topic and the dead-letter topic", got)
	}
	// A flood within the interval: counted, not logged; another reason
	// or topic is logged at once.
	for i := range 1000 {
		now = now.Add(time.Millisecond)
		l.sent("flink-metrics", 1, int64(11+i), "invalid_json", "x")
	}
	l.sent("flink-metrics", 0, 5, "bad_line", "not a metric")
	l.sent("flink-key-samples", 0, 7, "invalid_json", "y")
	got = deadLetterLines(t, &buf)
	if len(got) != 2 || got[0]["reason"] != "bad_line" || got[1]["topic"] != "flink-key-samples" {
		t.Fatalf("within the interval: %v, want only the new reason's and the new topic's first lines", got)
	}
	// The first after the interval counts those in between.
	now = now.Add(deadLetterLogEvery)
	l.sent("flink-metrics", 1, 2000, "invalid_json", "z")
	got = deadLetterLines(t, &buf)
	if len(got) != 1 || got[0]["count"] != 1001.0 || got[0]["total"] != 1002.0 || got[0]["last_offset"] != 2000.0 {
		t.Fatalf("after the interval: %v, want one line counting 1001, 1002 in all", got)
	}
	// flush logs the uncounted ones only.
	l.sent("flink-metrics", 1, 2001, "invalid_json", "z")
	l.flush()
	got = deadLetterLines(t, &buf)
	if len(got) != 1 || got[0]["count"] != 1.0 || got[0]["total"] != 1003.0 {
		t.Fatalf("flush: %v, want one line with the one uncounted dead letter", got)
	}
	l.flush()
	if got = deadLetterLines(t, &buf); len(got) != 0 {
		t.Fatalf("second flush logged %v", got)
	}
}
