package serve

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/skewlens/skewlens/sinks/servestore"
)

// fakeIncidents is an in-memory IncidentReader.
type fakeIncidents struct {
	list []json.RawMessage
	last servestore.IncidentsQuery
}

func (f *fakeIncidents) Incidents(_ context.Context, q servestore.IncidentsQuery) ([]json.RawMessage, error) {
	f.last = q
	return f.list[:min(len(f.list), q.Limit)], nil
}

func TestIncidentsEndpoint(t *testing.T) {
	t.Parallel()
	store := newFakeStore()
	inc := &fakeIncidents{list: []json.RawMessage{json.RawMessage(`{"id":"a"}`), json.RawMessage(`{"id":"b"}`)}}
	st := storeOf(store)
	st.Incidents = inc
	s, _ := newStoreServer(t, Config{}, st)
	h := s.Handler()
	before := time.Now()
	r := do(t, h, request{method: "GET", target: "/v1/incidents"})
	if r.code != 200 || r.body != `{"incidents":[{"id":"a"},{"id":"b"}]}`+"\n" {
		t.Fatalf("%d %s", r.code, r.body)
	}
	if q := inc.last; q.Limit != DefaultLimit || q.JobID != "" || q.State != "" || q.Since.Before(before.Add(-DefaultFindingsWindow-time.Second)) || q.Since.After(time.Now().Add(-DefaultFindingsWindow)) {
		t.Errorf("default query %+v", q)
	}
	r = do(t, h, request{method: "GET", target: "/v1/incidents?job_id=" + jobID + "&state=open&since=1772366400000&limit=1"})
	if r.code != 200 || r.body != `{"incidents":[{"id":"a"}]}`+"\n" {
		t.Fatalf("%d %s", r.code, r.body)
	}
	want := servestore.IncidentsQuery{JobID: jobID, State: "open", Since: time.UnixMilli(1772366400000).UTC(), Limit: 1}
	if inc.last != want {
		t.Errorf("query %+v, want %+v", inc.last, want)
	}
	for _, bad := range []string{"state=pending", "since=yesterday", "job_id=%27%3B", "limit=0", "jobid=x"} {
		if r := do(t, h, request{method: "GET", target: "/v1/incidents?" + bad}); r.code != 400 {
			t.Errorf("%s: %d %s, want 400", bad, r.code, r.body)
		}
	}
	// Without an incident reader the endpoint is not there.
	s2, _ := newTestServer(t, Config{}, store)
	if r := do(t, s2.Handler(), request{method: "GET", target: "/v1/incidents"}); r.code != 404 {
		t.Errorf("without incidents: %d %s, want 404", r.code, r.body)
	}
}
