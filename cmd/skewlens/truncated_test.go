package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestAnalyzeTruncatedGzip: analyze on a gzip file cut short prints a
// summary that counts what was read (before: "0 key samples, 0 metrics"
// under 50 findings), says the input ended early, and exits 1.
func TestAnalyzeTruncatedGzip(t *testing.T) {
	whole, err := os.ReadFile(filepath.Join("..", "..", "testdata", "incidents", "hot_key.log.gz"))
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "hot_key.log.gz")
	if err := os.WriteFile(cut, whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "", "analyze", "-i", cut, "--output", "json")
	if code != 1 {
		t.Errorf("exit %d, want 1; stderr:\n%s", code, errOut)
	}
	findings := strings.Count(out, "\n")
	if findings == 0 {
		t.Fatalf("no findings from the first half; stderr:\n%s", errOut)
	}
	m := regexp.MustCompile(`(\d+) lines \(([\d.]+) MB\) in \S+: (\d+) key samples, (\d+) metrics`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no summary line in:\n%s", errOut)
	}
	for i, what := range []string{"lines", "", "key samples", "metrics"} {
		if what == "" {
			continue
		}
		if n, _ := strconv.Atoi(m[i+1]); n == 0 {
			t.Errorf("summary counts 0 %s: %s", what, m[0])
		}
	}
	if !strings.Contains(errOut, "input "+cut+" ended early") {
		t.Errorf("summary does not say the input ended early:\n%s", errOut)
	}
}
