package flinktest

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/skewlens/skewlens/internal/testenv"
)

// RunLocal runs a job's entry class from main(), as a developer runs a
// job in local mode (Flink starts a MiniCluster in the JVM): classpath
// (the job jar; and the reporter's jar, as a `provided` dependency puts it
// on an IDE's run classpath, for a job that configures the reporter),
// then Flink's jars of version; nothing in plugins/. The process is
// killed when the test ends; it returns the process, whose output is in
// the returned log file.
func RunLocal(t testing.TB, version string, classpath []string, entryClass string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	testenv.SkipShort(t, "a Flink job")
	cp := strings.Join(append(classpath[:len(classpath):len(classpath)], clusterClasspath(t, cmp.Or(version, Flink2))), string(os.PathListSeparator))
	logPath := filepath.Join(t.TempDir(), "local.log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	jvm := append([]string{"-Xmx768m", "-XX:+UseSerialGC"}, javaOpens...)
	cmd := exec.Command("java", append(append(jvm, "-cp", cp, entryClass), args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("flinktest: start %s: %v", entryClass, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	return cmd, logPath
}
