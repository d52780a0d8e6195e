package flinktest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skewlens/skewlens/internal/testenv"
)

// The Maven builds of deploy/flink, each once per test process: the
// scenarios module's test classpath (Classpath), the plugin and example
// job jars (Jars), and each Flink version's cluster classpath
// (clusterClasspath). Each runs under the parent module's build lock.

// Version is the version of deploy/flink's modules and the example job.
const Version = "0.1.0"

// HotKeyJob is the entry class of the example job jar (Jars).
const HotKeyJob = "io.github.skewlens.example.HotKeyJob"

// ModuleDir returns the directory of deploy/flink, the parent of its
// Maven modules (common, reporter, library, scenarios).
func ModuleDir() (string, error) {
	d := testenv.DeployDir("flink")
	if _, err := os.Stat(filepath.Join(d, "pom.xml")); err != nil {
		return "", fmt.Errorf("deploy/flink: %w", err)
	}
	return d, nil
}

// build is the scenarios module's build of this test process.
var build struct {
	once sync.Once
	cp   string
	err  error
}

// Classpath builds the test code of deploy/flink's scenarios module and
// the modules it depends on (once per test process) and returns the
// classpath that runs it: the scenario jobs, with the library, the
// reporter and Flink. It fails t when the build fails.
func Classpath(t testing.TB) string {
	t.Helper()
	testenv.SkipShort(t, "Java and Maven to build deploy/flink")
	build.once.Do(func() {
		start := time.Now()
		build.cp, build.err = buildScenarios()
		if build.err == nil {
			fmt.Fprintf(os.Stderr, "flinktest: deploy/flink built in %s\n", time.Since(start).Round(100*time.Millisecond))
		}
	})
	if build.err != nil {
		t.Fatalf("flinktest: %v", build.err)
	}
	return build.cp
}

// buildScenarios compiles the scenarios module's tests and those of the
// modules it depends on (-am): in a build that stops before package,
// Maven resolves the modules to their target/classes and
// target/test-classes, which the classpath file lists.
func buildScenarios() (string, error) {
	dir, err := ModuleDir()
	if err != nil {
		return "", err
	}
	if out, err := underBuildLock(dir, "mvn -B -q -DskipTests test-compile dependency:build-classpath -pl scenarios -am "+
		"-Dmdep.includeScope=test -Dmdep.outputFile=target/test-classpath.txt"); err != nil {
		return "", fmt.Errorf("build deploy/flink: %w\n%s", err, testenv.Tail(string(out), 40))
	}
	mod := filepath.Join(dir, "scenarios")
	deps, err := os.ReadFile(filepath.Join(mod, "target", "test-classpath.txt"))
	if err != nil {
		return "", fmt.Errorf("build deploy/flink: %w", err)
	}
	cp := strings.Join([]string{
		filepath.Join(mod, "target", "test-classes"),
		strings.TrimSpace(string(deps)),
	}, string(os.PathListSeparator))
	return cp, nil
}

// underBuildLock runs a bash script in dir (the script's $1, $2, ... are
// args) holding dir's target/.build.lock: flock serialises the test
// processes (go test runs packages in parallel) that would otherwise
// write, or read while another writes, the modules' target/.
func underBuildLock(dir, script string, args ...string) ([]byte, error) {
	cmd := exec.Command("bash", append([]string{"-c", "set -e\nmkdir -p target\nexec 9>target/.build.lock\nflock 9\n" + script, "bash"}, args...)...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}

var jars struct {
	once sync.Once
	err  error
}

// Jars builds (once per test process) the reporter plugin jar and the
// example job jar as a user would: `mvn install` of deploy/flink (the
// modules, and reporter/target/skewlens-flink-reporter-VERSION-plugin.jar),
// then `mvn clean package` of deploy/flink/example, which depends on the
// installed library (its shaded job jar). It returns copies in t's
// temporary directory, taken under the build lock: another test process
// may package the modules again meanwhile, which rewrites the jars in
// target/.
func Jars(t testing.TB) (plugin, job string) {
	t.Helper()
	testenv.SkipShort(t, "Java and Maven to build the jars")
	dir, err := ModuleDir()
	if err != nil {
		t.Fatalf("flinktest: %v", err)
	}
	jars.once.Do(func() {
		// clean: without it, a second `package` finds the shaded jar of the
		// first newer than the classes, takes it for the thin jar, and
		// shades it again (with whatever changed in the dependencies).
		if b, err := underBuildLock(dir, "mvn -B -q -DskipTests install\ncd example\nmvn -B -q clean package"); err != nil {
			jars.err = fmt.Errorf("build the jars: %w\n%s", err, testenv.Tail(string(b), 40))
		}
	})
	if jars.err != nil {
		t.Fatalf("flinktest: %v", jars.err)
	}
	out := t.TempDir()
	pluginJar := "skewlens-flink-reporter-" + Version + "-plugin.jar"
	jobJar := "skewlens-example-job-" + Version + ".jar"
	if b, err := underBuildLock(dir, `cp reporter/target/"$2" example/target/"$3" "$1"/`, out, pluginJar, jobJar); err != nil {
		t.Fatalf("flinktest: copy the jars: %v\n%s", err, b)
	}
	return filepath.Join(out, pluginJar), filepath.Join(out, jobJar)
}

var cpOnce struct {
	mu  sync.Mutex
	cps map[string]string
}

// clusterClasspath resolves the cluster's jars (deploy/flink/cluster's
// pom, at version) once per version and test process.
func clusterClasspath(t testing.TB, version string) string {
	t.Helper()
	cpOnce.mu.Lock()
	defer cpOnce.mu.Unlock()
	if cp, ok := cpOnce.cps[version]; ok {
		return cp
	}
	dir := filepath.Join(testenv.DeployDir("flink"), "cluster")
	out := "target/classpath-" + version + ".txt"
	if b, err := underBuildLock(dir, `mvn -B -q dependency:build-classpath -Dflink.version="$1" -Dmdep.outputFile="$2"`, version, out); err != nil {
		t.Fatalf("flinktest: resolve the Flink %s cluster's jars: %v\n%s", version, err, testenv.Tail(string(b), 30))
	}
	b, err := os.ReadFile(filepath.Join(dir, out))
	if err != nil {
		t.Fatal(err)
	}
	cp := strings.TrimSpace(string(b))
	if cpOnce.cps == nil {
		cpOnce.cps = map[string]string{}
	}
	cpOnce.cps[version] = cp
	return cp
}
