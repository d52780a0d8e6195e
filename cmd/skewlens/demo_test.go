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

// TestDemoFleetChecks: demo's fleet flags reach the simulation's check,
// which takes a fleet of --jobs or --subtasks and rejects both at once.
func TestDemoFleetChecks(t *testing.T) {
	clearEnv(t)
	for _, tt := range []struct {
		args []string
		want string // "" accepted
	}{
		{[]string{"--simulate", "fleet", "--jobs", "3"}, ""},
		{[]string{"--simulate", "fleet", "--subtasks", "1000"}, ""},
		{[]string{"--simulate", "fleet"}, "give --jobs or --subtasks"},
		{[]string{"--simulate", "fleet", "--jobs", "3", "--subtasks", "1000"}, "give one of them"},
		{[]string{"--simulate", "hot_key", "--jobs", "3"}, "only with --simulate fleet"},
	} {
		c, err := parseChecked(t, append([]string{"demo"}, tt.args...)...)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("demo %v: %v", tt.args, err)
		case tt.want == "" && c.Demo.Demo.Fleet.Jobs+c.Demo.Demo.Fleet.Subtasks == 0:
			t.Errorf("demo %v: the fleet's size did not reach the simulation: %+v", tt.args, c.Demo.Demo.Fleet)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("demo %v: %v, want %q", tt.args, err, tt.want)
		}
	}
}
