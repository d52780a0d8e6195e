// Package flinktest gives integration tests real Flink jobs: the test
// code of deploy/flink (the scenario jobs of io.github.skewlens.flink.scenario)
// run as plain `java` processes, each a Flink MiniCluster.
//
// Classpath builds the Maven module once per test process (mvn
// test-compile and dependency:build-classpath; Maven's own incremental
// build makes a second run cheap, and a file lock serialises test
// processes building at once) and returns the Java classpath of its test
// code. StartScenario starts a ScenarioJob with the given flags, waits for
// its SCENARIO_READY line and returns it; the test's cleanup stops it
// (SIGTERM, then SIGKILL), and the kernel kills it should the test process
// die first (Pdeathsig).
//
// Java 17+ and Maven must be installed. Under go test -short, Classpath
// and StartScenario skip the test; otherwise nothing here skips: a build or
// start failure fails the test with the tail of the output.
//
// Classpath and StartScenario block and are safe for concurrent use. The
// package keeps the build result of the test process in a
// sync.Once-guarded value, as the module is built once per process.
package flinktest
