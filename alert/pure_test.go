package alert

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Imports the pure package must not have, by path or path prefix ("os"
// also bans "os/exec"), and why.
var impureImports = map[string]string{
	"bufio":         "I/O",
	"context":       "nothing here blocks or is cancelled",
	"crypto/rand":   "randomness breaks determinism",
	"io":            "I/O",
	"log":           "logging (also log/slog)",
	"math/rand":     "randomness breaks determinism",
	"net":           "network I/O",
	"os":            "I/O",
	"runtime":       "goroutines and the scheduler",
	"sync":          "concurrency belongs to alert/deliver",
	"syscall":       "I/O",
	"unsafe":        "not needed by a state machine",
	"internal/poll": "I/O",
}

// pureImportsAllowed are exceptions to impureImports: net/url only
// escapes strings (the runbook's salting URL).
var pureImportsAllowed = map[string]bool{"net/url": true}

// The module's packages the pure packages may import: the engine, the
// incidents alerts are made from, and knob, which reads the Configs' tags
// (as the engine's); all are pure themselves.
var pureModuleImports = map[string]bool{"github.com/skewlens/skewlens/skew": true, "github.com/skewlens/skewlens/alert/incident": true, "github.com/skewlens/skewlens/internal/knob": true}

// clockFuncs are the functions of package time that read or wait on the
// clock; time's types and pure conversions (time.UnixMilli) are fine.
var clockFuncs = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "Tick": true, "NewTimer": true, "NewTicker": true,
}

// impurities reports what in a file breaks the rules of the package doc
// (# Blocking and safety): impure imports, clock reads, goroutines and
// channel waits.
func impurities(fset *token.FileSet, f *ast.File) []string {
	var out []string
	at := func(n ast.Node, format string, args ...any) {
		out = append(out, fset.Position(n.Pos()).String()+": "+fmt.Sprintf(format, args...))
	}
	timeName := ""
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if path == "time" {
			timeName = "time"
			if imp.Name != nil {
				timeName = imp.Name.Name
			}
		}
		if pureImportsAllowed[path] {
			continue
		}
		if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
			if !pureModuleImports[path] {
				at(imp, "imports %s: only the pure engine may be imported from outside the standard library", path)
			}
			continue
		}
		for banned, why := range impureImports {
			if path == banned || strings.HasPrefix(path, banned+"/") {
				at(imp, "imports %s: %s", path, why)
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			at(n, "starts a goroutine")
		case *ast.SelectStmt:
			at(n, "waits on channels")
		case *ast.SendStmt:
			at(n, "sends on a channel")
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && timeName != "" && x.Name == timeName && clockFuncs[n.Sel.Name] {
				at(n, "reads the clock: time.%s", n.Sel.Name)
			}
		}
		return true
	})
	return out
}

// TestPure checks that packages alert and alert/incident stay pure
// (their doc comments say so): no non-test file imports anything that
// does I/O, logs, keeps metrics or synchronises goroutines, reads the
// clock, or starts or waits on goroutines.
func TestPure(t *testing.T) {
	for _, dir := range []string{".", "incident"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		checked := 0
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			if f.Name.Name == "main" {
				continue
			}
			checked++
			for _, p := range impurities(fset, f) {
				t.Error(p)
			}
		}
		if checked < 5 {
			t.Fatalf("%s: checked %d files; the package has more", dir, checked)
		}
	}
}

// TestImpurities checks the checker: each snippet breaks one rule, and
// the pure one breaks none.
func TestImpurities(t *testing.T) {
	tests := []struct {
		name, src, want string // want: a fragment of the one report; "" for none
	}{
		{"pure", `package p; import ("net/url"; "time"; "github.com/skewlens/skewlens/skew"); var _ = url.PathEscape; var _ = time.UnixMilli(0); var _ skew.Finding`, ""},
		{"os", `package p; import "os"; var _ = os.Args`, "imports os: I/O"},
		{"os/exec", `package p; import "os/exec"; var _ = exec.Command`, "imports os/exec"},
		{"slog", `package p; import "log/slog"; var _ = slog.Info`, "imports log/slog: logging"},
		{"net/http", `package p; import "net/http"; var _ = http.Get`, "imports net/http: network I/O"},
		{"sync", `package p; import "sync"; var _ sync.Mutex`, "imports sync"},
		{"prometheus", `package p; import "github.com/prometheus/client_golang/prometheus"; var _ = prometheus.NewRegistry`, "imports github.com/prometheus/client_golang/prometheus"},
		{"pipeline", `package p; import "github.com/skewlens/skewlens/internal/retry"; var _ = retry.Do`, "imports github.com/skewlens/skewlens/internal/retry"},
		{"clock", `package p; import "time"; var _ = time.Now()`, "reads the clock: time.Now"},
		{"renamed clock", `package p; import clk "time"; var _ = clk.Since`, "reads the clock: time.Since"},
		{"goroutine", `package p; func f() { go f() }`, "starts a goroutine"},
		{"select", `package p; func f(c chan int) { select { case <-c: } }`, "waits on channels"},
		{"send", `package p; func f(c chan int) { c <- 1 }`, "sends on a channel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", tt.src, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			got := impurities(fset, f)
			switch {
			case tt.want == "" && len(got) != 0:
				t.Errorf("reported %q for pure code", got)
			case tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want)):
				t.Errorf("reported %q, want one report containing %q", got, tt.want)
			}
		})
	}
}
