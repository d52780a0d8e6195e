package kubernetes

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv"
	"gopkg.in/yaml.v3"
)

// kubernetesVersion is the API version the manifests are checked
// against: an old enough one that current clusters all serve.
const kubernetesVersion = "1.30.0"

var manifests = []string{"secrets.yaml", "run.yaml", "serve.yaml"}

// TestManifestsValidate validates each manifest, as shipped and with
// mistakes the check must catch (an unknown field, a wrong type).
func TestManifestsValidate(t *testing.T) {
	testenv.SkipShort(t, "kubernetes-validate (PyPI)")
	out, err := exec.Command("bash", filepath.Join(testenv.DeployDir("kubernetes"), "install.sh")).Output()
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	tool := strings.TrimSpace(string(out))
	tests := []struct {
		name string
		edit func(string) string
		ok   bool
	}{
		{name: "as shipped", ok: true},
		{name: "an unknown field", edit: func(s string) string {
			return strings.Replace(s, "  labels:\n", "  labelz: {}\n  labels:\n", 1)
		}},
		{name: "a wrong type", edit: func(s string) string {
			return strings.Replace(s, "kind: ", "apiVersion: 3\nkind: ", 1)
		}},
	}
	for _, m := range manifests {
		b, err := os.ReadFile(filepath.Join(testenv.DeployDir("kubernetes"), m))
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range tests {
			t.Run(m+"/"+tt.name, func(t *testing.T) {
				text := string(b)
				if tt.edit != nil {
					if text = tt.edit(text); text == string(b) {
						t.Fatal("the edit changed nothing")
					}
				}
				path := filepath.Join(t.TempDir(), m)
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				out, err := exec.CommandContext(ctx, tool, "--strict", "-k", kubernetesVersion, path).CombinedOutput()
				if ok := err == nil && !strings.Contains(string(out), "ERROR"); ok != tt.ok {
					t.Errorf("kubernetes-validate --strict -k %s: passed %v, want %v (%v)\n%s", kubernetesVersion, ok, tt.ok, err, out)
				}
			})
		}
	}
}

// flinkDeployment is the part of the Flink Kubernetes Operator's
// FlinkDeployment spec (flink.apache.org/v1beta1) that
// flink-deployment.yaml uses; decoded with unknown fields refused, it
// catches a misspelt field as the operator's schema would.
type flinkDeployment struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name      string `yaml:"name"`
		Namespace string `yaml:"namespace"`
	} `yaml:"metadata"`
	Spec struct {
		Image              string            `yaml:"image"`
		FlinkVersion       string            `yaml:"flinkVersion"`
		ServiceAccount     string            `yaml:"serviceAccount"`
		FlinkConfiguration map[string]string `yaml:"flinkConfiguration"`
		PodTemplate        yaml.Node         `yaml:"podTemplate"`
		JobManager         struct {
			Resource struct {
				Memory string  `yaml:"memory"`
				CPU    float64 `yaml:"cpu"`
			} `yaml:"resource"`
		} `yaml:"jobManager"`
		TaskManager struct {
			Resource struct {
				Memory string  `yaml:"memory"`
				CPU    float64 `yaml:"cpu"`
			} `yaml:"resource"`
		} `yaml:"taskManager"`
		Job struct {
			JarURI      string   `yaml:"jarURI"`
			EntryClass  string   `yaml:"entryClass"`
			Args        []string `yaml:"args"`
			Parallelism int      `yaml:"parallelism"`
			UpgradeMode string   `yaml:"upgradeMode"`
		} `yaml:"job"`
	} `yaml:"spec"`
}

// TestFlinkDeployment checks flink-deployment.yaml as far as offline
// tools go: its fields are the operator's (strict decoding), its
// reporter keys are those docs/flink.md gives, the job is the example
// job, and its podTemplate is a valid core/v1 Pod (kubernetes-validate,
// strict).
func TestFlinkDeployment(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testenv.DeployDir("kubernetes"), "flink-deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var fd flinkDeployment
	if err := dec.Decode(&fd); err != nil {
		t.Fatalf("flink-deployment.yaml: %v", err)
	}
	if fd.APIVersion != "flink.apache.org/v1beta1" || fd.Kind != "FlinkDeployment" {
		t.Errorf("apiVersion %q kind %q", fd.APIVersion, fd.Kind)
	}
	if !regexp.MustCompile(`^v1_(1[5-9]|20)$|^v2_\d+$`).MatchString(fd.Spec.FlinkVersion) {
		t.Errorf("flinkVersion %q: not an operator version name", fd.Spec.FlinkVersion)
	}
	fc := fd.Spec.FlinkConfiguration
	if fc["metrics.reporter.skewlens.factory.class"] != "io.github.skewlens.flink.reporter.SkewlensReporterFactory" ||
		fc["metrics.reporter.skewlens.bootstrap.servers"] == "" {
		t.Errorf("flinkConfiguration lacks the reporter: %v", fc)
	}
	doc, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "docs", "flink.md"))
	if err != nil {
		t.Fatal(err)
	}
	for k := range fc {
		if strings.HasPrefix(k, "metrics.reporter.skewlens.") && !strings.Contains(string(doc), k) {
			t.Errorf("flinkConfiguration key %s is not in docs/flink.md", k)
		}
	}
	if fd.Spec.Job.EntryClass != "io.github.skewlens.example.HotKeyJob" || !strings.HasPrefix(fd.Spec.Job.JarURI, "local:///opt/flink/usrlib/") ||
		!slices.Contains([]string{"stateless", "savepoint", "last-state"}, fd.Spec.Job.UpgradeMode) {
		t.Errorf("job %+v", fd.Spec.Job)
	}

	testenv.SkipShort(t, "kubernetes-validate (PyPI)")
	out, err := exec.Command("bash", filepath.Join(testenv.DeployDir("kubernetes"), "install.sh")).Output()
	if err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	tool := strings.TrimSpace(string(out))
	pod, err := yaml.Marshal(&fd.Spec.PodTemplate)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pod-template.yaml")
	if err := os.WriteFile(path, pod, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tool, "--strict", "-k", kubernetesVersion, path).CombinedOutput(); err != nil || strings.Contains(string(out), "ERROR") {
		t.Errorf("podTemplate: kubernetes-validate --strict: %v\n%s", err, out)
	}
}
