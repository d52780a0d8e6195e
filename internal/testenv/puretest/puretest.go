package puretest

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

// impureImports are the standard packages a pure package must not
// import, by path or path prefix ("os" also bans "os/exec"), and why.
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
	"sync":          "concurrency belongs to the caller",
	"syscall":       "I/O",
	"unsafe":        "not needed by pure code",
	"internal/poll": "I/O",
}

// clockFuncs are the functions of package time that read or wait on the
// clock; time's types and pure conversions (time.UnixMilli) are fine.
var clockFuncs = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "Tick": true, "NewTimer": true, "NewTicker": true,
}

// Allowed lists the imports a pure package may have beyond the pure part
// of the standard library, by full path: packages from outside the
// standard library (each pure itself) and exceptions to the banned
// standard ones (net/url, which only escapes strings).
type Allowed map[string]bool

// Impurities reports what in f breaks purity: impure imports, imports
// from outside the standard library that allowed does not list, clock
// reads, goroutines and channel waits.
func Impurities(fset *token.FileSet, f *ast.File, allowed Allowed) []string {
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
		if allowed[path] {
			continue
		}
		if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
			at(imp, "imports %s: only the pure packages listed may be imported from outside the standard library", path)
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

// Check reports as errors of t every impurity in the non-test files of
// each folder in dirs (relative to the test's package), leaving out
// files of package main (generators). It fails t when a folder has fewer
// than minFiles such files: the check would have looked at too little.
func Check(t testing.TB, allowed Allowed, minFiles int, dirs ...string) {
	t.Helper()
	for _, dir := range dirs {
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
			for _, p := range Impurities(fset, f, allowed) {
				t.Error(p)
			}
		}
		if checked < minFiles {
			t.Fatalf("%s: checked %d files; the package has more", dir, checked)
		}
	}
}
