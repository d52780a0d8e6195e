package kubernetes

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv"
	"gopkg.in/yaml.v3"
)

// The operator's FlinkDeployment CRD, vendored from
// github.com/apache/flink-kubernetes-operator release-1.15.0 (see
// testdata/README.md).
var flinkDeploymentCRD = filepath.Join("testdata", "flinkdeployments.flink.apache.org-v1.yml")

// rescaleTestdata is where skew/rescale writes the forms it emits
// (go test -update ./skew/rescale).
func rescaleTestdata() string {
	return filepath.Join(testenv.RepoRoot(), "skew", "rescale", "testdata")
}

// readYAML decodes a YAML file into generic values.
func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// mergePatch applies a JSON merge patch (RFC 7386, what kubectl patch
// --type merge sends) to target and returns the result; target is not
// modified.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	out := map[string]any{}
	if t, ok := target.(map[string]any); ok {
		maps.Copy(out, t)
	}
	for k, v := range p {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = mergePatch(out[k], v)
	}
	return out
}

// TestFlinkDeploymentPatches checks the FlinkDeployment patches skewlens
// emits (the rescale's overrides and the autoscaler exclusion, as
// skew/rescale writes them to its testdata) with the tool that consumes
// them, as far as it runs offline: each is merged into the FlinkDeployment
// of flink-deployment.yaml as kubectl patch --type merge does, and the
// result validated against the operator's own CRD (its openAPIV3Schema,
// unknown fields refused, as with kubectl apply --validate=strict).
//
// The validator is crdvalidate.py, on the jsonschema library of
// kubernetes-validate's virtual environment: kubernetes-validate itself
// validates Kubernetes' own kinds only and takes no CRD, and the operator's
// CRD is on no package registry here (its API jar is not on Maven Central
// as far as this machine sees), so the CRD is vendored. Each resource is
// checked against the CRD as it is (release 1.15.0: flinkConfiguration is
// any YAML) and with flinkConfiguration a map of strings, as the CRDs of
// releases up to 1.12 declare it. The cases with mistakes show that the
// check catches them.
func TestFlinkDeploymentPatches(t *testing.T) {
	// The patches set exactly the values Flink's parsers checked
	// (deploy/flink's RescaleFormsTest reads forms.txt and the patches).
	forms := map[string]string{}
	b, err := os.ReadFile(filepath.Join(rescaleTestdata(), "forms.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		k, v, _ := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
		forms[k] = v
	}
	overrides := readYAML(t, filepath.Join(rescaleTestdata(), "overrides.patch.yaml"))
	exclusion := readYAML(t, filepath.Join(rescaleTestdata(), "autoscaler-exclude.patch.yaml"))
	flinkConf := func(p map[string]any) map[string]any {
		spec, _ := p["spec"].(map[string]any)
		fc, _ := spec["flinkConfiguration"].(map[string]any)
		return fc
	}
	if fc := flinkConf(overrides); len(fc) != 1 || fc["pipeline.jobvertex-parallelism-overrides"] != forms["overrides"] {
		t.Errorf("overrides patch sets %v, want pipeline.jobvertex-parallelism-overrides: %q", fc, forms["overrides"])
	}
	if fc := flinkConf(exclusion); len(fc) != 1 || fc["job.autoscaler.vertex.exclude.ids"] != forms["autoscaler_exclude"] {
		t.Errorf("autoscaler patch sets %v, want job.autoscaler.vertex.exclude.ids: %q", fc, forms["autoscaler_exclude"])
	}

	testenv.SkipShort(t, "kubernetes-validate's virtual environment (PyPI)")
	out, err := exec.Command("bash", filepath.Join(testenv.DeployDir("kubernetes"), "install.sh")).Output()
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	python := filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), "python")

	base := readYAML(t, "flink-deployment.yaml")
	patched := func(ps ...any) any {
		var doc any = base
		for _, p := range ps {
			doc = mergePatch(doc, p)
		}
		return doc
	}
	nested := map[string]any{"spec": map[string]any{"flinkConfiguration": map[string]any{
		"pipeline.jobvertex-parallelism-overrides": map[string]any{"cbc357ccb763df2852fee8c4fc7d55f2": 16}}}}
	tests := []struct {
		name string
		doc  any
		// ok and okFlat: valid against the CRD as it is, and with
		// flinkConfiguration a map of strings (operator ≤ 1.12).
		ok, okFlat bool
	}{
		{"as shipped", patched(), true, true},
		{"the rescale's overrides patch", patched(overrides), true, true},
		{"the autoscaler exclusion patch", patched(exclusion), true, true},
		{"both patches", patched(overrides, exclusion), true, true},
		// The operator from 1.13 takes nested YAML, the earlier ones a
		// map of strings only: why skewlens writes one quoted string.
		{"the overrides as a nested map", patched(nested), true, false},
		{"the patch under a misspelt field", patched(map[string]any{"spec": map[string]any{"flinkConfig": flinkConf(overrides)}}), false, false},
		{"a wrong type", patched(overrides, map[string]any{"spec": map[string]any{"job": map[string]any{"parallelism": "four"}}}), false, false},
		{"an unknown top-level field", patched(overrides, map[string]any{"flinkConfiguration": flinkConf(overrides)}), false, false},
	}
	dir := t.TempDir()
	var files []string
	for i, tt := range tests {
		b, err := json.Marshal(tt.doc)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, filepath.Join(dir, strings.NewReplacer(" ", "-", "'", "").Replace(tt.name)+".json"))
		if err := os.WriteFile(files[i], b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, flat := range []bool{false, true} {
		args := []string{filepath.Join(testenv.DeployDir("kubernetes"), "crdvalidate.py")}
		if flat {
			args = append(args, "--flat-flink-configuration")
		}
		args = append(args, flinkDeploymentCRD)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		out, err := exec.CommandContext(ctx, python, append(args, files...)...).Output()
		cancel()
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
			t.Fatalf("crdvalidate.py: %v\n%s%s", err, out, ee.Stderr)
		}
		verdicts := map[string]string{}
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		t.Logf("crdvalidate.py (flat %v):\n%s", flat, out)
		for sc.Scan() {
			file, verdict, _ := strings.Cut(sc.Text(), ": ")
			verdicts[file] = verdict
		}
		for i, tt := range tests {
			want := tt.ok
			if flat {
				want = tt.okFlat
			}
			v, seen := verdicts[files[i]]
			if !seen || (v == "ok") != want {
				t.Errorf("%s (flinkConfiguration a map of strings: %v): %q, want valid %v", tt.name, flat, v, want)
			}
		}
	}
}
