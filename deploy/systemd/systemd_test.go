package systemd

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv"
)

// binaryPath is where the units expect the skewlens binary.
const binaryPath = "/usr/local/bin/skewlens"

// maxExposure is the highest overall exposure `systemd-analyze security`
// may give a unit, in the tenths its --threshold takes: 20 is the 2.0 it
// prints (0 is fully locked down, 10 unprotected; the units score 1.2
// today, a unit without any hardening 9.6).
const maxExposure = "20"

var units = []string{"skewlens-run.service", "skewlens-serve.service"}

// tool runs systemd-analyze with args under a deadline and returns its
// combined output and error.
func tool(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "systemd-analyze", args...).CombinedOutput()
	return string(out), err
}

// setup installs systemd-analyze when needed and builds skewlens into a
// temporary folder, whose path it returns.
func setup(t *testing.T) string {
	t.Helper()
	testenv.SkipShort(t, "systemd-analyze (Debian's systemd) and a skewlens build")
	if out, err := exec.Command("bash", filepath.Join(testenv.DeployDir("systemd"), "install.sh")).CombinedOutput(); err != nil {
		t.Fatalf("install.sh: %v\n%s", err, out)
	}
	bin := filepath.Join(t.TempDir(), "skewlens")
	build := exec.Command("go", "build", "-o", bin, "./cmd/skewlens")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// localCopy writes unit, edited by edit, to a temporary folder with its
// ExecStart pointed at bin, and returns the copy's path.
func localCopy(t *testing.T, unit, bin string, edit func(string) string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.DeployDir("systemd"), unit))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if !strings.Contains(text, "ExecStart="+binaryPath+" ") {
		t.Fatalf("%s: no ExecStart=%s", unit, binaryPath)
	}
	text = strings.ReplaceAll(text, "ExecStart="+binaryPath, "ExecStart="+bin)
	if edit != nil {
		text = edit(text)
	}
	path := filepath.Join(t.TempDir(), unit)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestUnits checks each unit with systemd-analyze: verify must pass
// without a word (it only warns about unknown or bad settings, and exits
// 0 then), and the offline security review must stay at or under
// maxExposure. The edited copies show that each check catches what it is
// there for.
func TestUnits(t *testing.T) {
	bin := setup(t)
	unhardened := regexp.MustCompile(`(?m)^(DynamicUser|Protect\w+|Private\w+|Restrict\w+|SystemCall\w+|CapabilityBoundingSet|NoNewPrivileges|MemoryDenyWriteExecute|LockPersonality|DevicePolicy|RemoveIPC|UMask)=.*$`)
	tests := []struct {
		name       string
		edit       func(string) string
		verifyOK   bool
		securityOK bool
	}{
		{name: "as shipped", verifyOK: true, securityOK: true},
		{name: "a misspelled setting", edit: func(s string) string {
			return strings.Replace(s, "ProtectSystem=strict", "ProtectSytem=strict", 1)
		}, securityOK: true},
		{name: "a bad value", edit: func(s string) string {
			return strings.Replace(s, "Restart=on-failure", "Restart=sometimes", 1)
		}, securityOK: true},
		{name: "no program", edit: func(s string) string {
			return strings.Replace(s, "ExecStart="+bin, "ExecStart="+bin+".missing", 1)
		}, securityOK: true},
		{name: "without hardening", edit: func(s string) string {
			return unhardened.ReplaceAllString(s, "")
		}, verifyOK: true},
	}
	for _, unit := range units {
		for _, tt := range tests {
			t.Run(unit+"/"+tt.name, func(t *testing.T) {
				path := localCopy(t, unit, bin, tt.edit)
				out, err := tool(t, "verify", path)
				if ok := err == nil && strings.TrimSpace(out) == ""; ok != tt.verifyOK {
					t.Errorf("systemd-analyze verify: passed %v, want %v (error %v)\n%s", ok, tt.verifyOK, err, out)
				}
				out, err = tool(t, "security", "--offline=yes", "--threshold="+maxExposure, path)
				if ok := err == nil; ok != tt.securityOK {
					t.Errorf("systemd-analyze security --threshold=%s: passed %v, want %v (error %v)\n%s",
						maxExposure, ok, tt.securityOK, err, lastLines(out, 3))
				}
			})
		}
	}
}

// lastLines returns the last n lines of s: the security review's verdict.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestUnitsHaveTheBasics checks, without systemd, what the units promise
// in their comments: a restart policy, a user of their own, a read-only
// system, and where their configuration comes from.
func TestUnitsHaveTheBasics(t *testing.T) {
	for _, tt := range []struct {
		unit string
		want []string
	}{
		{"skewlens-run.service", []string{"--config /etc/skewlens/skewlens.yaml", "EnvironmentFile=-/etc/skewlens/run.env"}},
		{"skewlens-serve.service", []string{"EnvironmentFile=/etc/skewlens/serve.env", "--token-file %d/tokens.yaml", "LoadCredential=tokens.yaml:/etc/skewlens/tokens.yaml"}},
	} {
		b, err := os.ReadFile(filepath.Join(testenv.DeployDir("systemd"), tt.unit))
		if err != nil {
			t.Fatal(err)
		}
		want := append([]string{"\nRestart=on-failure\n", "\nDynamicUser=yes\n", "\nProtectSystem=strict\n", "\nExecStart=" + binaryPath + " "}, tt.want...)
		for _, w := range want {
			if !bytes.Contains(b, []byte(w)) {
				t.Errorf("%s has no %q", tt.unit, strings.TrimSpace(w))
			}
		}
	}
}
