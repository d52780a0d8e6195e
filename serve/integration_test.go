package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew/incident"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/skewlens/skewlens/internal/retry"
	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/serve"
	"github.com/skewlens/skewlens/sinks/clickhouse"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/plans"
)

// TestMain stops the ClickHouse server chtest starts, after all tests.
func TestMain(m *testing.M) { chtest.Main(m) }

// newTestSink connects a migrated Sink to the chtest server, in a
// database of its own that is dropped when the test ends.
func newTestSink(t *testing.T, suffix string) (*clickhouse.Store, string) {
	t.Helper()
	addr := chtest.Start(t)
	db := fmt.Sprintf("skewlens_serve_%d_%s", os.Getpid(), suffix)
	sink, err := clickhouse.New(context.Background(), clickhouse.Config{Addr: addr, Database: db, FlushInterval: -1,
		Retry: retry.Policy{MaxRetries: retry.Setup().MaxRetries, MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}}, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sink.Close()
		conn, err := ch.Open(&ch.Options{Addr: []string{addr}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Errorf("drop test database: %v", err)
			return
		}
		defer conn.Close()
		if err := conn.Exec(context.Background(), "DROP DATABASE IF EXISTS `"+db+"`"); err != nil {
			t.Errorf("drop test database %s: %v", db, err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sink.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return sink, db
}

// chStore is the Store of the ClickHouse sink.
func chStore(s *clickhouse.Store) servestore.Store {
	return servestore.Store{Ready: s, Plans: s.Plans(), Overrides: s.Writer(), Audit: s.Audit(),
		Findings: s.Findings(), Stats: s.Stats(), Incidents: s.Incidents()}
}

// runServer runs a serve.Server on store on a real loopback listener and
// returns its base URL.
func runServer(t *testing.T, cfg serve.Config, store servestore.Store) (*serve.Server, string) {
	t.Helper()
	if cfg.StoreTimeout == 0 {
		// A loaded CI machine must not turn slow inserts into 504s.
		cfg.StoreTimeout = 30 * time.Second
	}
	s, _ := serve.NewTestServer(t, cfg, store)
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	t.Cleanup(func() {
		s.Stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return s, "http://" + s.Addr()
}

// response is one answer of a running server.
type response struct {
	code   int
	header http.Header
	body   string
}

// call makes one request to a running server.
func call(t *testing.T, method, u, token, body string, header map[string]string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %.100s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: string(b)}
}

func taskURL(base, job, task string) string {
	return base + "/v1/salting/" + url.PathEscape(job) + "/" + url.PathEscape(task)
}

// hostileKeys are keys that must round-trip byte for byte.
func hostileKeys() []string {
	return []string{
		`it's "quoted"`,
		`back\slash\\ and \' and \n literally`,
		"new\nline\r\ttab",
		"nul\x00byte",
		"emoji 🔥 and 中文",
		"?&=#%2F/",
		"'); DROP TABLE plans; --",
		"' OR 1=1 --",
		strings.Repeat("\\'\n", plans.MaxKeyBytes/3),
		strings.Repeat("k", plans.MaxKeyBytes),
	}
}

// TestHostileInput drives the API with hostile job and task names and
// keys against the real ClickHouse: what is allowed round-trips exactly,
// the rest gets 400, and nothing is injected.
func TestHostileInput(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sink, _ := newTestSink(t, "hostile")
	_, base := runServer(t, serve.Config{CacheTTL: -1}, chStore(sink))
	now := time.Now().UTC().Truncate(time.Millisecond)

	tasks := []string{
		`Source: clicks -> "Map" (it's)`,
		`back\slash`,
		"'; DROP TABLE plans; --",
		"a/b?c#d%e",
		"中文 🔥",
		strings.Repeat("é", serve.MaxIDBytes/2),
	}
	jobs := []string{serve.JobID, "job:1.a_b-c"}
	keys := hostileKeys()
	var changes []plans.Change
	type planTask struct{ job, task string }
	written := map[planTask]plans.Plan{}
	for _, job := range jobs {
		for _, task := range tasks {
			p := serve.TestPlan(job, task, 1, now, keys...)
			changes = append(changes, plans.Change{JobID: job, TaskName: task, Plan: &p})
			written[planTask{job, task}] = p
		}
	}
	if err := sink.Writer().WritePlans(ctx, changes); err != nil {
		t.Fatal(err)
	}
	for t0, p := range written {
		r := call(t, "GET", taskURL(base, t0.job, t0.task), "", "", nil)
		if r.code != 200 {
			t.Fatalf("GET %q/%q: %d %s", t0.job, t0.task, r.code, r.body)
		}
		var got plans.Plan
		if err := json.Unmarshal([]byte(r.body), &got); err != nil {
			t.Fatal(err)
		}
		if got.JobID != p.JobID || got.TaskName != p.TaskName || len(got.HotKeys) != len(p.HotKeys) {
			t.Fatalf("GET %q/%q: got %q/%q with %d keys", t0.job, t0.task, got.JobID, got.TaskName, len(got.HotKeys))
		}
		for i := range p.HotKeys {
			if got.HotKeys[i].Key != p.HotKeys[i].Key || got.HotKeys[i].Salted[1].Key != p.HotKeys[i].Salted[1].Key {
				t.Errorf("%q: key %d did not round-trip: %.40q", t0.task, i, got.HotKeys[i].Key)
			}
		}
	}

	// Exclude every hostile key of one task; each is stored verbatim.
	job, task := jobs[0], tasks[2]
	for _, k := range keys {
		body, _ := json.Marshal(map[string]string{"key": k, "reason": "reason with 'quotes'\n and \\"})
		if r := call(t, "POST", taskURL(base, job, task)+"/exclude", serve.AliceToken, string(body), nil); r.code != 201 {
			t.Fatalf("exclude %.40q: %d %s", k, r.code, r.body)
		}
	}
	ovs, err := sink.Plans().Overrides(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]bool{}
	for _, o := range ovs {
		if o.JobID == job && o.TaskName == task && o.Action == plans.ActionExclude {
			stored[o.Key] = true
		}
	}
	for _, k := range keys {
		if !stored[k] {
			t.Errorf("exclude %.40q: not stored verbatim", k)
		}
	}
	// Every key excluded: the task has no plan left.
	if r := call(t, "GET", taskURL(base, job, task), "", "", nil); r.code != 404 {
		t.Errorf("GET after excluding every key: %d %.200s", r.code, r.body)
	}
	// The audit log has the keys verbatim too.
	r := call(t, "GET", base+"/v1/audit?limit=1000&job_id="+job, serve.AliceToken, "", nil)
	var audit struct {
		Entries []servestore.AuditEntry `json:"entries"`
	}
	if r.code != 200 || json.Unmarshal([]byte(r.body), &audit) != nil {
		t.Fatalf("audit: %d %.200s", r.code, r.body)
	}
	audited := map[string]bool{}
	for _, e := range audit.Entries {
		audited[e.Key] = e.TaskName == task && e.By == "alice" && e.Method == "POST"
	}
	for _, k := range keys {
		if !audited[k] {
			t.Errorf("audit of %.40q missing or wrong", k)
		}
	}

	// Refused: nothing stored.
	bad := []struct {
		name, method, target, body string
		want                       int
	}{
		{"key over 64 KiB", "POST", taskURL(base, job, task) + "/exclude", `{"key":"` + strings.Repeat("k", plans.MaxKeyBytes+1) + `"}`, 400},
		{"invalid UTF-8 key", "POST", taskURL(base, job, task) + "/exclude", "{\"key\":\"a\xffb\"}", 400},
		{"invalid UTF-8 key in query", "DELETE", taskURL(base, job, task) + "/overrides/exclude?key=a%FFb", "", 400},
		{"control character in task", "POST", taskURL(base, job, "a\nb") + "/pin", "", 400},
		{"invalid UTF-8 task", "POST", base + "/v1/salting/" + job + "/a%FFb/pin", "", 400},
		{"quote in job id", "POST", taskURL(base, "x' OR '1'='1", task) + "/pin", "", 400},
		{"task over 256 bytes", "POST", taskURL(base, job, strings.Repeat("t", 257)) + "/pin", "", 400},
		{"body over 1 MiB", "POST", taskURL(base, job, task) + "/exclude", `{"key":"` + strings.Repeat("k", 1<<20) + `"}`, 413},
		{"SQL in kind", "GET", base + "/v1/findings?kind=" + url.QueryEscape("hot_key' OR 1=1 --"), "", 400},
	}
	for _, b := range bad {
		if r := call(t, b.method, b.target, serve.AliceToken, b.body, nil); r.code != b.want {
			t.Errorf("%s: %d %.200s, want %d", b.name, r.code, r.body, b.want)
		}
	}
	after, err := sink.Plans().Overrides(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(ovs) {
		t.Errorf("refused requests changed the overrides: %d, were %d", len(after), len(ovs))
	}
	if entries, err := sink.Audit().Audit(ctx, "", 10000); err != nil || len(entries) != len(keys) {
		t.Errorf("audit after refused requests: %d entries (%v), want %d", len(entries), err, len(keys))
	}

	// Delete them again by query parameter, 64 KiB keys included.
	for _, k := range keys {
		u := taskURL(base, job, task) + "/overrides/exclude?key=" + url.QueryEscape(k)
		if r := call(t, "DELETE", u, serve.BobToken, "", nil); r.code != 204 {
			t.Errorf("delete %.40q: %d %.200s", k, r.code, r.body)
		}
	}
	if ovs, err := sink.Plans().Overrides(ctx); err != nil || len(ovs) != 0 {
		t.Errorf("after deleting: %d overrides, %v", len(ovs), err)
	}
	if r := call(t, "GET", taskURL(base, job, task), "", "", nil); r.code != 200 {
		t.Errorf("GET after deleting the excludes: %d", r.code)
	}
	// The tables are all still there.
	if ps, err := sink.Plans().CurrentPlans(ctx, now); err != nil || len(ps) != len(written) {
		t.Errorf("plans after the injection attempts: %d, %v", len(ps), err)
	}
}

// TestUnauthenticatedWritesChangeNothing checks against the real store
// that writes without a valid token get 401 and leave no trace.
func TestUnauthenticatedWritesChangeNothing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sink, _ := newTestSink(t, "unauth")
	_, base := runServer(t, serve.Config{CacheTTL: -1}, chStore(sink))
	now := time.Now().UTC()
	p := serve.TestPlan(serve.JobID, "T", 1, now, "a", "b")
	if err := sink.Writer().WritePlans(ctx, []plans.Change{{JobID: serve.JobID, TaskName: "T", Plan: &p}}); err != nil {
		t.Fatal(err)
	}
	// One real override, to see that it stays.
	if r := call(t, "POST", taskURL(base, serve.JobID, "T")+"/exclude", serve.AliceToken, `{"key":"a"}`, nil); r.code != 201 {
		t.Fatalf("exclude: %d %s", r.code, r.body)
	}
	before, err := sink.Plans().Overrides(ctx)
	if err != nil {
		t.Fatal(err)
	}
	plan := call(t, "GET", taskURL(base, serve.JobID, "T"), "", "", nil)
	for _, tok := range []string{"", "not-a-valid-token-at-all", serve.AliceToken[:len(serve.AliceToken)-1]} {
		for _, w := range []struct{ method, path, body string }{
			{"POST", "/pin", ""},
			{"POST", "/exclude", `{"key":"b"}`},
			{"POST", "/override", `{"plan":{}}`},
			{"DELETE", "/overrides/exclude?key=a", ""},
		} {
			r := call(t, w.method, taskURL(base, serve.JobID, "T")+w.path, tok, w.body, nil)
			if r.code != 401 || r.header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s with token %q: %d, want 401 with WWW-Authenticate", w.method, w.path, tok, r.code)
			}
		}
		if r := call(t, "GET", base+"/v1/audit", tok, "", nil); r.code != 401 {
			t.Errorf("audit with token %q: %d, want 401", tok, r.code)
		}
	}
	after, err := sink.Plans().Overrides(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("overrides changed:\n%+v\n%+v", before, after)
	}
	entries, err := sink.Audit().Audit(ctx, "", 100)
	if err != nil || len(entries) != 1 {
		t.Errorf("audit: %d entries (%v), want only the authenticated one", len(entries), err)
	}
	if r := call(t, "GET", taskURL(base, serve.JobID, "T"), "", "", nil); r.body != plan.body {
		t.Errorf("plan changed:\n%s\n%s", plan.body, r.body)
	}

	// A read-only server (no tokens) refuses writes with 403, also
	// changing nothing.
	_, roBase := runServer(t, serve.Config{Tokens: map[string]string{}}, chStore(sink))
	if r := call(t, "POST", taskURL(roBase, serve.JobID, "T")+"/pin", serve.AliceToken, "", nil); r.code != 403 {
		t.Errorf("read-only pin: %d, want 403", r.code)
	}
	if entries, err := sink.Audit().Audit(ctx, "", 100); err != nil || len(entries) != 1 {
		t.Errorf("audit after the read-only server: %d entries (%v)", len(entries), err)
	}
}

// TestETagPollingAndFindings polls the real store with ETags, and reads
// findings back.
func TestETagPollingAndFindings(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sink, _ := newTestSink(t, "etag")
	_, base := runServer(t, serve.Config{CacheTTL: -1}, chStore(sink))
	now := time.Now().UTC().Truncate(time.Millisecond)
	p1 := serve.TestPlan(serve.JobID, "T", 1, now, "a")
	if err := sink.Writer().WritePlans(ctx, []plans.Change{{JobID: serve.JobID, TaskName: "T", Plan: &p1}}); err != nil {
		t.Fatal(err)
	}
	first := call(t, "GET", base+"/v1/salting", "", "", nil)
	etag := first.header.Get("ETag")
	if first.code != 200 || etag == "" {
		t.Fatalf("first poll: %d %q", first.code, etag)
	}
	for i := 0; i < 3; i++ {
		r := call(t, "GET", base+"/v1/salting", "", "", map[string]string{"If-None-Match": etag})
		if r.code != 304 || r.body != "" {
			t.Fatalf("poll %d: %d %q, want 304", i, r.code, r.body)
		}
	}
	// A new version changes the tag.
	p2 := serve.TestPlan(serve.JobID, "T", 2, now.Add(time.Second), "a", "b")
	if err := sink.Writer().WritePlans(ctx, []plans.Change{{JobID: serve.JobID, TaskName: "T", Plan: &p2}}); err != nil {
		t.Fatal(err)
	}
	r := call(t, "GET", base+"/v1/salting", "", "", map[string]string{"If-None-Match": etag})
	if r.code != 200 || r.header.Get("ETag") == etag || !strings.Contains(r.body, `"version":2`) {
		t.Errorf("after a new version: %d %q %.200s", r.code, r.header.Get("ETag"), r.body)
	}
	one := call(t, "GET", taskURL(base, serve.JobID, "T"), "", "", nil)
	if one.code != 200 || call(t, "GET", taskURL(base, serve.JobID, "T"), "", "", map[string]string{"If-None-Match": one.header.Get("ETag")}).code != 304 {
		t.Errorf("per-task ETag polling failed: %d", one.code)
	}

	// Findings: hot keys with hostile keys, written twice; every other
	// one with the share's margin, the rule and its subtask's share, as
	// the engine writes them now, the others as before it did.
	var fs []skew.Finding
	start := now.Add(-time.Minute).UnixMilli()
	for i, k := range hostileKeys() {
		st := i
		hk := &skew.HotKey{Key: k, Share: 0.5, EstimatedRecords: 10}
		if i%2 == 0 {
			hk.ShareMargin, hk.Rule, hk.ShareLowerBound, hk.Threshold = 0.031, "subtask", 0.41, 0.3
			hk.EvidenceWindows, hk.EvidenceRecords = 2, 1200
			hk.SubtaskShare, hk.SubtaskShareMargin, hk.SubtaskExcess, hk.ExcessExplained = 0.46, 0.081, 0.6, 0.77
		}
		fs = append(fs, skew.Finding{Kind: skew.KindHotKey, JobID: serve.JobID, TaskName: "T", SubtaskIndex: &st,
			WindowStart: start + int64(i)*1000, WindowEnd: start + int64(i)*1000 + 1000, HotKey: hk})
	}
	for v := uint64(1); v <= 2; v++ {
		if err := sink.Writer().Write(ctx, v, fs); err != nil {
			t.Fatal(err)
		}
	}
	r = call(t, "GET", base+"/v1/findings?job_id="+serve.JobID+"&kind=hot_key&since="+url.QueryEscape(now.Add(-time.Hour).Format(time.RFC3339)), "", "", nil)
	var got struct {
		Findings []skew.Finding `json:"findings"`
	}
	if r.code != 200 || json.Unmarshal([]byte(r.body), &got) != nil {
		t.Fatalf("findings: %d %.200s", r.code, r.body)
	}
	if len(got.Findings) != len(fs) {
		t.Fatalf("%d findings, want %d", len(got.Findings), len(fs))
	}
	for i, f := range got.Findings {
		want := fs[len(fs)-1-i] // newest first
		if f.Key != want.Key || f.WindowStart != want.WindowStart {
			t.Errorf("finding %d: key %.40q at %d, want %.40q at %d", i, f.Key, f.WindowStart, want.Key, want.WindowStart)
		}
		// The margins and the subtask's share come back as written (the
		// key itself is checked above: invalid UTF-8 becomes U+FFFD).
		g, w := *f.HotKey, *want.HotKey
		g.Key, w.Key = "", ""
		if !reflect.DeepEqual(g, w) {
			t.Errorf("finding %d: hot key fields %+v, want %+v", i, g, w)
		}
	}
	if n := strings.Count(r.body, `"share_margin":0.031,"rule":"subtask"`); n != (len(fs)+1)/2 {
		t.Errorf("%d findings carry share_margin and rule, want %d", n, (len(fs)+1)/2)
	}
	if n := strings.Count(r.body, `"subtask_share":0.46,"subtask_share_margin":0.081,"subtask_excess":0.6,"excess_explained":0.77`); n != (len(fs)+1)/2 {
		t.Errorf("%d findings carry the subtask's share, want %d", n, (len(fs)+1)/2)
	}
	if r := call(t, "GET", base+"/v1/findings?limit=2&since="+fmt.Sprint(start), "", "", nil); r.code != 200 || bytes.Count([]byte(r.body), []byte(`"kind":"hot_key"`)) != 2 {
		t.Errorf("findings limit 2: %d %.200s", r.code, r.body)
	}
	if r := call(t, "GET", base+"/readyz", "", "", nil); r.code != 200 {
		t.Errorf("readyz: %d %s", r.code, r.body)
	}
}

// TestIncidentsFromClickHouse stores the incidents of a hostile hot key
// and of a closed data_skew condition, twice (a replay), and reads them
// back through GET /v1/incidents with each filter.
func TestIncidentsFromClickHouse(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sink, _ := newTestSink(t, "incidents")
	_, base := runServer(t, serve.Config{}, chStore(sink))
	tr, err := incident.New(incident.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	key := hostileKeys()[1]
	start := time.Now().Add(-10 * time.Minute).Truncate(10 * time.Second).UnixMilli()
	sub := 1
	var changes []incident.Incident
	for w := int64(0); w < 8; w++ {
		ws := start + w*10_000
		fs := []skew.Finding{{Kind: skew.KindHotKey, JobID: serve.JobID, TaskName: "T", SubtaskIndex: &sub,
			WindowStart: ws, WindowEnd: ws + 10_000, HotKey: &skew.HotKey{Key: key, Share: 0.5}}}
		if w < 2 {
			fs = append(fs, skew.Finding{Kind: skew.KindSaturation, JobID: serve.JobID, TaskName: "T", SubtaskIndex: &sub,
				WindowStart: ws, WindowEnd: ws + 10_000, Saturation: &skew.Saturation{Cause: skew.CauseDataSkew, Evidence: &skew.Evidence{BusyMsPerSecond: 990}}})
		}
		for _, c := range append(tr.Observe(fs), tr.Advance(ws+10_000)...) {
			changes = append(changes, c.Incident)
		}
	}
	for i := 0; i < 2; i++ {
		if err := sink.Writer().WriteIncidents(ctx, changes); err != nil {
			t.Fatal(err)
		}
	}
	list := func(query string) []incident.Incident {
		t.Helper()
		r := call(t, "GET", base+"/v1/incidents?"+query, "", "", nil)
		var got struct {
			Incidents []incident.Incident `json:"incidents"`
		}
		if r.code != 200 || json.Unmarshal([]byte(r.body), &got) != nil {
			t.Fatalf("%s: %d %.200s", query, r.code, r.body)
		}
		return got.Incidents
	}
	open := list("job_id=" + serve.JobID + "&state=open")
	if len(open) != 1 || open[0].Key != key || open[0].Windows != 8 || open[0].Cause != "hot_key" {
		t.Errorf("open incidents = %+v, want the hot key's, 8 windows", open)
	}
	closed := list("state=closed&since=" + fmt.Sprint(start))
	if len(closed) != 1 || closed[0].Cause != skew.CauseDataSkew || closed[0].Windows != 2 || closed[0].End != start+20_000 || closed[0].Busy.Peak != 990 {
		t.Errorf("closed incidents = %+v, want data_skew over 2 windows", closed)
	}
	if all := list(""); len(all) != 2 {
		t.Errorf("%d incidents, want 2", len(all))
	}
	if none := list("since=" + fmt.Sprint(start+10*60_000)); len(none) != 0 {
		t.Errorf("incidents since after their end: %+v", none)
	}
}

// TestStatsApartFromFindings writes statistics and findings through the
// ClickHouse store, twice (the second time with other numbers at a higher
// version), and reads them over HTTP: GET /v1/stats answers each
// statistics row once, as last written, in the findings contract, newest
// window first and by subtask; GET /v1/findings answers the findings
// alone.
func TestStatsApartFromFindings(t *testing.T) {
	t.Parallel()
	sink, _ := newTestSink(t, "stats")
	_, base := runServer(t, serve.Config{}, chStore(sink))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	const task = "Window(Tumbling) → Sink: es/1"
	start := time.Now().Add(-time.Minute).Truncate(10 * time.Second).UnixMilli()
	write := func(version uint64, busy float64) []skew.Finding {
		var stats, fs []skew.Finding
		for w := int64(0); w < 2; w++ {
			for sub := 0; sub < 3; sub++ {
				st := sub
				stats = append(stats, skew.Finding{Kind: skew.KindSubtaskStats, JobID: serve.JobID, JobName: "billing",
					TaskName: task, SubtaskIndex: &st, WindowStart: start + w*10000, WindowEnd: start + (w+1)*10000,
					Stats: &skew.SubtaskStats{Host: fmt.Sprintf("tm-%d", sub), BusyMsPerSecond: busy + float64(sub),
						InputShare: 1.0 / 3, Saturated: sub == 2, BusySource: "counter", SkewScore: 7}})
			}
		}
		// The same task in another job: not selected by job_id.
		other := 0
		stats = append(stats, skew.Finding{Kind: skew.KindSubtaskStats, JobID: "other-job", TaskName: task,
			SubtaskIndex: &other, WindowStart: start, WindowEnd: start + 10000, Stats: &skew.SubtaskStats{}})
		sub := 2
		fs = append(fs, skew.Finding{Kind: skew.KindHotKey, JobID: serve.JobID, TaskName: task, SubtaskIndex: &sub,
			WindowStart: start + 10000, WindowEnd: start + 20000, HotKey: &skew.HotKey{Key: "k", Share: 0.6, EstimatedRecords: 9}})
		if err := sink.Writer().Write(ctx, version, append(fs, stats...)); err != nil {
			t.Fatal(err)
		}
		return stats
	}
	write(1, 100)
	stats := write(2, 900)

	// Newest window first, then by subtask; the other job's row left out.
	var want []string
	for _, w := range []int{1, 0} {
		for sub := 0; sub < 3; sub++ {
			b, err := json.Marshal(stats[w*3+sub])
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, string(b))
		}
	}
	target := base + "/v1/stats?job_id=" + serve.JobID + "&task_name=" + url.QueryEscape(task) + "&since=" + fmt.Sprint(start)
	r := call(t, "GET", target, "", "", nil)
	var got struct {
		Stats []json.RawMessage `json:"stats"`
	}
	if r.code != 200 || json.Unmarshal([]byte(r.body), &got) != nil {
		t.Fatalf("stats: %d %.300s", r.code, r.body)
	}
	if len(got.Stats) != len(want) {
		t.Fatalf("%d stats rows, want %d: %.500s", len(got.Stats), len(want), r.body)
	}
	for i := range want {
		if string(got.Stats[i]) != want[i] {
			t.Errorf("row %d:\n got %s\nwant %s", i, got.Stats[i], want[i])
		}
	}
	if r2 := call(t, "GET", target, "", "", map[string]string{"If-None-Match": r.header.Get("ETag")}); r2.code != 304 {
		t.Errorf("stats with the current ETag: %d, want 304", r2.code)
	}
	if r := call(t, "GET", base+"/v1/stats?limit=2&task_name="+url.QueryEscape(task), "", "", nil); r.code != 200 ||
		strings.Count(r.body, `"kind":"subtask_stats"`) != 2 {
		t.Errorf("stats limit 2: %d %.300s", r.code, r.body)
	}
	if r := call(t, "GET", base+"/v1/stats?task_name="+url.QueryEscape(task)+"&since="+fmt.Sprint(start), "", "", nil); r.code != 200 ||
		!strings.Contains(r.body, `"job_id":"other-job"`) || strings.Count(r.body, `"kind":"subtask_stats"`) != 7 {
		t.Errorf("stats of the task in every job: %d %.300s", r.code, r.body)
	}

	// Findings: the hot key alone.
	r = call(t, "GET", base+"/v1/findings?since="+fmt.Sprint(start), "", "", nil)
	var fs struct {
		Findings []skew.Finding `json:"findings"`
	}
	if r.code != 200 || json.Unmarshal([]byte(r.body), &fs) != nil {
		t.Fatalf("findings: %d %.300s", r.code, r.body)
	}
	if len(fs.Findings) != 1 || fs.Findings[0].Kind != skew.KindHotKey || fs.Findings[0].Stats != nil {
		t.Errorf("findings: %.500s, want the one hot key", r.body)
	}
	if r := call(t, "GET", base+"/v1/findings?kind=subtask_stats", "", "", nil); r.code != 400 || !strings.Contains(r.body, "/v1/stats") {
		t.Errorf("findings of kind subtask_stats: %d %s, want 400 pointing to /v1/stats", r.code, r.body)
	}
}
