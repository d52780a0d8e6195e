package serve

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestForbiddenSaysWhatIsNeeded: a server without tokens refuses writes
// and the audit log with 403, each saying what the request would need.
func TestForbiddenSaysWhatIsNeeded(t *testing.T) {
	t.Parallel()
	store := newFakeStore(testPlan(jobID, "T", 1, time.Now(), "k"))
	s, _ := newTestServer(t, Config{Tokens: map[string]string{}}, store)
	base := "/v1/salting/" + jobID + "/T"
	for _, tc := range []struct {
		name string
		rq   request
		want []string
	}{
		{"audit", request{method: "GET", target: "/v1/audit", token: aliceToken}, []string{"reading the audit log needs an API token", "--token-file"}},
		{"pin", request{method: "POST", target: base + "/pin", token: aliceToken}, []string{"writes are disabled", "no API tokens"}},
		{"delete", request{method: "DELETE", target: base + "/overrides/pin", token: aliceToken}, []string{"writes are disabled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, s.Handler(), tc.rq)
			if r.code != 403 {
				t.Fatalf("%d %s, want 403", r.code, r.body)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.body, w) {
					t.Errorf("body %s: want %q in it", r.body, w)
				}
			}
			if tc.name == "audit" && strings.Contains(r.body, "writes") {
				t.Errorf("audit answer %s talks about writes", r.body)
			}
		})
	}
}

// TestFailedAuthenticationIsLogged: a 401 is logged with the peer, the
// route and the reason, never the token, at most once per AuthFailureLogInterval;
// the next record says how many it left out.
func TestFailedAuthenticationIsLogged(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	s, err := New(Config{Addr: "127.0.0.1:0", Tokens: map[string]string{"alice": aliceToken}},
		storeOf(newFakeStore()), slog.New(slog.NewJSONHandler(&buf, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s.authLog.now = func() time.Time { return now }
	base := "/v1/salting/" + jobID + "/T"
	const wrong = "wrong-token-0123456789abcdef"
	type record struct {
		Level, Msg, Peer, Route, Reason string
		Suppressed                      int
	}
	for _, tc := range []struct {
		name    string
		advance time.Duration
		rq      request
		want    *record // nil: not logged
	}{
		{"first failure", 0, request{method: "POST", target: base + "/pin", token: wrong},
			&record{Level: "WARN", Route: "POST /v1/salting/{job_id}/{task_name}/pin", Reason: "unknown token"}},
		{"within the interval", time.Second, request{method: "GET", target: "/v1/audit"}, nil},
		{"still within", AuthFailureLogInterval - 2*time.Second, request{method: "GET", target: "/v1/audit", token: wrong}, nil},
		{"success is not logged", 2 * time.Second, request{method: "GET", target: "/v1/audit", token: aliceToken}, nil},
		{"after the interval", 0, request{method: "GET", target: "/v1/audit"},
			&record{Level: "WARN", Route: "GET /v1/audit", Reason: "no bearer token", Suppressed: 2}},
	} {
		buf.Reset()
		now = now.Add(tc.advance)
		do(t, s.Handler(), tc.rq)
		out := buf.String()
		if strings.Contains(out, wrong) || strings.Contains(out, aliceToken) {
			t.Errorf("%s: the log shows a token: %s", tc.name, out)
		}
		if tc.want == nil {
			if out != "" {
				t.Errorf("%s: logged %s", tc.name, out)
			}
			continue
		}
		var got record
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("%s: %v in %q", tc.name, err, out)
		}
		if got.Peer == "" || !strings.Contains(got.Msg, "authentication failed") {
			t.Errorf("%s: record %s: want the peer and the message", tc.name, out)
		}
		got.Peer, got.Msg = "", ""
		if got != *tc.want {
			t.Errorf("%s: record %+v, want %+v", tc.name, got, *tc.want)
		}
	}
}
