package prometheus

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv"
)

const (
	rulesFile = "skewlens-rules.yml"
	testsFile = "skewlens-rules_test.yml"
)

// TestPromtool checks the rules with promtool and runs their unit tests.
func TestPromtool(t *testing.T) {
	testenv.SkipShort(t, "promtool (Debian's prometheus package)")
	dir := testenv.DeployDir("prometheus")
	if out, err := exec.Command("bash", filepath.Join(dir, "install.sh")).CombinedOutput(); err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"check", "rules", rulesFile},
		{"test", "rules", testsFile},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, "promtool", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// registered matches the ways skewlens names its metrics in Go: a full
// name, or the "skewlens" namespace with a subsystem and a name.
var registered = []*regexp.Regexp{
	regexp.MustCompile(`(?:Name:|NewDesc\()\s*"(skewlens_\w+)"`),
	regexp.MustCompile(`Namespace:\s*"skewlens",\s*Subsystem:\s*"(\w+)",\s*Name:\s*"(\w+)"`),
}

// TestRulesNameRegisteredMetrics checks that every skewlens_* metric the
// rules and their tests name is registered by some component (found in
// the Go sources, tests excluded).
func TestRulesNameRegisteredMetrics(t *testing.T) {
	root := testenv.RepoRoot()
	known := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "flink" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range registered[0].FindAllSubmatch(b, -1) {
			known[string(m[1])] = true
		}
		for _, m := range registered[1].FindAllSubmatch(b, -1) {
			known["skewlens_"+string(m[1])+"_"+string(m[2])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Spot checks that the scan finds each way of naming.
	for _, name := range []string{"skewlens_watermark_ms", "skewlens_clickhouse_errors_total", "skewlens_kafka_reader_rebalances_total"} {
		if !known[name] {
			t.Fatalf("the source scan missed %s (found %d names)", name, len(known))
		}
	}
	metric := regexp.MustCompile(`\bskewlens_[a-z0-9_]+\b`)
	for _, file := range []string{rulesFile, testsFile} {
		b, err := os.ReadFile(filepath.Join(testenv.DeployDir("prometheus"), file))
		if err != nil {
			t.Fatal(err)
		}
		names := metric.FindAllString(string(b), -1)
		if len(names) == 0 {
			t.Errorf("%s names no skewlens metric", file)
		}
		for _, name := range names {
			if !known[name] {
				t.Errorf("%s names %s, which no component registers", file, name)
			}
		}
	}
}
