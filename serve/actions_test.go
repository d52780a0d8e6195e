package serve

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/incident"
	"github.com/skewlens/skewlens/skew/plans"
	"github.com/skewlens/skewlens/skew/rescale"
)

// Vertex ids of the actions tests' tasks.
const (
	vidAgg    = "cbc357ccb763df2852fee8c4fc7d55f2"
	vidWindow = "0a448493b4782967b150582570326227"
	vidSink   = "2e588ce1c86a9d46e2e85186773ce4fd"
)

// actionsStore is a job with an open incident of every cause that has an
// action, as the engine, the incident tracker and the plan lifecycle
// leave it in the store.
func actionsStore(t *testing.T) *pageStore {
	t.Helper()
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	const win = int64(10_000)
	st := &pageStore{fakeStore: newFakeStore()}
	plan := testPlan(jobID, "Window agg", 3, time.UnixMilli(start+2*win), "u42")
	plan.ExpiresAt = time.Now().Add(time.Hour).UTC()
	other := testPlan(jobID, "Keyed", 1, time.UnixMilli(start+2*win), "k")
	other.ExpiresAt = time.Now().Add(time.Hour).UTC()
	st.fakeStore.plans = []plans.Plan{plan, other}
	c, err := rescale.New(jobID, rescale.Vertex{ID: vidAgg, Parallelism: 8})
	if err != nil {
		t.Fatal(err)
	}
	forms, err := c.Forms()
	if err != nil {
		t.Fatal(err)
	}
	sat := func(task string, sub int, cause string, ws int64, ev skew.Evidence, s *skew.Saturation) skew.Finding {
		f := skew.Finding{Kind: skew.KindSaturation, JobID: jobID, JobName: "billing", TaskName: task, WindowStart: ws, WindowEnd: ws + win,
			Summary: cause + " of " + task}
		if sub >= 0 {
			f.SubtaskIndex = ptr(sub)
		}
		if s == nil {
			s = &skew.Saturation{}
		}
		s.Cause, s.Evidence = cause, &ev
		f.Saturation = s
		return f
	}
	inspect := &skew.Inspect{Subtask: "GET /jobs/" + jobID + "/vertices/" + vidSink + "/subtasks/2", ThreadDump: "GET /taskmanagers/tm-1/thread-dump",
		FlameGraph: "GET /jobs/" + jobID + "/vertices/" + vidSink + "/flamegraph?type=full&subtaskindex=2", Jstack: "on host 10.0.0.2: jstack <pid>"}
	// Newest first, as the store answers: an older window of the
	// under_provisioned task (recommending less) comes after its latest.
	st.findings = []skew.Finding{
		sat("agg", -1, skew.CauseUnderProvisioned, start+3*win, skew.Evidence{VertexID: vidAgg, Parallelism: 4, MaxParallelism: 128,
			RecommendedParallelism: 8, ChainableWith: []string{"Sink: es"}, Rescale: forms}, nil),
		sat("Window agg", 3, skew.CauseDataSkew, start+3*win, skew.Evidence{VertexID: vidWindow}, nil),
		sat("Sink: es", 2, skew.CauseSlowSubtask, start+3*win, skew.Evidence{VertexID: vidSink, Inspect: inspect},
			&skew.Saturation{Host: "10.0.0.2", TaskAttemptID: "14fc6da2", TaskManagerID: "tm-1"}),
		sat("Keyed", 1, skew.CauseRotatingHotKey, start+3*win, skew.Evidence{}, nil), // no task_id in its metrics
		sat("Rotating", 0, skew.CauseRotatingHotKey, start+3*win, skew.Evidence{VertexID: vidSink}, nil),
		sat("agg", -1, skew.CauseUnderProvisioned, start+2*win, skew.Evidence{VertexID: vidAgg, RecommendedParallelism: 6}, nil),
	}
	open := func(id, task string, sub int, cause string) incident.Incident {
		return incident.Incident{ID: id, JobID: jobID, JobName: "billing", TaskName: task, Subtask: sub, Cause: cause,
			State: incident.StateOpen, Start: start + win, LastSeen: start + 4*win, Windows: 3, Summary: "incident " + id}
	}
	closed := open("closed", "Window agg", 1, skew.CauseDataSkew)
	closed.State, closed.End = incident.StateClosed, start+2*win
	otherJob := open("other", "Window agg", 3, skew.CauseDataSkew)
	otherJob.JobID = "another-job"
	st.incidents = []incident.Incident{
		open("up", "agg", -1, skew.CauseUnderProvisioned),
		open("ds", "Window agg", 3, skew.CauseDataSkew),
		open("slow", "Sink: es", 2, skew.CauseSlowSubtask),
		open("rot-noid", "Keyed", 1, skew.CauseRotatingHotKey),
		open("rot-noplan", "Rotating", -1, skew.CauseRotatingHotKey), // task-wide, as the tracker folds a rotating hot key
		open("hk", "Window agg", 3, incident.CauseHotKey),
		open("ckpt", "Sink: es", 2, skew.CauseCheckpointRisk),
		closed, otherJob,
	}
	return st
}

func TestActionsEndpoint(t *testing.T) {
	st := actionsStore(t)
	store := storeOf(st.fakeStore)
	store.Findings, store.Incidents = st, st
	s, _ := newStoreServer(t, Config{}, store)
	h := s.Handler()
	r := do(t, h, request{method: "GET", target: "/v1/actions/" + jobID})
	if r.code != 200 {
		t.Fatalf("%d %s", r.code, r.body)
	}
	var got actionList
	dec := json.NewDecoder(strings.NewReader(r.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.JobID != jobID || got.JobName != "billing" {
		t.Errorf("job %q %q", got.JobID, got.JobName)
	}
	var kinds []string
	for _, a := range got.Actions {
		kinds = append(kinds, a.Kind+" "+a.TaskName+" "+a.IncidentID)
	}
	// By task, subtask and kind; the job's exclusion last. Not listed:
	// the closed incident, the other job's, hot_key and checkpoint_risk.
	want := []string{"salting_plan Keyed rot-noid", "salting_plan Rotating rot-noplan", "inspect Sink: es slow",
		"salting_plan Window agg ds", "rescale agg up", "autoscaler_exclude  "}
	if !slices.Equal(kinds, want) {
		t.Fatalf("actions %q, want %q", kinds, want)
	}
	byID := map[string]action{}
	for _, a := range got.Actions {
		byID[a.IncidentID] = a
	}

	up := byID["up"].Rescale
	if up == nil || up.Forms == nil || up.VertexID != vidAgg || up.RecommendedParallelism != 8 || !up.DividesMaxParallelism ||
		!slices.Equal(up.ChainableWith, []string{"Sink: es"}) || up.Forms.FlinkRun != "-Dpipeline.jobvertex-parallelism-overrides="+vidAgg+":8" ||
		up.Forms.ResourceRequirementsPath != "/jobs/"+jobID+"/resource-requirements" || byID["up"].Reason != "under_provisioned of agg" {
		t.Errorf("rescale action %+v (the latest finding's, not the older one)", up)
	}
	if ds := byID["ds"].SaltingPlan; ds == nil || !ds.InForce || ds.Version != 3 || ds.URL != "/v1/salting/"+jobID+"/Window%20agg" ||
		!slices.Equal(ds.HotKeys, []string{"u42"}) || ds.Parallelism != 4 {
		t.Errorf("salting plan action %+v", ds)
	}
	// The task-wide incident takes its task's latest finding, on
	// whichever subtask the hot spot was.
	if a := byID["rot-noplan"]; a.SaltingPlan == nil || a.SaltingPlan.InForce || a.Subtask != -1 ||
		a.Reason != "rotating_hot_key of Rotating No salting plan is served for the task yet." {
		t.Errorf("rotating without a plan: %+v %+v", a, a.SaltingPlan)
	}
	if in := byID["slow"].Inspect; in == nil || in.TaskManagerID != "tm-1" || in.Host != "10.0.0.2" || in.TaskAttemptID != "14fc6da2" ||
		in.Requests == nil || in.Requests.ThreadDump != "GET /taskmanagers/tm-1/thread-dump" {
		t.Errorf("inspect action %+v", in)
	}
	x := got.Actions[len(got.Actions)-1]
	ax := x.Autoscaler
	if ax == nil || x.Subtask != -1 || ax.Key != "job.autoscaler.vertex.exclude.ids" || ax.Value != vidWindow ||
		ax.FlinkDeploymentPatch != "spec:\n  flinkConfiguration:\n    job.autoscaler.vertex.exclude.ids: \""+vidWindow+"\"\n" ||
		len(ax.Vertices) != 1 || ax.Vertices[0] != (excludedVertex{VertexID: vidWindow, TaskName: "Window agg", Cause: skew.CauseDataSkew, IncidentID: "ds", PlanVersion: 3}) ||
		len(ax.Unidentified) != 1 || ax.Unidentified[0].TaskName != "Keyed" || !strings.Contains(x.Reason, "no task_id") {
		t.Errorf("autoscaler exclusion %+v %+v", x, ax)
	}

	// The answer has a strong ETag, and a 304 for it.
	if r2 := do(t, h, request{method: "GET", target: "/v1/actions/" + jobID, header: map[string]string{"If-None-Match": r.header.Get("ETag")}}); r2.code != 304 {
		t.Errorf("with its ETag: %d", r2.code)
	}
}

// TestActionsFollowWhatIsLive: a vertex leaves the exclusion when its
// plan is retired or its incident closes; nothing is kept.
func TestActionsFollowWhatIsLive(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(st *pageStore)
		value string
	}{
		{"as stored", func(*pageStore) {}, vidWindow},
		{"the plan retired", func(st *pageStore) {
			st.fakeStore.plans = slices.DeleteFunc(st.fakeStore.plans, func(p plans.Plan) bool { return p.TaskName == "Window agg" })
		}, ""},
		{"the incident closed", func(st *pageStore) {
			for i := range st.incidents {
				if st.incidents[i].ID == "ds" {
					st.incidents[i].State = incident.StateClosed
				}
			}
		}, ""},
		{"a rotating hot key, task-wide, with a plan", func(st *pageStore) {
			p := testPlan(jobID, "Rotating", 2, time.Now(), "u42|1")
			p.ExpiresAt = time.Now().Add(time.Hour).UTC()
			st.fakeStore.plans = append(st.fakeStore.plans, p)
		}, vidWindow + ";" + vidSink},
		{"a second skewed vertex with a plan", func(st *pageStore) {
			st.findings[3].Evidence.VertexID = vidSink // Keyed's metrics carry task_id now
		}, vidWindow + ";" + vidSink},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := actionsStore(t)
			tt.edit(st)
			store := storeOf(st.fakeStore)
			store.Findings, store.Incidents = st, st
			s, _ := newStoreServer(t, Config{}, store)
			r := do(t, s.Handler(), request{method: "GET", target: "/v1/actions/" + jobID})
			var got actionList
			if err := json.Unmarshal([]byte(r.body), &got); r.code != 200 || err != nil {
				t.Fatalf("%d %s %v", r.code, r.body, err)
			}
			value := ""
			for _, a := range got.Actions {
				if a.Autoscaler != nil {
					value = a.Autoscaler.Value
				}
			}
			if value != tt.value {
				t.Errorf("exclusion %q, want %q", value, tt.value)
			}
		})
	}
}

func TestActionsRequests(t *testing.T) {
	st := actionsStore(t)
	withIncidents := storeOf(st.fakeStore)
	withIncidents.Findings, withIncidents.Incidents = st, st
	s, _ := newStoreServer(t, Config{}, withIncidents)
	none, _ := newStoreServer(t, Config{}, storeOf(newFakeStore()))
	tests := []struct {
		name   string
		srv    *Server
		target string
		code   int
		body   string
	}{
		{"a job without open incidents", s, "/v1/actions/quiet-job", 200, `{"job_id":"quiet-job","actions":[]}` + "\n"},
		{"a bad job id", s, "/v1/actions/bad%20id", 400, ""},
		{"an unknown parameter", s, "/v1/actions/" + jobID + "?limit=1", 400, ""},
		{"no incidents kept", none, "/v1/actions/" + jobID, 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := do(t, tt.srv.Handler(), request{method: "GET", target: tt.target})
			if r.code != tt.code || (tt.body != "" && r.body != tt.body) {
				t.Errorf("%d %s, want %d %s", r.code, r.body, tt.code, tt.body)
			}
		})
	}
}

// TestExclusionOfUnidentifiedTasksOnly: tasks without a vertex id are
// named, the value and patch stay empty, and vertices is a list.
func TestExclusionOfUnidentifiedTasksOnly(t *testing.T) {
	a := exclusionAction(autoscalerExclusion{Unidentified: []unidentifiedTask{{TaskName: "Keyed", IncidentID: "i1"}}})
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if x := a.Autoscaler; x.Value != "" || x.FlinkDeploymentPatch != "" || !strings.Contains(string(b), `"vertices":[]`) ||
		!strings.Contains(a.Reason, `The saturation of "Keyed" is a hot key`) || !strings.Contains(a.Reason, "no task_id") {
		t.Errorf("exclusion %s", b)
	}
}
