package rescale

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const vid = "cbc357ccb763df2852fee8c4fc7d55f2"

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		vs      []Vertex
		wantErr string
	}{
		{"one vertex", []Vertex{{vid, 16}}, ""},
		{"no vertex", nil, "no vertex"},
		{"no vertex id", []Vertex{{"", 16}}, "not a JobVertexID"},
		{"a name for an id", []Vertex{{"wideReduce", 16}}, "not a JobVertexID"},
		{"upper-case hex", []Vertex{{strings.ToUpper(vid), 16}}, "not a JobVertexID"},
		{"no parallelism", []Vertex{{vid, 0}}, "below 1"},
		{"the second bad", []Vertex{{vid, 4}, {"x", 2}}, "not a JobVertexID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New("j1", tt.vs...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(c.Vertices) != 1 || c.Vertices[0] != (Vertex{ID: vid, Parallelism: 16}) || c.JobID != "j1" {
				t.Fatalf("change %+v, %v", c, err)
			}
		})
	}
}

func TestForms(t *testing.T) {
	c := Change{JobID: "9b7c1d2e", Vertices: []Vertex{{ID: "ffffffffffffffffffffffffffffffff", Parallelism: 8}, {ID: vid, Parallelism: 16}}}
	want := vid + ":16,ffffffffffffffffffffffffffffffff:8"
	f, err := c.Forms()
	if err != nil {
		t.Fatal(err)
	}
	if f.Overrides != want || c.Overrides() != want {
		t.Errorf("Overrides %q, want %q", f.Overrides, want)
	}
	if f.FlinkRun != "-Dpipeline.jobvertex-parallelism-overrides="+want {
		t.Errorf("FlinkRun %q", f.FlinkRun)
	}
	var body map[string]struct {
		Parallelism struct{ LowerBound, UpperBound int }
	}
	if err := json.Unmarshal(f.ResourceRequirements, &body); err != nil || body[vid].Parallelism.UpperBound != 16 || body[vid].Parallelism.LowerBound != 1 || len(body) != 2 {
		t.Errorf("ResourceRequirements %s (%v)", f.ResourceRequirements, err)
	}
	if f.ResourceRequirementsPath != "/jobs/9b7c1d2e/resource-requirements" {
		t.Errorf("ResourceRequirementsPath %q", f.ResourceRequirementsPath)
	}
	if (Change{}).ResourceRequirementsPath() != "/jobs/<job_id>/resource-requirements" {
		t.Errorf("path without a job id %q", (Change{}).ResourceRequirementsPath())
	}
	if f.FlinkDeploymentPatch != "spec:\n  flinkConfiguration:\n    pipeline.jobvertex-parallelism-overrides: \""+want+"\"\n" {
		t.Errorf("FlinkDeploymentPatch %q", f.FlinkDeploymentPatch)
	}
	if !strings.Contains(f.Note, "FLINK-38770") || !strings.Contains(f.Note, "adaptive") {
		t.Errorf("Note %q lacks the Flink 2.x caveat", f.Note)
	}
	// The JSON names are the findings contract.
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"overrides":`, `"flink_run":`, `"flink_deployment_patch":`, `"resource_requirements":{`, `"resource_requirements_path":`, `"note":`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("Forms JSON lacks %s: %s", k, b)
		}
	}
}

func TestExclusion(t *testing.T) {
	tests := []struct {
		name string
		ids  []string
		want string
	}{
		{"one", []string{vid}, vid},
		{"sorted", []string{"ffffffffffffffffffffffffffffffff", vid}, vid + ";ffffffffffffffffffffffffffffffff"},
		{"repeats once", []string{vid, vid}, vid},
		{"none", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := Exclusion{VertexIDs: tt.ids}
			if got := x.Value(); got != tt.want {
				t.Errorf("Value %q, want %q", got, tt.want)
			}
			if got := x.DeploymentPatch(); got != "spec:\n  flinkConfiguration:\n    job.autoscaler.vertex.exclude.ids: \""+tt.want+"\"\n" {
				t.Errorf("DeploymentPatch %q", got)
			}
		})
	}
}

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestFormsGolden writes the forms of one change and one exclusion to
// testdata, which the tools that consume them check:
//   - forms.txt, one form per line (key=value): deploy/flink's
//     RescaleFormsTest parses them with Flink's own configuration and
//     command-line parsers, of Flink 2.3.0 and 1.20.5;
//   - the two FlinkDeployment patches (*.patch.yaml): deploy/kubernetes's
//     TestFlinkDeploymentPatches merges each into a FlinkDeployment and
//     validates it against the operator's CRD.
func TestFormsGolden(t *testing.T) {
	c := Change{JobID: "5f0e3a7b9c1d2e4f6a8b0c2d4e6f8a0b", Vertices: []Vertex{{ID: vid, Parallelism: 16}, {ID: "0a448493b4782967b150582570326227", Parallelism: 6}}}
	f, err := c.Forms()
	if err != nil {
		t.Fatal(err)
	}
	x := Exclusion{VertexIDs: []string{vid, "0a448493b4782967b150582570326227"}}
	files := map[string]string{
		"forms.txt": "overrides=" + f.Overrides + "\n" + "dynamic_property=" + f.FlinkRun + "\n" +
			"resource_requirements=" + string(f.ResourceRequirements) + "\n" + "autoscaler_exclude=" + x.Value() + "\n",
		"overrides.patch.yaml":          f.FlinkDeploymentPatch,
		"autoscaler-exclude.patch.yaml": x.DeploymentPatch(),
	}
	for name, got := range files {
		file := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(file)
		if err != nil || string(want) != got {
			t.Errorf("%s differs (go test -update ./skew/rescale):\n got %s\nwant %s (%v)", file, got, want, err)
		}
	}
}
