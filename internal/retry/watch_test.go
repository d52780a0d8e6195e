package retry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestDoWatchedLogsRecovery checks the "recovered" line: one INFO line
// when an operation succeeds after failing, with the operation, the
// attempts, how long it failed and the last error; none when it succeeds
// at once or never does.
func TestDoWatchedLogsRecovery(t *testing.T) {
	tests := []struct {
		name      string
		policy    Policy
		errs      []error // of the attempts before the success, if any
		succeeds  bool
		wantLines int
	}{
		{"at once", fast(3), nil, true, 0},
		{"after two failures", fast(3), []error{errFlaky, errors.New("connection refused")}, true, 1},
		{"retries used up", fast(1), []error{errFlaky, errFlaky, errFlaky}, false, 0},
		{"permanent", fast(3), []error{errFlaky, Permanent("insert", errors.New("bad"))}, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&buf, nil))
			calls, notified := 0, 0
			w := Watch{Log: log, Op: "write 3 findings", Notify: func(int, time.Duration, error) { notified++ }}
			err := DoWatched(context.Background(), tc.policy, w, func(context.Context) error {
				calls++
				if calls <= len(tc.errs) {
					return tc.errs[calls-1]
				}
				return nil
			})
			if (err == nil) != tc.succeeds {
				t.Fatalf("err = %v, want success %v", err, tc.succeeds)
			}
			if notified == 0 && len(tc.errs) > 0 {
				t.Errorf("Notify not called")
			}
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if buf.Len() == 0 {
				lines = nil
			}
			if len(lines) != tc.wantLines {
				t.Fatalf("%d log lines, want %d:\n%s", len(lines), tc.wantLines, buf.String())
			}
			if tc.wantLines == 0 {
				return
			}
			var rec struct {
				Level, Msg, Op, Last_err string
				Attempts                 int
				Failing_for              time.Duration // nanoseconds in JSON
			}
			if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
				t.Fatal(err)
			}
			if rec.Level != "INFO" || rec.Msg != "recovered" || rec.Op != "write 3 findings" || rec.Attempts != calls ||
				rec.Last_err != "connection refused" || rec.Failing_for < 0 {
				t.Errorf("recovered line %s: want INFO recovered, op, attempts %d, failing_for and the last error", lines[0], calls)
			}
		})
	}
}
