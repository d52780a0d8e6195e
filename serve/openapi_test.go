package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/sinks/servestore"
	"github.com/skewlens/skewlens/skew/incident"

	"gopkg.in/yaml.v3"

	"github.com/skewlens/skewlens/internal/testenv/chtest"
	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/plans"
	"github.com/skewlens/skewlens/skew/rescale"
)

// loadOpenAPI parses docs/openapi.yaml.
func loadOpenAPI(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chtest.RepoRoot(), "docs", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	return doc
}

// node walks a parsed YAML document by keys.
func node(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// resolve follows a local $ref.
func resolve(doc map[string]any, v any) any {
	for i := 0; i < 10; i++ {
		ref, ok := node(v, "$ref").(string)
		if !ok {
			return v
		}
		v = node(doc, strings.Split(strings.TrimPrefix(ref, "#/"), "/")...)
	}
	return v
}

var httpMethods = []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}

// TestOpenAPIMatchesRoutes checks that docs/openapi.yaml describes every
// route the server registers and nothing else, with the path parameters
// of each path, and that every $ref resolves.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	doc := loadOpenAPI(t)
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.0.") {
		t.Errorf("openapi version %q, want 3.0.x", v)
	}
	s, _ := newTestServer(t, Config{}, newFakeStore())
	var registered []string
	for _, rt := range s.routes() {
		registered = append(registered, rt.method+" "+rt.pattern)
	}
	paths, _ := doc["paths"].(map[string]any)
	var described []string
	wildcard := regexp.MustCompile(`\{([a-z_]+)\}`)
	for path, item := range paths {
		for _, m := range httpMethods {
			op := node(item, m)
			if op == nil {
				continue
			}
			described = append(described, strings.ToUpper(m)+" "+path)
			// Path parameters: exactly the path's wildcards.
			var inPath []string
			params, _ := node(op, "parameters").([]any)
			for _, p := range params {
				p = resolve(doc, p)
				if node(p, "in") == "path" {
					inPath = append(inPath, node(p, "name").(string))
					if node(p, "required") != true {
						t.Errorf("%s %s: path parameter %v not required", m, path, node(p, "name"))
					}
				}
			}
			var want []string
			for _, w := range wildcard.FindAllStringSubmatch(path, -1) {
				want = append(want, w[1])
			}
			sort.Strings(inPath)
			sort.Strings(want)
			if !slices.Equal(inPath, want) {
				t.Errorf("%s %s: path parameters %v, want %v", m, path, inPath, want)
			}
			if node(op, "responses") == nil {
				t.Errorf("%s %s: no responses", m, path)
			}
		}
	}
	sort.Strings(registered)
	sort.Strings(described)
	for _, r := range registered {
		if !slices.Contains(described, r) {
			t.Errorf("route %s is not in docs/openapi.yaml", r)
		}
	}
	for _, d := range described {
		if !slices.Contains(registered, d) {
			t.Errorf("docs/openapi.yaml describes %s, which the server does not register", d)
		}
	}

	// Every $ref points at something.
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				if !strings.HasPrefix(ref, "#/") || node(doc, strings.Split(ref[2:], "/")...) == nil {
					t.Errorf("%s: $ref %q does not resolve", at, ref)
				}
			}
			for k, c := range v {
				walk(c, at+"/"+k)
			}
		case []any:
			for _, c := range v {
				walk(c, at)
			}
		}
	}
	walk(doc, "")
}

// TestOpenAPISchemasMatchTypes checks that the schemas have exactly the
// JSON fields of the Go types they describe.
func TestOpenAPISchemasMatchTypes(t *testing.T) {
	doc := loadOpenAPI(t)
	types := map[string]any{
		"Plan":                plans.Plan{},
		"HotKey":              plans.HotKey{},
		"SaltTarget":          skew.SaltTarget{},
		"SubtaskStats":        skew.SubtaskStats{},
		"Override":            plans.Override{},
		"AuditEntry":          servestore.AuditEntry{},
		"Error":               apiError{},
		"PinRequest":          pinRequest{},
		"OverrideRequest":     overrideRequest{},
		"ExcludeRequest":      excludeRequest{},
		"HotKeyFinding":       skew.HotKey{},
		"Incident":            incident.Incident{},
		"IncidentStat":        incident.Stat{},
		"ActionList":          actionList{},
		"Action":              action{},
		"RescaleAction":       rescaleAction{},
		"RescaleForms":        rescale.Forms{},
		"PlanRef":             planRef{},
		"AutoscalerExclusion": autoscalerExclusion{},
		"InspectAction":       inspectAction{},
		"Inspect":             skew.Inspect{},
	}
	for name, v := range types {
		schema := node(doc, "components", "schemas", name)
		if schema == nil {
			t.Errorf("schema %s missing", name)
			continue
		}
		props, _ := node(schema, "properties").(map[string]any)
		var got, want []string
		for p := range props {
			got = append(got, p)
		}
		optional := map[string]bool{}
		rt := reflect.TypeOf(v)
		for i := 0; i < rt.NumField(); i++ {
			tag := rt.Field(i).Tag.Get("json")
			jname, opts, _ := strings.Cut(tag, ",")
			if jname == "-" || jname == "" {
				continue
			}
			want = append(want, jname)
			optional[jname] = strings.Contains(opts, "omitempty")
		}
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("schema %s: properties %v, want the JSON fields %v", name, got, want)
		}
		required, _ := node(schema, "required").([]any)
		for _, r := range required {
			if !slices.Contains(want, r.(string)) {
				t.Errorf("schema %s: required %v is not a field", name, r)
			}
			if optional[r.(string)] {
				t.Errorf("schema %s: %v is required but omitted when empty", name, r)
			}
		}
	}
}

// TestDocsHotKeyFinding checks that the hot_key finding docs/api.md
// shows decodes, field by field, into the findings contract, with the
// share's margin and the subtask's share it describes.
func TestDocsHotKeyFinding(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chtest.RepoRoot(), "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, part := range strings.Split(string(b), "```json\n")[1:] {
		block, _, ok := strings.Cut(part, "```")
		if !ok {
			t.Fatal("unterminated json block in docs/api.md")
		}
		if !strings.Contains(block, `"kind":"hot_key"`) {
			continue
		}
		found = true
		dec := json.NewDecoder(strings.NewReader(block))
		dec.DisallowUnknownFields()
		var f skew.Finding
		if err := dec.Decode(&f); err != nil {
			t.Fatalf("docs/api.md hot_key example does not decode: %v\n%s", err, block)
		}
		if f.HotKey == nil || f.ShareMargin <= 0 || f.Rule == "" || f.SubtaskShare <= 0 || f.SubtaskShareMargin <= 0 || f.ExcessExplained <= 0 {
			t.Errorf("docs/api.md hot_key example lacks the margins: %+v", f.HotKey)
		}
	}
	if !found {
		t.Error("docs/api.md shows no hot_key finding")
	}
}
