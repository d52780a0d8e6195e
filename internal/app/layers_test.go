package app

import (
	"os/exec"
	"strings"
	"testing"
)

// layers are the module's folders from the top floor down, as
// docs/architecture.md's Layout draws them. A package imports (directly
// or through its dependencies, tests aside) only packages of its own
// layer or of a layer below it; nothing else is allowed. A package
// belongs to the layer whose longest folder prefix it has, so
// internal/testenv sits above the wiring though internal/ spans layers.
var layers = []struct {
	name    string
	folders []string // path prefixes within the module
}{
	{"the test harness, which only tests import", []string{"internal/testenv"}},
	{"the wiring", []string{"cmd", "internal/app", "internal/cliconf", "internal/simfeed", "internal/localch"}},
	{"the views", []string{"serve", "top"}},
	{"the stages and notifiers", []string{"sinks"}},
	{"the pipeline", []string{"pipeline"}},
	{"shared infrastructure", []string{"internal/retry", "internal/promreg", "internal/kafkaclient", "internal/ops", "internal/findingtext", "internal/termtext"}},
	{"the pure engine and trackers", []string{"skew"}},
	{"the declarations", []string{"internal/knob"}},
	{"the deployment checks", []string{"deploy"}},
}

const module = "github.com/skewlens/skewlens/"

// layerOf returns the index in layers of the folder prefix that is the
// longest match for pkg, or -1 when no layer holds it.
func layerOf(pkg string) int {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, f := range l.folders {
			if (pkg == f || strings.HasPrefix(pkg, f+"/")) && len(f) > bestLen {
				best, bestLen = i, len(f)
			}
		}
	}
	return best
}

// TestLayers checks the Layout's one rule: no package imports one of a
// layer above its own, and every package of the module is in a layer.
func TestLayers(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the check lists the packages' imports and needs the go command on PATH: %v", err)
	}
	out, err := exec.Command(goBin, "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], module)
		if !ok {
			continue
		}
		own := layerOf(pkg)
		if own < 0 {
			t.Errorf("%s is in no layer: add its folder to layers and to docs/architecture.md's Layout", pkg)
			continue
		}
		checked++
		for _, dep := range fields[1:] {
			d, ok := strings.CutPrefix(dep, module)
			if !ok {
				continue
			}
			if l := layerOf(d); l >= 0 && l < own {
				t.Errorf("%s (%s) imports %s (%s, a layer above)", pkg, layers[own].name, d, layers[l].name)
			}
		}
	}
	if checked < 40 {
		t.Errorf("only %d packages checked: the listing is wrong", checked)
	}
}
