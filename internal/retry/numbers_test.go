package retry

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOnlyPresetsStateNumbers checks that no non-test file of the module
// outside this package states retry numbers: a retry.Policy literal, a
// MinBackoff or MaxBackoff field, or a constant or variable named for a
// backoff, set from a number or a time unit. Components take a preset
// instead.
func TestOnlyPresetsStateNumbers(t *testing.T) {
	forEachModuleFile(t, func(fset *token.FileSet, f *ast.File) {
		for _, p := range retryNumbers(fset, f) {
			t.Error(p)
		}
	})
}

// TestDoIsTheOneRetryLoop checks that no non-test file of the module
// outside this package retries in a loop of its own, with retry.Backoff
// or retry.Sleep: Do is the one retry loop.
func TestDoIsTheOneRetryLoop(t *testing.T) {
	forEachModuleFile(t, func(fset *token.FileSet, f *ast.File) {
		for _, p := range ownLoops(fset, f) {
			t.Error(p)
		}
	})
}

// forEachModuleFile calls check with every non-test Go file of the
// module outside this package.
func forEachModuleFile(t *testing.T, check func(*token.FileSet, *ast.File)) {
	t.Helper()
	root := moduleRoot(t)
	self, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (path == self || name == "testdata" || name == "node_modules" ||
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		check(fset, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked %d files under %s; the module has more", checked, root)
	}
}

// moduleRoot returns the folder of the module's go.mod.
func moduleRoot(t *testing.T) string {
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		} else if !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

var timeUnits = map[string]bool{"Nanosecond": true, "Microsecond": true, "Millisecond": true, "Second": true, "Minute": true, "Hour": true}

// importName returns the name f uses for the package of path, or ""
// when f does not import it.
func importName(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return filepath.Base(path)
		}
	}
	return ""
}

const retryPath = "github.com/skewlens/skewlens/internal/retry"

// ownLoops reports the places in f that use the parts of a retry loop
// that Do does not hide: Backoff and Sleep.
func ownLoops(fset *token.FileSet, f *ast.File) []string {
	retryName := importName(f, retryPath)
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && retryName != "" && (sel.Sel.Name == "Backoff" || sel.Sel.Name == "Sleep") {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == retryName {
				out = append(out, fset.Position(n.Pos()).String()+": retry."+sel.Sel.Name+" makes a retry loop of its own; use retry.Do")
			}
		}
		return true
	})
	return out
}

// retryNumbers reports the places in f that state retry numbers.
func retryNumbers(fset *token.FileSet, f *ast.File) []string {
	retryName, timeName := importName(f, retryPath), importName(f, "time")
	// number reports whether e holds a numeric literal or a time unit.
	number := func(e ast.Expr) bool {
		found := false
		ast.Inspect(e, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				found = found || n.Kind == token.INT || n.Kind == token.FLOAT
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && timeName != "" && x.Name == timeName && timeUnits[n.Sel.Name] {
					found = true
				}
			}
			return !found
		})
		return found
	}
	backoff := func(e ast.Expr) bool {
		var name string
		switch e := e.(type) {
		case *ast.Ident:
			name = e.Name
		case *ast.SelectorExpr:
			name = e.Sel.Name
		}
		return name == "MinBackoff" || name == "MaxBackoff"
	}
	var out []string
	at := func(n ast.Node, what string) {
		out = append(out, fset.Position(n.Pos()).String()+": "+what+" states retry numbers; use a preset of internal/retry")
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if sel, ok := n.Type.(*ast.SelectorExpr); ok && retryName != "" && sel.Sel.Name == "Policy" {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == retryName && number(n) {
					at(n, "a retry.Policy literal")
					return false
				}
			}
		case *ast.KeyValueExpr:
			if backoff(n.Key) && number(n.Value) {
				at(n, "a backoff field")
			}
		case *ast.ValueSpec:
			for i, id := range n.Names {
				if i < len(n.Values) && strings.Contains(strings.ToLower(id.Name), "backoff") && number(n.Values[i]) {
					at(n, "a backoff constant")
				}
			}
		case *ast.AssignStmt:
			for i, lhs := range n.Lhs {
				if i < len(n.Rhs) && backoff(lhs) && number(n.Rhs[i]) {
					at(n, "a backoff field")
				}
			}
		}
		return true
	})
	return out
}

// TestCheckers checks the checkers: retryNumbers on snippets that state
// retry numbers and on ones that do not, ownLoops likewise.
func TestCheckers(t *testing.T) {
	tests := []struct {
		name  string
		check func(*token.FileSet, *ast.File) []string
		src   string
		want  int
	}{
		{"literal", retryNumbers, `package p; import ("time"; "github.com/skewlens/skewlens/internal/retry"); var _ = retry.Policy{MaxRetries: 3, MinBackoff: time.Second}`, 1},
		{"renamed import", retryNumbers, `package p; import r "github.com/skewlens/skewlens/internal/retry"; var _ = r.Policy{MaxRetries: 3}`, 1},
		{"field", retryNumbers, `package p; import "time"; func f(p *P) { p.MaxBackoff = 2 * time.Minute }`, 1},
		{"key", retryNumbers, `package p; var _ = struct{ MinBackoff int }{MinBackoff: 100}`, 1},
		{"constant", retryNumbers, `package p; import "time"; const DefaultMaxBackoff = 5 * time.Second`, 1},
		{"preset", retryNumbers, `package p; import "github.com/skewlens/skewlens/internal/retry"; var _ = retry.Policy{MaxRetries: retry.Unlimited, MinBackoff: retry.Setup().MinBackoff}`, 0},
		{"zero", retryNumbers, `package p; import "github.com/skewlens/skewlens/internal/retry"; var _ = p == (retry.Policy{})`, 0},
		{"backoff", ownLoops, `package p; import "github.com/skewlens/skewlens/internal/retry"; var b = retry.Backoff{}`, 1},
		{"sleep", ownLoops, `package p; import r "github.com/skewlens/skewlens/internal/retry"; var _ = r.Sleep`, 1},
		{"do", ownLoops, `package p; import "github.com/skewlens/skewlens/internal/retry"; var _ = retry.Do`, 0},
		{"another retry package", ownLoops, `package p; import "other/retry"; var _ = retry.Sleep`, 0},
	}
	for _, tt := range tests {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", tt.src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if got := tt.check(fset, f); len(got) != tt.want {
			t.Errorf("%s: reported %q, want %d reports", tt.name, got, tt.want)
		}
	}
}
