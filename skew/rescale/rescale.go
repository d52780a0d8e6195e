package rescale

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/skewlens/skewlens/skew"
)

// OverridesKey is Flink's option of per-vertex parallelism overrides
// (PipelineOptions.PARALLELISM_OVERRIDES).
const OverridesKey = "pipeline.jobvertex-parallelism-overrides"

// Vertex is one job vertex's new parallelism.
type Vertex struct {
	ID          string // the JobVertexID, 32 hex digits
	Parallelism int
}

// Change is a rescale of one job's vertices, in every form it is applied.
type Change struct {
	Vertices []Vertex
}

// FromFinding returns the change an under_provisioned finding recommends.
// It fails when the finding is of another cause, or its task's vertex id
// is unknown (metrics without task_id).
func FromFinding(f *skew.Finding) (Change, error) {
	if f.Saturation == nil || f.Saturation.Cause != skew.CauseUnderProvisioned {
		return Change{}, errors.New("rescale: not an under_provisioned finding")
	}
	ev := f.Saturation.Evidence
	if ev == nil {
		return Change{}, fmt.Errorf("rescale: task %q: no evidence", f.TaskName)
	}
	if !validID(ev.VertexID) {
		return Change{}, fmt.Errorf("rescale: task %q: vertex id %q is not a JobVertexID", f.TaskName, ev.VertexID)
	}
	if ev.RecommendedParallelism < 1 {
		return Change{}, fmt.Errorf("rescale: task %q: no recommended parallelism", f.TaskName)
	}
	return Change{Vertices: []Vertex{{ID: ev.VertexID, Parallelism: ev.RecommendedParallelism}}}, nil
}

// validID reports whether id is a JobVertexID as Flink prints it: 32
// lower-case hex digits.
func validID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := range len(id) {
		if c := id[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// sorted returns the vertices by id, so that every form is deterministic.
func (c Change) sorted() []Vertex {
	vs := slices.Clone(c.Vertices)
	slices.SortFunc(vs, func(a, b Vertex) int { return strings.Compare(a.ID, b.ID) })
	return vs
}

// Overrides is the value of pipeline.jobvertex-parallelism-overrides:
// id:parallelism pairs separated by commas, as Flink's configuration
// parses a map option.
func (c Change) Overrides() string {
	var b strings.Builder
	for i, v := range c.sorted() {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d", v.ID, v.Parallelism)
	}
	return b.String()
}

// DynamicProperty is the argument of `flink run` that sets the overrides:
// -Dpipeline.jobvertex-parallelism-overrides=id:p,… (hex ids, digits,
// colons and commas need no shell quoting).
func (c Change) DynamicProperty() string {
	return "-D" + OverridesKey + "=" + c.Overrides()
}

// ResourceRequirements is the body of the adaptive scheduler's
// PUT /jobs/:jobid/resource-requirements: each vertex's parallelism as
// its upper bound, at least one subtask.
func (c Change) ResourceRequirements() ([]byte, error) {
	type bounds struct {
		LowerBound int `json:"lowerBound"`
		UpperBound int `json:"upperBound"`
	}
	type requirement struct {
		Parallelism bounds `json:"parallelism"`
	}
	body := map[string]requirement{}
	for _, v := range c.Vertices {
		body[v.ID] = requirement{Parallelism: bounds{LowerBound: 1, UpperBound: v.Parallelism}}
	}
	return json.Marshal(body) // map keys sorted: deterministic
}

// DeploymentPatch is a merge patch of a FlinkDeployment (the Kubernetes
// operator's custom resource) that sets the overrides in
// spec.flinkConfiguration, as YAML.
func (c Change) DeploymentPatch() string {
	return fmt.Sprintf("spec:\n  flinkConfiguration:\n    %s: %q\n", OverridesKey, c.Overrides())
}
