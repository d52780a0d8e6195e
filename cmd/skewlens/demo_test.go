package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/internal/testenv"
)

// TestDemoScript runs scripts/demo.sh (`make demo`) with this test
// binary as skewlens and checks what it shows: every incident once, and
// for the rotating hot key, hot-key incidents on more than one subtask,
// so the key is seen to move.
func TestDemoScript(t *testing.T) {
	if testing.Short() {
		t.Skip("plays six simulations (about 10 s)")
	}
	script := filepath.Join(testenv.RepoRoot(), "scripts", "demo.sh")
	head, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.SplitN(string(head), "\n", 3)[1], "`make demo`") {
		t.Errorf("%s: the header does not name `make demo`", script)
	}
	cmd := exec.Command("bash", script, os.Args[0])
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), envChild+"=1", "TERM=dumb")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, out)
	}
	sections := map[string][]string{}
	var cur string
	for _, l := range strings.Split(string(out), "\n") {
		if name, ok := strings.CutPrefix(l, "== "); ok {
			cur = name
			continue
		}
		if cur != "" && strings.Contains(l, " UTC ") {
			sections[cur] = append(sections[cur], l)
		}
	}
	if len(sections) < 5 {
		t.Fatalf("incidents of %d scenarios in:\n%s", len(sections), out)
	}
	for name, lines := range sections {
		seen := map[string]bool{}
		for _, l := range lines {
			if seen[l] {
				t.Errorf("%s: line shown twice: %s", name, l)
			}
			seen[l] = true
		}
	}
	hotOn := map[string]bool{}
	sub := regexp.MustCompile(`\bhot_key\s+\S+ \(\w+\)/\S+ #(\d+)`)
	for _, l := range sections["rotating_hot_key"] {
		if m := sub.FindStringSubmatch(l); m != nil {
			hotOn[m[1]] = true
		}
	}
	if len(hotOn) < 2 {
		t.Errorf("rotating_hot_key: hot-key incidents on subtasks %v, want the key seen on two:\n%s", hotOn, strings.Join(sections["rotating_hot_key"], "\n"))
	}
}
