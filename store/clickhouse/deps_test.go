package clickhouse

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoViews checks that the store builds without the views it
// serves: of serve and top it may import only the contracts they declare
// (serve/servestore, top/topstore), never the HTTP server, the web view
// or the terminal view.
func TestImportsNoViews(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the check lists the package's imports and needs the go command on PATH: %v", err)
	}
	const mod = "github.com/skewlens/skewlens/"
	allowed := map[string]bool{mod + "serve/servestore": true, mod + "top/topstore": true}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var contracts int
	for _, p := range strings.Fields(string(out)) {
		view := false
		for _, v := range []string{mod + "serve", mod + "top"} {
			view = view || p == v || strings.HasPrefix(p, v+"/")
		}
		switch {
		case allowed[p]:
			contracts++
		case view:
			t.Errorf("store/clickhouse imports %s (through its dependencies or directly): a store may import only the views' contracts, %s and %s",
				p, mod+"serve/servestore", mod+"top/topstore")
		}
	}
	if contracts != len(allowed) {
		t.Errorf("store/clickhouse imports %d of the views' two contracts; the check lists the wrong package", contracts)
	}
}
