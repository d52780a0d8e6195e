package serve

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/plans"
	"github.com/skewlens/skewlens/skew/rescale"
)

// Action kinds of GET /v1/actions/{job_id}.
const (
	// ActionRescale: an under_provisioned task's recommended parallelism,
	// in the forms Flink users apply it (the finding's evidence.rescale).
	ActionRescale = "rescale"
	// ActionSaltingPlan: the salting plan served for a data_skew or
	// rotating_hot_key task, or that none is in force yet.
	ActionSaltingPlan = "salting_plan"
	// ActionAutoscalerExclude: the Flink autoscaler setting that keeps it
	// off the vertices whose salting plan is in force.
	ActionAutoscalerExclude = "autoscaler_exclude"
	// ActionInspect: where a slow subtask runs and how to look inside it
	// (the finding's evidence.inspect).
	ActionInspect = "inspect"
)

// actionList is the answer of GET /v1/actions/{job_id}.
type actionList struct {
	JobID   string   `json:"job_id"`
	JobName string   `json:"job_name,omitempty"`
	Actions []action `json:"actions"`
}

// action is one change ready to apply for an open incident, or for the
// job (autoscaler_exclude). Exactly one of the kind's bodies is set.
type action struct {
	Kind string `json:"kind"`
	// Cause, TaskName, Subtask (-1 task-wide, and for the job's
	// autoscaler_exclude) and IncidentID name what the action is for.
	Cause      string `json:"cause,omitempty"`
	TaskName   string `json:"task_name,omitempty"`
	Subtask    int    `json:"subtask"`
	IncidentID string `json:"incident_id,omitempty"`
	// Reason says why, in a sentence.
	Reason      string               `json:"reason"`
	Rescale     *rescaleAction       `json:"rescale,omitempty"`
	SaltingPlan *planRef             `json:"salting_plan,omitempty"`
	Autoscaler  *autoscalerExclusion `json:"autoscaler,omitempty"`
	Inspect     *inspectAction       `json:"inspect,omitempty"`
}

// rescaleAction is an under_provisioned task's change.
type rescaleAction struct {
	VertexID               string `json:"vertex_id,omitempty"`
	Parallelism            int    `json:"parallelism"`
	RecommendedParallelism int    `json:"recommended_parallelism"`
	MaxParallelism         int    `json:"max_parallelism"`
	// DividesMaxParallelism says whether every subtask owns as many key
	// groups at the recommended parallelism (the engine prefers a divisor
	// of the max parallelism, up to half of it).
	DividesMaxParallelism bool `json:"divides_max_parallelism"`
	// ChainableWith lists the tasks that run at the recommended
	// parallelism already: over a forward edge Flink can chain them.
	ChainableWith []string `json:"chainable_with,omitempty"`
	// Forms is the finding's evidence.rescale; nil when the metrics carry
	// no task_id (find the vertex id in Flink's GET /jobs/{job_id}).
	Forms *rescale.Forms `json:"forms,omitempty"`
}

// planRef points at the salting plan served for a task.
type planRef struct {
	// InForce says whether a plan is served now; the fields below are
	// set only then.
	InForce     bool      `json:"in_force"`
	Version     uint64    `json:"version,omitempty"`
	URL         string    `json:"url,omitempty"`
	Parallelism int       `json:"parallelism,omitempty"`
	HotKeys     []string  `json:"hot_keys,omitempty"`
	GeneratedAt time.Time `json:"generated_at,omitzero"`
	ExpiresAt   time.Time `json:"expires_at,omitzero"`
}

// autoscalerExclusion is job.autoscaler.vertex.exclude.ids for the
// vertices whose salting plan is in force, as a flat key and as a
// FlinkDeployment patch.
type autoscalerExclusion struct {
	Key                  string             `json:"key"`
	Value                string             `json:"value"`
	FlinkDeploymentPatch string             `json:"flink_deployment_patch"`
	Vertices             []excludedVertex   `json:"vertices"`
	Unidentified         []unidentifiedTask `json:"unidentified,omitempty"`
}

// excludedVertex is one vertex of an exclusion and why.
type excludedVertex struct {
	VertexID    string `json:"vertex_id"`
	TaskName    string `json:"task_name"`
	Cause       string `json:"cause"`
	IncidentID  string `json:"incident_id"`
	PlanVersion uint64 `json:"plan_version"`
}

// unidentifiedTask is a task that should be excluded but whose vertex id
// the metrics did not carry (no task_id in the metric scope).
type unidentifiedTask struct {
	TaskName   string `json:"task_name"`
	IncidentID string `json:"incident_id"`
}

// inspectAction is where a slow subtask runs and how to look inside it.
type inspectAction struct {
	Host          string        `json:"host,omitempty"`
	TaskAttemptID string        `json:"task_attempt_id,omitempty"`
	TaskManagerID string        `json:"tm_id,omitempty"`
	Requests      *skew.Inspect `json:"requests,omitempty"`
}

// openIncident is what GET /v1/actions reads of an incident (the
// incident.Incident JSON the store returns).
type openIncident struct {
	ID       string   `json:"id"`
	JobID    string   `json:"job_id"`
	JobName  string   `json:"job_name"`
	TaskName string   `json:"task_name"`
	Subtask  int      `json:"subtask"`
	Cause    string   `json:"cause"`
	Start    int64    `json:"start"`
	LastSeen int64    `json:"last_seen"`
	HotKeys  []string `json:"hot_keys"`
	Summary  string   `json:"summary"`
}

// conditionKey is an incident's condition: task, subtask and cause.
type conditionKey struct {
	task    string
	subtask int
	cause   string
}

// GET /v1/actions/{job_id}
//
// The actions are derived, at each request, from what is live: the
// job's open incidents, the latest saturation finding of each (whose
// evidence carries the forms), and the salting plans served now. So an
// action ends when its incident closes, and the autoscaler exclusion of
// a vertex ends too when its plan is retired. Without an incident reader
// in the Store it answers 404.
func (s *Server) getActions(w http.ResponseWriter, r *http.Request) {
	if s.store.Incidents == nil {
		writeError(w, http.StatusNotFound, "this server keeps no incidents")
		return
	}
	job := r.PathValue("job_id")
	if err := checkJobID(job); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if _, err := queryParams(r.URL.RawQuery); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	snap, err := s.snaps.get(r.Context())
	if err != nil {
		s.storeError(w, "snapshot", err)
		return
	}
	release, ok := s.acquire(w)
	if !ok {
		return
	}
	defer release()
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.StoreTimeout)
	defer cancel()
	var rows []json.RawMessage
	err = s.call(ctx, "incidents", func(ctx context.Context) (err error) {
		rows, err = s.store.Incidents.Incidents(ctx, servestore.IncidentsQuery{JobID: job, State: "open", Limit: MaxLimit})
		return err
	})
	if err != nil {
		s.storeError(w, "incidents", err)
		return
	}
	ins := make([]openIncident, 0, len(rows))
	var since int64
	for _, row := range rows {
		var in openIncident
		if err := json.Unmarshal(row, &in); err != nil || in.JobID != job {
			s.log.Warn("skewlens API: skipping an incident the store returned", "err", err, "job_id", fmt.Sprintf("%.64q", in.JobID))
			continue
		}
		ins = append(ins, in)
		if since == 0 || in.Start < since {
			since = in.Start
		}
	}
	// Each incident's latest finding: every finding of an open incident
	// starts at or after its start; newest first, the first one seen of
	// a condition is its latest. A task-wide incident (subtask -1: an
	// under_provisioned task, a rotating hot key whose subtask moves)
	// takes the task's latest finding of its cause on any subtask.
	latest := map[conditionKey]*skew.Finding{}
	if len(ins) > 0 {
		var fs []json.RawMessage
		q := servestore.FindingsQuery{JobID: job, Kind: skew.KindSaturation, Since: time.UnixMilli(since), Limit: MaxLimit}
		err = s.call(ctx, "findings", func(ctx context.Context) (err error) {
			fs, err = s.store.Findings.Findings(ctx, q)
			return err
		})
		if err != nil {
			s.storeError(w, "findings", err)
			return
		}
		for _, row := range fs {
			var f skew.Finding
			if json.Unmarshal(row, &f) != nil || f.Saturation == nil {
				continue
			}
			sub := -1
			if f.SubtaskIndex != nil {
				sub = *f.SubtaskIndex
			}
			for _, k := range []conditionKey{{f.TaskName, sub, f.Cause}, {f.TaskName, -1, f.Cause}} {
				if _, seen := latest[k]; !seen {
					latest[k] = &f
				}
			}
		}
	}
	list := buildActions(job, ins, latest, snap.served)
	body, err := encodeJSON(list)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal error: encoding the answer failed")
		return
	}
	if !snap.staleSince.IsZero() {
		markStale(w.Header(), snap.staleSince)
	}
	writeBody(w, r, body, "no-cache")
}

// buildActions makes a job's actions from its open incidents, the latest
// finding of each condition and the plans served now: one per incident
// of a cause with an action, then the job's autoscaler exclusion.
// Actions are ordered by task, subtask and kind, so equal inputs give
// equal answers (and ETags).
func buildActions(job string, ins []openIncident, latest map[conditionKey]*skew.Finding, served map[planTask]*plans.Plan) actionList {
	list := actionList{JobID: job, Actions: []action{}}
	var exclusion autoscalerExclusion
	for _, in := range ins {
		if list.JobName == "" {
			list.JobName = in.JobName
		}
		f := latest[conditionKey{in.TaskName, in.Subtask, in.Cause}]
		var ev *skew.Evidence
		if f != nil {
			ev = f.Evidence
		}
		reason := in.Summary
		if f != nil && f.Summary != "" {
			reason = f.Summary
		}
		a := action{Cause: in.Cause, TaskName: in.TaskName, Subtask: in.Subtask, IncidentID: in.ID, Reason: reason}
		switch in.Cause {
		case skew.CauseUnderProvisioned:
			a.Kind, a.Rescale = ActionRescale, &rescaleAction{}
			if ev != nil {
				a.Rescale = &rescaleAction{VertexID: ev.VertexID, Parallelism: ev.Parallelism, RecommendedParallelism: ev.RecommendedParallelism,
					MaxParallelism: ev.MaxParallelism, ChainableWith: ev.ChainableWith, Forms: ev.Rescale,
					DividesMaxParallelism: ev.RecommendedParallelism > 0 && ev.MaxParallelism%ev.RecommendedParallelism == 0}
			}
		case skew.CauseDataSkew, skew.CauseRotatingHotKey:
			p := served[planTask{job, in.TaskName}]
			a.Kind, a.SaltingPlan = ActionSaltingPlan, &planRef{}
			if p == nil {
				a.Reason += " No salting plan is served for the task yet."
				break
			}
			ref := &planRef{InForce: true, Version: p.Version, Parallelism: p.Parallelism,
				URL: "/v1/salting/" + url.PathEscape(job) + "/" + url.PathEscape(in.TaskName), GeneratedAt: p.GeneratedAt, ExpiresAt: p.ExpiresAt}
			for _, k := range p.HotKeys {
				ref.HotKeys = append(ref.HotKeys, k.Key)
			}
			a.SaltingPlan = ref
			if ev == nil || !rescale.ValidID(ev.VertexID) {
				exclusion.Unidentified = append(exclusion.Unidentified, unidentifiedTask{TaskName: in.TaskName, IncidentID: in.ID})
				break
			}
			exclusion.Vertices = append(exclusion.Vertices, excludedVertex{VertexID: ev.VertexID, TaskName: in.TaskName,
				Cause: in.Cause, IncidentID: in.ID, PlanVersion: p.Version})
		case skew.CauseSlowSubtask:
			a.Kind, a.Inspect = ActionInspect, &inspectAction{}
			if f != nil {
				a.Inspect = &inspectAction{Host: f.Host, TaskAttemptID: f.TaskAttemptID, TaskManagerID: f.TaskManagerID}
				if ev != nil {
					a.Inspect.Requests = ev.Inspect
				}
			}
		default:
			continue
		}
		list.Actions = append(list.Actions, a)
	}
	slices.SortFunc(list.Actions, func(a, b action) int {
		return cmp.Or(cmp.Compare(a.TaskName, b.TaskName), cmp.Compare(a.Subtask, b.Subtask), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.IncidentID, b.IncidentID))
	})
	if len(exclusion.Vertices) > 0 || len(exclusion.Unidentified) > 0 {
		list.Actions = append(list.Actions, exclusionAction(exclusion))
	}
	return list
}

// exclusionAction is the job's autoscaler_exclude action.
func exclusionAction(x autoscalerExclusion) action {
	slices.SortFunc(x.Vertices, func(a, b excludedVertex) int {
		return cmp.Or(cmp.Compare(a.VertexID, b.VertexID), cmp.Compare(a.IncidentID, b.IncidentID))
	})
	slices.SortFunc(x.Unidentified, func(a, b unidentifiedTask) int {
		return cmp.Or(cmp.Compare(a.TaskName, b.TaskName), cmp.Compare(a.IncidentID, b.IncidentID))
	})
	if x.Vertices == nil {
		x.Vertices = []excludedVertex{}
	}
	ids := make([]string, len(x.Vertices))
	var tasks []string
	for i, v := range x.Vertices {
		ids[i] = v.VertexID
		if !slices.Contains(tasks, v.TaskName) {
			tasks = append(tasks, v.TaskName)
		}
	}
	for _, u := range x.Unidentified {
		if !slices.Contains(tasks, u.TaskName) {
			tasks = append(tasks, u.TaskName)
		}
	}
	ex := rescale.Exclusion{VertexIDs: ids}
	x.Key, x.Value = rescale.AutoscalerExcludeKey, ex.Value()
	if len(ids) > 0 {
		x.FlinkDeploymentPatch = ex.DeploymentPatch()
	}
	quoted := make([]string, len(tasks))
	for i, t := range tasks {
		quoted[i] = fmt.Sprintf("%q", t)
	}
	reason := "The saturation of " + strings.Join(quoted, ", ") + " is a hot key, which more subtasks do not relieve, and the salting plan in force routes its salted keys for the parallelism it was made for, which a rescale would break: keep the Flink autoscaler off these vertices while the plan is in force. The exclusion ends when the incident closes or the plan is retired; ids you exclude already must stay in the value."
	if len(x.Unidentified) > 0 {
		reason += " Some tasks' metrics carry no task_id: add their vertex ids (Flink's GET /jobs/{job_id}, vertices[].id) yourself."
	}
	return action{Kind: ActionAutoscalerExclude, Subtask: -1, Reason: reason, Autoscaler: &x}
}
