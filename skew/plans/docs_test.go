package plans

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/skew"
)

// TestDocsExample checks the plan in docs/salting-plans.md: it is a valid
// plan whose salted keys land where it says under Flink's routing, and it
// is what the Manager publishes for the finding of ExampleManager.
func TestDocsExample(t *testing.T) {
	b, err := os.ReadFile("../../docs/salting-plans.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "```json\n")
	if start < 0 {
		t.Fatal("no json block in docs/salting-plans.md")
	}
	block := doc[start+len("```json\n"):]
	block = block[:strings.Index(block, "```")]
	var p Plan
	dec := json.NewDecoder(strings.NewReader(block))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("the documented plan does not decode: %v", err)
	}
	if err := validatePlan(&p, p.JobID, p.TaskName); err != nil {
		t.Fatalf("the documented plan is invalid: %v", err)
	}
	if p.Version != 1 || p.Source != SourceEngine || p.Separator != DefaultConfig().Separator {
		t.Fatalf("documented plan: version %d source %q separator %q", p.Version, p.Source, p.Separator)
	}
	// The documented JSON equals the Manager's output (compared after
	// re-encoding, as the document is formatted by hand).
	ex, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in := false
	for _, l := range strings.Split(string(ex), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "// Output:":
			in = true
		case in && l == "// }":
			out = append(out, "}")
			in = false
		case in:
			out = append(out, strings.TrimPrefix(strings.TrimPrefix(l, "//"), " "))
		}
	}
	var q Plan
	if err := json.Unmarshal([]byte(strings.Join(out, "\n")), &q); err != nil {
		t.Fatalf("example output: %v", err)
	}
	a, _ := json.Marshal(&p)
	c, _ := json.Marshal(&q)
	if string(a) != string(c) {
		t.Fatalf("docs/salting-plans.md shows\n%s\nthe Manager publishes\n%s", a, c)
	}
}

// TestFindingPlanNamesKeysAsServedPlan: a plan names its keys "hot_keys"
// alike in a salting_plan finding (analyze, the findings topic and table)
// and in a served or published plan, so one name means one thing.
func TestFindingPlanNamesKeysAsServedPlan(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"finding plan", skew.Plan{Keys: []skew.SaltedKey{{Key: "k"}}}},
		{"served plan", Plan{HotKeys: []HotKey{{Key: "k"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if _, ok := m["hot_keys"]; !ok {
				t.Errorf("no hot_keys in %s", b)
			}
			if _, ok := m["keys"]; ok {
				t.Errorf("keys in %s: the plan's keys are hot_keys everywhere", b)
			}
		})
	}
}
