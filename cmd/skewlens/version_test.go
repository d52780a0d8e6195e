package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/internal/testenv"
)

// TestMakeBuildStampsRevision builds skewlens as a user does, `make build`
// in a git clone, where GOFLAGS turns VCS stamping off (as go env -w
// GOFLAGS=-buildvcs=false does on some machines, this one included), and
// checks that `skewlens version` names the clone's commit; a plain go
// build there stamps nothing and says why.
func TestMakeBuildStampsRevision(t *testing.T) {
	testenv.SkipShort(t, "git, make and a build of the binary")
	clone := filepath.Join(t.TempDir(), "skewlens")
	run := func(dir string, env []string, name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	// The committed tree of this checkout, as a clone of it.
	run(testenv.RepoRoot(), nil, "git", "clone", "--quiet", "--no-hardlinks", testenv.RepoRoot(), clone)
	head := run(clone, nil, "git", "rev-parse", "HEAD")
	off := []string{"GOFLAGS=-buildvcs=false"}

	run(clone, off, "make", "--no-print-directory", "build")
	got := run(clone, nil, filepath.Join(clone, "bin", "skewlens"), "version")
	if !strings.Contains(got, " revision "+head+" (") || strings.Contains(got, "unknown") {
		t.Errorf("make build: skewlens version = %q, want revision %s with its time", got, head)
	}

	run(clone, off, "go", "build", "-o", "bin/unstamped", "./cmd/skewlens")
	got = run(clone, nil, filepath.Join(clone, "bin", "unstamped"), "version")
	if !strings.Contains(got, "revision unknown (not stamped: built outside a git clone or with -buildvcs=false; make build stamps it)") {
		t.Errorf("go build with -buildvcs=false: skewlens version = %q, want it to say why the revision is unknown", got)
	}
}
