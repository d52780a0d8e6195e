package rescale

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Flink's option keys the forms set.
const (
	// OverridesKey is Flink's option of per-vertex parallelism overrides
	// (PipelineOptions.PARALLELISM_OVERRIDES): a map, id:parallelism pairs
	// separated by commas.
	OverridesKey = "pipeline.jobvertex-parallelism-overrides"
	// AutoscalerExcludeKey is the Flink autoscaler's list of vertices it
	// must not scale (AutoScalerOptions.VERTEX_EXCLUDE_IDS): JobVertexIDs
	// separated by semicolons.
	AutoscalerExcludeKey = "job.autoscaler.vertex.exclude.ids"
)

// Caveat is the note every rescale carries: which Flink versions apply
// the override, and what to do on the others.
const Caveat = "Flink 1.x applies " + OverridesKey + " when the job is submitted " +
	"(stop it with a savepoint and resubmit with flink_run, or set it in the FlinkDeployment and let the operator redeploy); " +
	"Flink 2.x ignores it for DataStream jobs (FLINK-38770): there, with jobmanager.scheduler: adaptive, " +
	"merge resource_requirements into what GET resource_requirements_path answers (the PUT must name every vertex) " +
	"and PUT it there, which rescales the running job."

// Vertex is one job vertex's new parallelism.
type Vertex struct {
	ID          string // the JobVertexID, 32 lower-case hex digits
	Parallelism int
}

// Change is a rescale of one job's vertices, in every form it is applied.
type Change struct {
	// JobID is the Flink job id, for the REST path of the resource
	// requirements; "" writes a placeholder.
	JobID    string
	Vertices []Vertex
}

// New returns the change of job jobID's vertices vs. It fails when a
// vertex id is not a JobVertexID (metrics without task_id name the task
// only), a parallelism is below 1, or there is no vertex.
func New(jobID string, vs ...Vertex) (Change, error) {
	if len(vs) == 0 {
		return Change{}, errors.New("rescale: no vertex")
	}
	for _, v := range vs {
		if !ValidID(v.ID) {
			return Change{}, fmt.Errorf("rescale: vertex id %.64q is not a JobVertexID", v.ID)
		}
		if v.Parallelism < 1 {
			return Change{}, fmt.Errorf("rescale: vertex %s: parallelism %d below 1", v.ID, v.Parallelism)
		}
	}
	return Change{JobID: jobID, Vertices: slices.Clone(vs)}, nil
}

// ValidID reports whether id is a JobVertexID as Flink prints it: 32
// lower-case hex digits.
func ValidID(id string) bool {
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

// ResourceRequirements is this change's part of the body of the adaptive
// scheduler's PUT /jobs/:jobid/resource-requirements: each vertex's
// parallelism as its upper bound, at least one subtask. Flink refuses a
// PUT that does not name every vertex of the job, so it is merged into
// what GET on the same path answers (docs/flink.md shows the jq).
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

// ResourceRequirementsPath is the REST path the resource requirements are
// PUT to, relative to the JobManager's REST address.
func (c Change) ResourceRequirementsPath() string {
	id := c.JobID
	if id == "" {
		id = "<job_id>"
	}
	return "/jobs/" + id + "/resource-requirements"
}

// DeploymentPatch is a merge patch of a FlinkDeployment (the Kubernetes
// operator's custom resource) that sets the overrides in
// spec.flinkConfiguration, as YAML.
func (c Change) DeploymentPatch() string {
	return configPatch(OverridesKey, c.Overrides())
}

// configPatch is a FlinkDeployment merge patch that sets one key of
// spec.flinkConfiguration to a string: a flat key with a quoted value is
// what every version of the operator's CRD accepts (up to 1.12 a map of
// strings, from 1.13 any YAML).
func configPatch(key, value string) string {
	return fmt.Sprintf("spec:\n  flinkConfiguration:\n    %s: %q\n", key, value)
}

// Forms is a rescale in every form it is applied, as the evidence of an
// under_provisioned finding carries it (its JSON is part of the findings
// contract).
type Forms struct {
	// Overrides is the value of pipeline.jobvertex-parallelism-overrides.
	Overrides string `json:"overrides"`
	// FlinkRun is the `flink run` argument that sets it.
	FlinkRun string `json:"flink_run"`
	// FlinkDeploymentPatch is a merge patch of the operator's
	// FlinkDeployment, YAML (kubectl patch flinkdeployment NAME --type
	// merge --patch-file FILE).
	FlinkDeploymentPatch string `json:"flink_deployment_patch"`
	// ResourceRequirements is the body to PUT to
	// ResourceRequirementsPath on Flink 2.x with the adaptive scheduler.
	ResourceRequirements     json.RawMessage `json:"resource_requirements"`
	ResourceRequirementsPath string          `json:"resource_requirements_path"`
	// Note says which Flink versions apply which form (Caveat).
	Note string `json:"note"`
}

// Forms returns the change in every form.
func (c Change) Forms() (*Forms, error) {
	rr, err := c.ResourceRequirements()
	if err != nil {
		return nil, fmt.Errorf("rescale: resource requirements: %w", err)
	}
	return &Forms{
		Overrides:                c.Overrides(),
		FlinkRun:                 c.DynamicProperty(),
		FlinkDeploymentPatch:     c.DeploymentPatch(),
		ResourceRequirements:     rr,
		ResourceRequirementsPath: c.ResourceRequirementsPath(),
		Note:                     Caveat,
	}, nil
}

// Exclusion is the Flink autoscaler setting that keeps it off some
// vertices of a job: those whose saturation a salting plan treats (a hot
// key), which more subtasks do not relieve and a rescale would break (the
// plan's salted keys are routed for the parallelism it was made for).
type Exclusion struct {
	VertexIDs []string
}

// ids returns the vertex ids sorted and without repeats.
func (x Exclusion) ids() []string {
	ids := slices.Clone(x.VertexIDs)
	slices.Sort(ids)
	return slices.Compact(ids)
}

// Value is the value of job.autoscaler.vertex.exclude.ids: the ids
// separated by semicolons, as Flink's configuration parses a list option.
func (x Exclusion) Value() string { return strings.Join(x.ids(), ";") }

// DeploymentPatch is a merge patch of a FlinkDeployment that sets the
// exclusion in spec.flinkConfiguration, as YAML. It replaces the key's
// value: ids the user already excludes must be added to it.
func (x Exclusion) DeploymentPatch() string { return configPatch(AutoscalerExcludeKey, x.Value()) }
