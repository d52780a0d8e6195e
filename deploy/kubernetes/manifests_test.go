package kubernetes

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/deploy/testenv"
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
