package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew/plans"
)

const jobID = "84dce1ec8aa5a4df2d1758d6e9278693"

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{name: "defaults", cfg: Config{}},
		{name: "tokens", cfg: Config{Tokens: map[string]string{"alice": aliceToken, "ci bot": bobToken}}},
		{name: "tls pair", cfg: Config{TLSCertFile: "c.pem", TLSKeyFile: "k.pem"}},
		{name: "bad addr", cfg: Config{Addr: "localhost"}, wantErr: "addr"},
		{name: "bad port", cfg: Config{Addr: ":99999"}, wantErr: "bad port"},
		{name: "short token", cfg: Config{Tokens: map[string]string{"a": "x1y2z"}}, wantErr: "shorter than 16"},
		{name: "token with space", cfg: Config{Tokens: map[string]string{"a": "0123456789 abcdef"}}, wantErr: "printable ASCII"},
		{name: "empty name", cfg: Config{Tokens: map[string]string{"": aliceToken}}, wantErr: "token name"},
		{name: "control char name", cfg: Config{Tokens: map[string]string{"a\nb": aliceToken}}, wantErr: "control character"},
		{name: "same token twice", cfg: Config{Tokens: map[string]string{"a": aliceToken, "b": aliceToken}}, wantErr: `tokens "a" and "b"`},
		{name: "half tls", cfg: Config{TLSCertFile: "c.pem"}, wantErr: "both"},
		{name: "negative timeout", cfg: Config{StoreTimeout: -time.Second}, wantErr: "store timeout"},
		{name: "negative body", cfg: Config{MaxBodyBytes: -1}, wantErr: "max body bytes"},
	}
	// Validate only checks: the zero Config has no address.
	if err := (Config{}).Validate(); err == nil {
		t.Error("Validate accepted the zero Config")
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig: %v", err)
	}
	if got := (Config{}).withDefaults(); !reflect.DeepEqual(got, DefaultConfig()) {
		t.Errorf("zero fields filled with %+v, want DefaultConfig %+v", got, DefaultConfig())
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg.withDefaults()
			err := cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if cfg.MaxBodyBytes != DefaultConfig().MaxBodyBytes || cfg.CacheTTL != DefaultConfig().CacheTTL || cfg.StoreTimeout != DefaultConfig().StoreTimeout {
					t.Errorf("defaults not filled: %+v", cfg)
				}
				if tt.cfg.Addr == "" && cfg.Addr != DefaultConfig().Addr {
					t.Errorf("addr = %q, want %q", cfg.Addr, DefaultConfig().Addr)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
			}
			for _, tok := range tt.cfg.Tokens {
				if len(tok) >= 4 && strings.Contains(err.Error(), tok) {
					t.Errorf("error %q reveals a token", err)
				}
			}
		})
	}
}

func TestNoneMatch(t *testing.T) {
	const tag = `"abc"`
	tests := []struct {
		header string
		want   bool
	}{
		{`"abc"`, true},
		{`*`, true},
		{`W/"abc"`, true},
		{`"x", "abc"`, true},
		{`"x","y"`, false},
		{`abc`, false},
		{`"ab"`, false},
		{``, false},
		{`"x", *`, true},
	}
	for _, tt := range tests {
		if got := noneMatch(tt.header, tag); got != tt.want {
			t.Errorf("noneMatch(%q) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestParams(t *testing.T) {
	okJob := []string{jobID, "job-1.b_c:d", strings.Repeat("a", MaxIDBytes)}
	badJob := []string{"", "a b", "a/b", "a'b", "jöb", "a\nb", strings.Repeat("a", MaxIDBytes+1)}
	for _, s := range okJob {
		if err := checkJobID(s); err != nil {
			t.Errorf("checkJobID(%.40q): %v", s, err)
		}
	}
	for _, s := range badJob {
		if err := checkJobID(s); !isBadRequest(err) {
			t.Errorf("checkJobID(%.40q) = %v, want a bad request", s, err)
		}
	}
	okTask := []string{"Source: clicks -> Map", `it's "quoted" \ / 中文 🔥`, "'; DROP TABLE plans; --", strings.Repeat("é", MaxIDBytes/2)}
	badTask := []string{"", "a\nb", "tab\t", "nul\x00", "\xff", "del\x7f", strings.Repeat("a", MaxIDBytes+1)}
	for _, s := range okTask {
		if err := checkTaskName(s); err != nil {
			t.Errorf("checkTaskName(%.40q): %v", s, err)
		}
	}
	for _, s := range badTask {
		if err := checkTaskName(s); !isBadRequest(err) {
			t.Errorf("checkTaskName(%.40q) = %v, want a bad request", s, err)
		}
	}
	sinceTests := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"1772366400000", time.UnixMilli(1772366400000).UTC(), true},
		{"2026-03-01T12:00:00Z", time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), true},
		{"2026-03-01T13:00:00.5+01:00", time.Date(2026, 3, 1, 12, 0, 0, 5e8, time.UTC), true},
		{"-5", time.Time{}, false},
		{"yesterday", time.Time{}, false},
		{"2026-03-01", time.Time{}, false},
	}
	for _, tt := range sinceTests {
		got, err := parseSince(tt.in)
		if (err == nil) != tt.ok || !got.Equal(tt.want) {
			t.Errorf("parseSince(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
	for in, want := range map[string]int{"": DefaultLimit, "1": 1, "1000": 1000, "0": -1, "1001": -1, "x": -1, "-3": -1} {
		got, err := parseLimit(in)
		if want < 0 && err == nil || want >= 0 && (err != nil || got != want) {
			t.Errorf("parseLimit(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	if _, err := queryParams("job_id=a&job_id=b", "job_id"); err == nil {
		t.Error("repeated parameter accepted")
	}
	if _, err := queryParams("jobid=a", "job_id"); err == nil {
		t.Error("unknown parameter accepted")
	}
	if q, err := queryParams("key=a%2Bb+c%0A", "key"); err != nil || q["key"] != "a+b c\n" {
		t.Errorf("queryParams = %q, %v", q, err)
	}
}

func TestPlanReadsAndETags(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	store := newFakeStore(
		testPlan(jobID, "Source: clicks -> Map/Filter", 3, now, "user-42", "user-7"),
		testPlan(jobID, "Expired", 1, now.Add(-2*time.Hour), "k"),
		testPlan("0a", "B", 1, now, "k"),
	)
	s, _ := newTestServer(t, Config{CacheTTL: -1}, store)
	h := s.Handler()

	all := do(t, h, request{method: "GET", target: "/v1/salting"})
	if all.code != 200 {
		t.Fatalf("GET /v1/salting: %d %s", all.code, all.body)
	}
	var list struct {
		Plans []plans.Plan `json:"plans"`
	}
	if err := json.Unmarshal([]byte(all.body), &list); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range list.Plans {
		ids = append(ids, plans.Key(p.JobID, p.TaskName))
	}
	if want := []string{"0a/B", jobID + "/Source: clicks -> Map/Filter"}; fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("plans = %q, want %q (sorted, expired left out)", ids, want)
	}
	etag := all.header.Get("ETag")
	if etag != etagOf([]byte(all.body)) || !strings.HasPrefix(etag, `"`) {
		t.Errorf("ETag %q is not the strong tag of the body", etag)
	}
	if cc := all.header.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("Cache-Control %q", cc)
	}

	one := do(t, h, request{method: "GET", target: "/v1/salting/" + jobID + "/" + url.PathEscape("Source: clicks -> Map/Filter")})
	if one.code != 200 {
		t.Fatalf("GET one: %d %s", one.code, one.body)
	}
	var p plans.Plan
	if err := json.Unmarshal([]byte(one.body), &p); err != nil || p.TaskName != "Source: clicks -> Map/Filter" || p.Version != 3 {
		t.Errorf("GET one = %+v, %v", p, err)
	}

	tests := []struct {
		name, target, inm string
		want              int
	}{
		{"same tag", "/v1/salting", etag, 304},
		{"weak form", "/v1/salting", "W/" + etag, 304},
		{"in a list", "/v1/salting", `"nope", ` + etag, 304},
		{"star", "/v1/salting", "*", 304},
		{"other tag", "/v1/salting", `"nope"`, 200},
		{"tag of another answer", "/v1/salting/" + jobID + "/" + url.PathEscape("Source: clicks -> Map/Filter"), etag, 200},
		{"star on a missing plan", "/v1/salting/" + jobID + "/Expired", "*", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, h, request{method: "GET", target: tt.target, header: map[string]string{"If-None-Match": tt.inm}})
			if r.code != tt.want {
				t.Fatalf("%d %s, want %d", r.code, r.body, tt.want)
			}
			if r.code == 304 && (r.body != "" || r.header.Get("ETag") != etag) {
				t.Errorf("304 with body %q, ETag %q", r.body, r.header.Get("ETag"))
			}
		})
	}
	// HEAD answers like GET without a body.
	if r := do(t, h, request{method: "HEAD", target: "/v1/salting"}); r.code != 200 || r.body != "" || r.header.Get("ETag") != etag {
		t.Errorf("HEAD: %d %q %q", r.code, r.body, r.header.Get("ETag"))
	}
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	store := newFakeStore(testPlan(jobID, "T", 1, time.Now(), "k"))
	s, _ := newTestServer(t, Config{MaxBodyBytes: 4096}, store)
	h := s.Handler()
	base := "/v1/salting/" + jobID + "/T"
	long := strings.Repeat("a", MaxIDBytes+1)
	tests := []struct {
		name string
		rq   request
		want int
	}{
		{"unknown route", request{method: "GET", target: "/v2/salting"}, 404},
		{"wrong method", request{method: "PUT", target: "/v1/salting"}, 405},
		{"bad job id", request{method: "GET", target: "/v1/salting/a'b/T"}, 400},
		{"long job id", request{method: "GET", target: "/v1/salting/" + long + "/T"}, 400},
		{"long task", request{method: "GET", target: "/v1/salting/" + jobID + "/" + long}, 400},
		{"newline in task", request{method: "GET", target: "/v1/salting/" + jobID + "/a%0Ab"}, 400},
		{"invalid UTF-8 task", request{method: "GET", target: "/v1/salting/" + jobID + "/a%FFb"}, 400},
		{"unknown query parameter", request{method: "GET", target: "/v1/findings?jobid=x"}, 400},
		{"bad kind", request{method: "GET", target: "/v1/findings?kind=drop"}, 400},
		{"bad since", request{method: "GET", target: "/v1/findings?since=yesterday"}, 400},
		{"limit too high", request{method: "GET", target: "/v1/findings?limit=1001"}, 400},
		{"bad job in findings", request{method: "GET", target: "/v1/findings?job_id=%27%3B"}, 400},
		{"stats are not findings", request{method: "GET", target: "/v1/findings?kind=subtask_stats"}, 400},
		{"unknown stats parameter", request{method: "GET", target: "/v1/stats?kind=subtask_stats"}, 400},
		{"bad job in stats", request{method: "GET", target: "/v1/stats?job_id=a%20b"}, 400},
		{"bad task in stats", request{method: "GET", target: "/v1/stats?task_name=a%0Ab"}, 400},
		{"empty task in stats", request{method: "GET", target: "/v1/stats?task_name="}, 400},
		{"bad since in stats", request{method: "GET", target: "/v1/stats?since=-5"}, 400},
		{"limit zero in stats", request{method: "GET", target: "/v1/stats?limit=0"}, 400},
		{"stats twice", request{method: "GET", target: "/v1/stats?limit=1&limit=2"}, 400},
		{"unknown field", request{method: "POST", target: base + "/exclude", token: aliceToken, body: `{"key":"k","reasons":"x"}`}, 400},
		{"unknown field in plan", request{method: "POST", target: base + "/override", token: aliceToken, body: `{"plan":{"hot_keyz":[]}}`}, 400},
		{"key on pin", request{method: "POST", target: base + "/pin", token: aliceToken, body: `{"key":"k"}`}, 400},
		{"two values", request{method: "POST", target: base + "/exclude", token: aliceToken, body: `{"key":"k"} {"key":"j"}`}, 400},
		{"not JSON", request{method: "POST", target: base + "/exclude", token: aliceToken, body: `key=k`}, 400},
		{"invalid UTF-8 body", request{method: "POST", target: base + "/exclude", token: aliceToken, body: "{\"key\":\"\xff\"}"}, 400},
		{"empty body", request{method: "POST", target: base + "/exclude", token: aliceToken}, 400},
		{"empty key", request{method: "POST", target: base + "/exclude", token: aliceToken, body: `{"key":""}`}, 400},
		{"body too large", request{method: "POST", target: base + "/exclude", token: aliceToken, body: `{"key":"` + strings.Repeat("k", 5000) + `"}`}, 413},
		{"invalid override plan", request{method: "POST", target: base + "/override", token: aliceToken, body: `{"plan":{"parallelism":4,"max_parallelism":128,"separator":"#","hot_keys":[{"key":"k","subtask":0,"buckets":2,"salted":[]}]}}`}, 400},
		{"plan of another task", request{method: "POST", target: base + "/override", token: aliceToken, body: `{"plan":{"task_name":"U"}}`}, 400},
		{"reason not text", request{method: "POST", target: base + "/pin", token: aliceToken, body: `{"reason":5}`}, 400},
		{"bad action", request{method: "DELETE", target: base + "/overrides/drop", token: aliceToken}, 400},
		{"exclude without key", request{method: "DELETE", target: base + "/overrides/exclude", token: aliceToken}, 400},
		{"key on pin delete", request{method: "DELETE", target: base + "/overrides/pin?key=k", token: aliceToken}, 400},
		{"invalid UTF-8 key", request{method: "DELETE", target: base + "/overrides/exclude?key=%FF", token: aliceToken}, 400},
		{"missing override", request{method: "DELETE", target: base + "/overrides/pin", token: aliceToken}, 404},
		{"pin without plan", request{method: "POST", target: "/v1/salting/" + jobID + "/U/pin", token: aliceToken}, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, h, tt.rq)
			if r.code != tt.want {
				t.Fatalf("%d %s, want %d", r.code, r.body, tt.want)
			}
			if msg := errorOf(t, r); msg == "" {
				t.Error("empty error message")
			}
		})
	}
	if n := store.count("put") + store.count("delete") + store.count("findings") + store.count("stats"); n != 0 {
		t.Errorf("bad requests reached the store %d times", n)
	}
	if r := do(t, h, request{method: "PUT", target: "/v1/salting"}); r.header.Get("Allow") == "" {
		t.Error("405 without Allow")
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	store := newFakeStore(testPlan(jobID, "T", 1, time.Now(), "k"))
	s, reg := newTestServer(t, Config{}, store)
	h := s.Handler()
	base := "/v1/salting/" + jobID + "/T"
	writes := []request{
		{method: "POST", target: base + "/pin"},
		{method: "POST", target: base + "/exclude", body: `{"key":"k"}`},
		{method: "POST", target: base + "/override", body: `{"plan":{}}`},
		{method: "DELETE", target: base + "/overrides/pin"},
		{method: "GET", target: "/v1/audit"},
	}
	for _, w := range writes {
		for _, auth := range []map[string]string{
			nil,
			{"Authorization": "Bearer wrong-token-0123456789"},
			{"Authorization": "Bearer " + aliceToken + "x"},
			{"Authorization": "Basic " + aliceToken},
			{"Authorization": "Bearer"},
		} {
			w.header = auth
			r := do(t, h, w)
			if r.code != 401 {
				t.Errorf("%s %s with %q: %d, want 401", w.method, w.target, auth, r.code)
			}
			if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), `Bearer realm="skewlens"`) {
				t.Errorf("%s %s: WWW-Authenticate %q", w.method, w.target, r.header.Get("WWW-Authenticate"))
			}
		}
	}
	if n := store.count("put") + store.count("delete") + store.count("audit") + store.count("overrides"); n != 0 {
		t.Errorf("unauthenticated requests reached the store %d times", n)
	}
	if n := testutil.ToFloat64(s.m.rejected.WithLabelValues("unauthenticated")); n != float64(5*len(writes)) {
		t.Errorf("rejected{unauthenticated} = %v", n)
	}
	// The scheme is case-insensitive; the token's name is who.
	r := do(t, h, request{method: "POST", target: base + "/pin", header: map[string]string{"Authorization": "bearer " + bobToken}})
	if r.code != 201 {
		t.Fatalf("pin as bob: %d %s", r.code, r.body)
	}
	if len(store.audit) != 1 || store.audit[0].By != "bob" || store.overrides[0].By != "bob" {
		t.Errorf("audit %+v, overrides %+v", store.audit, store.overrides)
	}
	mfs, err := reg.Gather()
	if err != nil || len(mfs) == 0 {
		t.Errorf("gather: %d families, %v", len(mfs), err)
	}

	// Without tokens, writes are forbidden.
	ro, _ := newTestServer(t, Config{Tokens: map[string]string{}}, store)
	for _, w := range writes {
		w.token = aliceToken
		if r := do(t, ro.Handler(), w); r.code != 403 {
			t.Errorf("read-only %s %s: %d, want 403", w.method, w.target, r.code)
		}
	}
	if len(store.audit) != 1 {
		t.Errorf("read-only server changed the audit log: %d entries", len(store.audit))
	}
}

func TestWritesAndAudit(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Second)
	store := newFakeStore(testPlan(jobID, "T", 5, now, "a", "b"))
	s, _ := newTestServer(t, Config{CacheTTL: time.Hour, MaxOverridesPerTask: 3}, store)
	h := s.Handler()
	base := "/v1/salting/" + jobID + "/T"
	get := func() plans.Plan {
		t.Helper()
		r := do(t, h, request{method: "GET", target: base})
		if r.code != 200 {
			t.Fatalf("GET: %d %s", r.code, r.body)
		}
		var p plans.Plan
		if err := json.Unmarshal([]byte(r.body), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keys := func(p plans.Plan) string {
		var ks []string
		for _, k := range p.HotKeys {
			ks = append(ks, k.Key)
		}
		return strings.Join(ks, ",")
	}
	if p := get(); keys(p) != "a,b" || p.Version != 5 {
		t.Fatalf("before: %s v%d", keys(p), p.Version)
	}
	// Excluding a key shows at once despite the hour-long cache, as the
	// next version.
	r := do(t, h, request{method: "POST", target: base + "/exclude", token: aliceToken, body: `{"key":"a","reason":"too hot"}`})
	if r.code != 201 {
		t.Fatalf("exclude: %d %s", r.code, r.body)
	}
	var o plans.Override
	if err := json.Unmarshal([]byte(r.body), &o); err != nil || o.Key != "a" || o.By != "alice" || o.Reason != "too hot" || o.At.IsZero() {
		t.Errorf("exclude answer %+v, %v", o, err)
	}
	if p := get(); keys(p) != "b" || p.Version != 6 {
		t.Errorf("after exclude: %s v%d, want b v6", keys(p), p.Version)
	}
	// Once the stored plan has the key excluded, its version stands.
	stored := testPlan(jobID, "T", 6, now, "b")
	store.mu.Lock()
	store.plans = []plans.Plan{stored}
	store.mu.Unlock()
	s.snaps.invalidate()
	if p := get(); p.Version != 6 {
		t.Errorf("stored plan caught up: v%d, want 6", p.Version)
	}
	// Again: replaced, with a later time.
	r = do(t, h, request{method: "POST", target: base + "/exclude", token: bobToken, body: `{"key":"a"}`})
	var o2 plans.Override
	if r.code != 200 || json.Unmarshal([]byte(r.body), &o2) != nil || !o2.At.After(o.At) {
		t.Errorf("exclude again: %d %s", r.code, r.body)
	}
	// Pin and override; the override's plan replaces the stored one.
	if r := do(t, h, request{method: "POST", target: base + "/pin", token: aliceToken, body: `{"reason":"freeze"}`}); r.code != 201 {
		t.Fatalf("pin: %d %s", r.code, r.body)
	}
	repl := testPlan("", "", 0, now, "x", "y")
	body, _ := json.Marshal(map[string]any{"plan": repl, "reason": "manual"})
	if r := do(t, h, request{method: "POST", target: base + "/override", token: aliceToken, body: string(body)}); r.code != 201 {
		t.Fatalf("override: %d %s", r.code, r.body)
	}
	p := get()
	if keys(p) != "x,y" || p.Source != plans.SourceOverride || !p.Pinned || !p.ExpiresAt.IsZero() {
		t.Errorf("after override: %s source %s pinned %v expires %v", keys(p), p.Source, p.Pinned, p.ExpiresAt)
	}
	// The task has 3 overrides, the most allowed: a new one is refused.
	if r := do(t, h, request{method: "POST", target: base + "/exclude", token: aliceToken, body: `{"key":"z"}`}); r.code != 409 {
		t.Errorf("fourth override: %d, want 409", r.code)
	}
	// Delete them.
	for _, target := range []string{"/overrides/override", "/overrides/pin", "/overrides/exclude?key=a"} {
		if r := do(t, h, request{method: "DELETE", target: base + target, token: bobToken}); r.code != 204 {
			t.Errorf("DELETE %s: %d %s", target, r.code, r.body)
		}
	}
	if r := do(t, h, request{method: "DELETE", target: base + "/overrides/pin", token: bobToken}); r.code != 404 {
		t.Errorf("DELETE again: %d, want 404", r.code)
	}
	if p := get(); keys(p) != "b" || p.Version != 6 || p.Source != plans.SourceEngine {
		t.Errorf("after deletes: %s v%d %s", keys(p), p.Version, p.Source)
	}

	// The audit log, newest first.
	r = do(t, h, request{method: "GET", target: "/v1/audit?job_id=" + jobID + "&limit=10", token: aliceToken})
	if r.code != 200 || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("audit: %d %s", r.code, r.body)
	}
	var audit struct {
		Entries []servestore.AuditEntry `json:"entries"`
	}
	if err := json.Unmarshal([]byte(r.body), &audit); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range audit.Entries {
		got = append(got, e.Method+" "+e.Action+" "+e.By+" "+e.Result)
		if e.RemoteAddr == "" || e.At.IsZero() || len(e.What) == 0 || e.TaskName != "T" {
			t.Errorf("audit entry %+v", e)
		}
	}
	want := []string{"DELETE exclude bob deleted", "DELETE pin bob deleted", "DELETE override bob deleted",
		"POST override alice created", "POST pin alice created", "POST exclude bob replaced", "POST exclude alice created"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("audit:\n got %q\nwant %q", got, want)
	}
	if n := testutil.ToFloat64(s.m.changes.WithLabelValues("POST", "exclude")); n != 2 {
		t.Errorf("override_changes_total{POST,exclude} = %v", n)
	}

	// docs/api.md: a served plan, posted back as an override, is valid.
	served := do(t, h, request{method: "GET", target: base})
	body = []byte(`{"plan":` + strings.TrimSpace(served.body) + `,"reason":"hand-tuned"}`)
	if r := do(t, h, request{method: "POST", target: base + "/override", token: aliceToken, body: string(body)}); r.code != 201 {
		t.Errorf("served plan as an override: %d %s", r.code, r.body)
	}
	if p := get(); keys(p) != "b" || p.Source != plans.SourceOverride || p.Version != 7 {
		t.Errorf("after overriding with the served plan: %s %s v%d", keys(p), p.Source, p.Version)
	}
}

func TestSnapshotCache(t *testing.T) {
	t.Parallel()
	store := newFakeStore(testPlan(jobID, "T", 1, time.Now(), "k"))
	store.block = make(chan struct{})
	s, _ := newTestServer(t, Config{CacheTTL: time.Hour}, store)
	h := s.Handler()
	// Many concurrent pollers share one refresh.
	var wg sync.WaitGroup
	codes := make([]int, 20)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = do(t, h, request{method: "GET", target: "/v1/salting"}).code
		}()
	}
	testenv.Eventually(t, 10*time.Second, "20 pollers waiting on one refresh", func() bool {
		return testutil.ToFloat64(s.m.snapshots.WithLabelValues("shared"))+testutil.ToFloat64(s.m.snapshots.WithLabelValues("refreshed")) >= 20
	})
	close(store.block)
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Errorf("poller %d: %d", i, c)
		}
	}
	if n := store.count("plans"); n != 1 {
		t.Errorf("%d reads of the plans for 20 pollers, want 1", n)
	}
	do(t, h, request{method: "GET", target: "/v1/salting/" + jobID + "/T"})
	if n := store.count("plans"); n != 1 {
		t.Errorf("cached read went to the store (%d reads)", n)
	}
	// A client that gives up does not fail the refresh for others.
	store.mu.Lock()
	store.block = make(chan struct{})
	store.mu.Unlock()
	s.snaps.invalidate()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.snaps.get(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("impatient get: %v", err)
	}
	close(store.block)
	if r := do(t, h, request{method: "GET", target: "/v1/salting"}); r.code != 200 {
		t.Errorf("after an impatient client: %d", r.code)
	}
	if n := store.count("plans"); n != 2 {
		t.Errorf("%d reads of the plans, want 2", n)
	}
}

func TestStoreFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		err   error
		block bool
		want  int
	}{
		{"unavailable", errors.New("connection refused"), false, 503},
		{"permanent", retry.Permanent("read", errors.New("no such table")), false, 500},
		{"timeout", nil, true, 504},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newFakeStore(testPlan(jobID, "T", 1, time.Now(), "k"))
			store.err = tt.err
			if tt.block {
				store.block = make(chan struct{})
				defer close(store.block)
			}
			s, _ := newTestServer(t, Config{StoreTimeout: 50 * time.Millisecond, CacheTTL: -1}, store)
			for _, rq := range []request{
				{method: "GET", target: "/v1/salting"},
				{method: "GET", target: "/v1/findings"},
				{method: "GET", target: "/v1/stats"},
				{method: "POST", target: "/v1/salting/" + jobID + "/T/pin", token: aliceToken},
			} {
				r := do(t, s.Handler(), rq)
				if r.code != tt.want {
					t.Errorf("%s %s: %d %s, want %d", rq.method, rq.target, r.code, r.body, tt.want)
				}
				if msg := errorOf(t, r); strings.Contains(msg, "no such table") || strings.Contains(msg, "refused") {
					t.Errorf("error %q leaks store details", msg)
				}
			}
			if r := do(t, s.Handler(), request{method: "GET", target: "/readyz"}); r.code != 503 {
				t.Errorf("readyz: %d", r.code)
			}
		})
	}
}

func TestBusy(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	store.findings = []json.RawMessage{json.RawMessage(`{"kind":"hot_key"}`)}
	store.block = make(chan struct{})
	s, _ := newTestServer(t, Config{MaxConcurrentQueries: 1}, store)
	h := s.Handler()
	done := make(chan response)
	go func() { done <- do(t, h, request{method: "GET", target: "/v1/findings"}) }()
	testenv.Eventually(t, 10*time.Second, "the first request at the store", func() bool { return store.count("findings") > 0 })
	r := do(t, h, request{method: "GET", target: "/v1/findings"})
	if r.code != 503 || r.header.Get("Retry-After") == "" {
		t.Errorf("second request: %d, Retry-After %q; want 503 with Retry-After", r.code, r.header.Get("Retry-After"))
	}
	close(store.block)
	if r := <-done; r.code != 200 || r.body != `{"findings":[{"kind":"hot_key"}]}`+"\n" {
		t.Errorf("first request: %d %s", r.code, r.body)
	}
	if n := testutil.ToFloat64(s.m.rejected.WithLabelValues("busy")); n != 1 {
		t.Errorf("rejected{busy} = %v", n)
	}
}

func TestFindingsParameters(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	s, _ := newTestServer(t, Config{}, store)
	before := time.Now()
	r := do(t, s.Handler(), request{method: "GET", target: "/v1/findings"})
	if r.code != 200 || r.body != `{"findings":[]}`+"\n" {
		t.Fatalf("%d %s", r.code, r.body)
	}
	q := store.lastQuery
	if q.Limit != DefaultLimit || q.JobID != "" || q.Kind != "" || q.Since.Before(before.Add(-DefaultFindingsWindow-time.Second)) || q.Since.After(time.Now().Add(-DefaultFindingsWindow)) {
		t.Errorf("default query %+v", q)
	}
	r = do(t, s.Handler(), request{method: "GET", target: "/v1/findings?job_id=" + jobID + "&kind=saturation&since=1772366400000&limit=7"})
	if r.code != 200 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	want := servestore.FindingsQuery{JobID: jobID, Kind: "saturation", Since: time.UnixMilli(1772366400000).UTC(), Limit: 7}
	if store.lastQuery != want {
		t.Errorf("query %+v, want %+v", store.lastQuery, want)
	}
}

func TestStatsParameters(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	store.stats = []json.RawMessage{
		json.RawMessage(`{"kind":"subtask_stats","subtask_index":1}`),
		json.RawMessage(`{"kind":"subtask_stats","subtask_index":0}`),
	}
	store.findings = []json.RawMessage{json.RawMessage(`{"kind":"hot_key"}`)}
	s, _ := newTestServer(t, Config{}, store)
	before := time.Now()
	r := do(t, s.Handler(), request{method: "GET", target: "/v1/stats"})
	if want := `{"stats":[{"kind":"subtask_stats","subtask_index":1},{"kind":"subtask_stats","subtask_index":0}]}` + "\n"; r.code != 200 || r.body != want {
		t.Fatalf("%d %s, want 200 %s", r.code, r.body, want)
	}
	if cc := r.header.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("Cache-Control %q, want no-cache", cc)
	}
	q := store.lastStats
	if q.Limit != DefaultLimit || q.JobID != "" || q.TaskName != "" || q.Since.Before(before.Add(-DefaultFindingsWindow-time.Second)) || q.Since.After(time.Now().Add(-DefaultFindingsWindow)) {
		t.Errorf("default query %+v", q)
	}
	if n := store.count("findings"); n != 0 {
		t.Errorf("GET /v1/stats read findings %d times", n)
	}
	tests := []struct {
		name   string
		target string
		want   servestore.StatsQuery
		body   string
	}{
		{
			name:   "every parameter",
			target: "/v1/stats?job_id=" + jobID + "&task_name=Window%28Tumbling%29+%E2%86%92+Sink&since=1772366400000&limit=1",
			want:   servestore.StatsQuery{JobID: jobID, TaskName: "Window(Tumbling) → Sink", Since: time.UnixMilli(1772366400000).UTC(), Limit: 1},
			body:   `{"stats":[{"kind":"subtask_stats","subtask_index":1}]}` + "\n",
		},
		{
			name:   "task alone, since as RFC 3339",
			target: "/v1/stats?task_name=Enrich&since=2026-03-01T12:00:00Z&limit=1000",
			want:   servestore.StatsQuery{TaskName: "Enrich", Since: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Limit: 1000},
			body:   `{"stats":[{"kind":"subtask_stats","subtask_index":1},{"kind":"subtask_stats","subtask_index":0}]}` + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, s.Handler(), request{method: "GET", target: tt.target})
			if r.code != 200 || r.body != tt.body {
				t.Fatalf("%d %s, want 200 %s", r.code, r.body, tt.body)
			}
			if got := store.lastStats; got != tt.want {
				t.Errorf("query %+v, want %+v", got, tt.want)
			}
		})
	}
	// An empty answer is an empty list, not null.
	store.stats = nil
	if r := do(t, s.Handler(), request{method: "GET", target: "/v1/stats"}); r.code != 200 || r.body != `{"stats":[]}`+"\n" {
		t.Errorf("no rows: %d %s", r.code, r.body)
	}
}

func TestServedPlanVersions(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	stored := testPlan(jobID, "T", 4, now, "a", "b")
	pin := plans.Override{JobID: jobID, TaskName: "T", Action: plans.ActionPin, At: now}
	excl := plans.Override{JobID: jobID, TaskName: "T", Action: plans.ActionExclude, Key: "a", At: now}
	pinnedStored := stored
	pinnedStored.Pinned, pinnedStored.ExpiresAt, pinnedStored.Version = true, time.Time{}, 5
	tests := []struct {
		name    string
		stored  *plans.Plan
		ovs     []plans.Override
		version uint64
		keys    int
	}{
		{"no overrides", &stored, nil, 4, 2},
		{"pin not yet published", &stored, []plans.Override{pin}, 5, 2},
		{"pin published", &pinnedStored, []plans.Override{pin}, 5, 2},
		{"exclude not yet published", &stored, []plans.Override{excl}, 5, 1},
		{"override only", nil, []plans.Override{{JobID: jobID, TaskName: "T", Action: plans.ActionOverride, At: now, Plan: &stored}}, 4, 2},
		{"nothing", nil, nil, 0, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := servedPlan(tt.stored, tt.ovs)
			if tt.keys < 0 {
				if p != nil {
					t.Fatalf("got %+v, want nil", p)
				}
				return
			}
			if p == nil || p.Version != tt.version || len(p.HotKeys) != tt.keys {
				t.Fatalf("got %+v, want version %d with %d keys", p, tt.version, tt.keys)
			}
		})
	}
}

func TestLifecycle(t *testing.T) {
	t.Parallel()
	store := newFakeStore(testPlan(jobID, "T", 1, time.Now(), "k"))
	s, reg := newTestServer(t, Config{}, store)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	url := "http://" + s.Addr()
	// New listens already: a request waits in the backlog until Run serves.
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != `{"status":"ok"}`+"\n" {
		t.Errorf("healthz: %d %s", resp.StatusCode, b)
	}
	for path, want := range map[string]string{"/readyz": `"ready"`, "/metrics": "skewlens_serve_requests_total"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Errorf("%s: %d %.200s", path, resp.StatusCode, b)
		}
	}
	if n := testutil.CollectAndCount(reg, "skewlens_serve_requests_total"); n < 2 {
		t.Errorf("requests_total has %d series", n)
	}
	if err := s.Run(ctx); err == nil {
		t.Error("second Run: want an error")
	}
	s.Stop()
	s.Stop()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if _, err := http.Get(url + "/healthz"); err == nil {
		t.Error("still serving after Stop")
	}

	// Stop before Run: Run returns at once.
	s2, _ := newTestServer(t, Config{}, store)
	s2.Stop()
	if err := s2.Run(context.Background()); err != nil {
		t.Errorf("Run after Stop: %v", err)
	}
	s2.Stop()

	// A cancelled context stops Run too.
	s3, _ := newTestServer(t, Config{}, store)
	ctx3, cancel3 := context.WithCancel(context.Background())
	go func() { done <- s3.Run(ctx3) }()
	cancel3()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("Run did not return after its context ended")
	}
}

// isBadRequest reports whether err is a client error (400).
func isBadRequest(err error) bool {
	var br *badRequest
	return errors.As(err, &br)
}

// notReady is a store's NotReadyError.
type notReady struct{}

func (notReady) Error() string          { return "dial tcp 10.0.0.7:9000: connection refused" }
func (notReady) NotReadyReason() string { return "not connected to ClickHouse yet" }

// TestReadyz: GET /readyz is package ops's, with one check, store, whose
// failure shows the store's NotReadyError reason or that it does not
// answer, never the store's own message.
func TestReadyz(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		code int
		body string
	}{
		{"ready", nil, 200, `{"status":"ready","checks":{"store":"ok"}}` + "\n"},
		{"not ready", fmt.Errorf("connect: %w", notReady{}), 503, `{"status":"not ready","checks":{"store":"not connected to ClickHouse yet"}}` + "\n"},
		{"failing", errors.New("dial tcp 10.0.0.7:9000: connection refused"), 503, `{"status":"not ready","checks":{"store":"the store does not answer"}}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := newFakeStore()
			store.err = tt.err
			s, reg := newTestServer(t, Config{}, store)
			r := do(t, s.Handler(), request{method: "GET", target: "/readyz"})
			if r.code != tt.code || r.body != tt.body {
				t.Errorf("readyz: %d %q, want %d %q", r.code, r.body, tt.code, tt.body)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			want := 0.0
			if tt.err != nil {
				want = 1
			}
			if n := testutil.ToFloat64(s.m.storeErrors.WithLabelValues("ping")); n != want {
				t.Errorf("store_errors_total{op=ping} = %v, want %v", n, want)
			}
			if n := testutil.CollectAndCount(reg, "skewlens_serve_requests_total"); n != 1 {
				t.Errorf("requests_total has %d series, want the one of /readyz", n)
			}
		})
	}
}
