package app

import (
	"os/exec"
	"strings"
	"testing"
)

// layers are the module's folders by what they may import, as the
// Layout of docs/architecture.md says: a package of a layer imports (directly or
// through its dependencies, tests aside) none of the module's packages
// listed in its forbidden prefixes, but for the exceptions.
var layers = []struct {
	name      string
	packages  []string // path prefixes within the module
	forbidden []string // path prefixes within the module
	except    []string // exact paths allowed though forbidden
}{
	{
		name:      "the engine and the pure trackers",
		packages:  []string{"skew", "plans", "alert/incident"},
		forbidden: []string{"pipeline", "sinks", "store", "serve", "top", "cmd", "internal", "alert"},
		except:    []string{"internal/knob", "alert/incident"},
	},
	{
		name:      "the pipeline",
		packages:  []string{"pipeline"},
		forbidden: []string{"sinks", "store", "serve", "top", "cmd", "alert", "plans", "internal/app", "internal/cliconf", "internal/testenv", "internal/localch", "internal/simfeed"},
	},
	{
		name:      "the stages and the store",
		packages:  []string{"sinks", "alert", "store"},
		forbidden: []string{"serve", "top", "cmd", "pipeline/kafkasrc", "pipeline/replay", "pipeline/simulate", "internal/app", "internal/cliconf", "internal/testenv", "internal/localch", "internal/simfeed"},
		except:    []string{"serve/servestore", "top/topstore"},
	},
	{
		name:      "the views",
		packages:  []string{"serve", "top"},
		forbidden: []string{"store", "sinks", "pipeline/kafkasrc", "pipeline/stream", "cmd", "internal/app", "internal/cliconf", "internal/testenv", "internal/localch", "internal/simfeed"},
	},
	{
		name:      "shared infrastructure",
		packages:  []string{"internal/knob", "internal/retry", "internal/promreg", "internal/kafkaclient", "internal/ops"},
		forbidden: []string{"skew", "pipeline", "sinks", "alert", "plans", "store", "serve", "top", "cmd", "internal/app", "internal/cliconf", "internal/testenv", "internal/localch", "internal/simfeed", "internal/findingtext"},
	},
	{
		name:      "everything but the binary",
		packages:  []string{""},
		forbidden: []string{"cmd", "internal/cliconf"},
		except:    []string{},
	},
}

const module = "github.com/skewlens/skewlens/"

// TestLayers checks the import rules of the Layout: the engine imports
// nothing but itself and knob, the pipeline no stage, store or view, the
// store neither view (but the contracts they declare), the views no
// store, and no package the binary's own (internal/app, cliconf) or the
// test harness, which only tests import.
func TestLayers(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the check lists the packages' imports and needs the go command on PATH: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, module+"...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	under := func(p, prefix string) bool {
		if prefix == "" {
			return true
		}
		return p == prefix || strings.HasPrefix(p, prefix+"/")
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], module)
		if !ok {
			continue
		}
		for _, l := range layers {
			in := false
			for _, p := range l.packages {
				in = in || under(pkg, p)
			}
			if !in || under(pkg, "cmd") || under(pkg, "internal/app") || under(pkg, "internal/cliconf") {
				continue
			}
			checked++
			for _, dep := range fields[1:] {
				d, ok := strings.CutPrefix(dep, module)
				if !ok || d == pkg || under(d, pkg) {
					continue
				}
				for _, f := range l.forbidden {
					allowed := false
					for _, e := range l.except {
						allowed = allowed || d == e
					}
					if under(d, f) && !allowed {
						t.Errorf("%s (%s) imports %s", pkg, l.name, d)
					}
				}
			}
		}
	}
	if checked < 40 {
		t.Errorf("only %d packages checked: the listing is wrong", checked)
	}
}
