package rescale

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/skew"
)

const vid = "cbc357ccb763df2852fee8c4fc7d55f2"

func finding(cause, id string, p int) *skew.Finding {
	return &skew.Finding{Kind: skew.KindSaturation, TaskName: "wideReduce", Saturation: &skew.Saturation{
		Cause: cause, Evidence: &skew.Evidence{VertexID: id, RecommendedParallelism: p}}}
}

func TestFromFinding(t *testing.T) {
	tests := []struct {
		name    string
		f       *skew.Finding
		wantErr string
	}{
		{"under_provisioned", finding(skew.CauseUnderProvisioned, vid, 16), ""},
		{"another cause", finding(skew.CauseDataSkew, vid, 16), "not an under_provisioned"},
		{"no vertex id", finding(skew.CauseUnderProvisioned, "", 16), "not a JobVertexID"},
		{"a name for an id", finding(skew.CauseUnderProvisioned, "wideReduce", 16), "not a JobVertexID"},
		{"upper-case hex", finding(skew.CauseUnderProvisioned, strings.ToUpper(vid), 16), "not a JobVertexID"},
		{"no parallelism", finding(skew.CauseUnderProvisioned, vid, 0), "no recommended"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := FromFinding(tt.f)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(c.Vertices) != 1 || c.Vertices[0] != (Vertex{ID: vid, Parallelism: 16}) {
				t.Fatalf("change %+v, %v", c, err)
			}
		})
	}
}

func TestForms(t *testing.T) {
	c := Change{Vertices: []Vertex{{ID: "ffffffffffffffffffffffffffffffff", Parallelism: 8}, {ID: vid, Parallelism: 16}}}
	want := vid + ":16,ffffffffffffffffffffffffffffffff:8"
	if got := c.Overrides(); got != want {
		t.Errorf("Overrides %q, want %q", got, want)
	}
	if got := c.DynamicProperty(); got != "-Dpipeline.jobvertex-parallelism-overrides="+want {
		t.Errorf("DynamicProperty %q", got)
	}
	b, err := c.ResourceRequirements()
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]struct {
		Parallelism struct{ LowerBound, UpperBound int }
	}
	if err := json.Unmarshal(b, &body); err != nil || body[vid].Parallelism.UpperBound != 16 || body[vid].Parallelism.LowerBound != 1 || len(body) != 2 {
		t.Errorf("ResourceRequirements %s (%v)", b, err)
	}
	if got := c.DeploymentPatch(); got != "spec:\n  flinkConfiguration:\n    pipeline.jobvertex-parallelism-overrides: \""+want+"\"\n" {
		t.Errorf("DeploymentPatch %q", got)
	}
}

var update = flag.Bool("update", false, "rewrite testdata/forms.txt")

// TestFormsGolden writes the forms of one change to testdata/forms.txt,
// one per line (key=value), which deploy/flink's RescaleFormsTest parses
// with Flink's own configuration and command-line parsers.
func TestFormsGolden(t *testing.T) {
	c := Change{Vertices: []Vertex{{ID: vid, Parallelism: 16}, {ID: "0a448493b4782967b150582570326227", Parallelism: 6}}}
	rr, err := c.ResourceRequirements()
	if err != nil {
		t.Fatal(err)
	}
	got := "overrides=" + c.Overrides() + "\n" + "dynamic_property=" + c.DynamicProperty() + "\n" + "resource_requirements=" + string(rr) + "\n"
	file := filepath.Join("testdata", "forms.txt")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil || string(want) != got {
		t.Errorf("%s differs (go test -update ./skew/rescale):\n got %s\nwant %s (%v)", file, got, want, err)
	}
}
