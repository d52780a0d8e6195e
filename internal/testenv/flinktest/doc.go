// Package flinktest gives integration tests real Flink jobs, two ways:
//
//   - the test code of deploy/flink (the scenario jobs of
//     io.github.skewlens.flink.scenario) run as plain `java` processes,
//     each a Flink MiniCluster (Classpath, StartScenario);
//   - a standalone session cluster as production runs one (StartCluster):
//     a JobManager and TaskManagers, each a JVM of its own, started from
//     Maven Central's jars (deploy/flink/cluster's pom: there is no Flink
//     distribution to download) with a conf/config.yaml and a plugins/
//     directory, on Flink 2 (Flink2) or the 1.20 LTS (Flink1). Jars builds
//     the reporter plugin and the example job jar (deploy/flink/example)
//     as a user would, and Cluster.Submit runs the job through the REST
//     API (/jars/upload, /jars/:id/run). An operator's moves are there
//     too: ClusterJob.StopWithSavepoint (/jobs/:id/stop), Cluster.Start
//     with a RunRequest (savepointPath, flinkConfiguration) to resubmit,
//     Cluster.Vertices to check the parallelism, Cluster.JSON for the
//     rest (the adaptive scheduler's resource requirements). A host's
//     failure too: Cluster.KillTaskManager (SIGKILL of one TaskManager)
//     and Cluster.AddTaskManager (one more, e.g. its replacement).
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
// Java 17+ and Maven must be installed. Under go test -short, Classpath,
// StartScenario, StartCluster and Jars skip the test; otherwise nothing here skips: a build or
// start failure fails the test with the tail of the output.
//
// Classpath, StartScenario, StartCluster and Jars block and are safe for
// concurrent use; a Cluster's methods block on its REST API. The cluster's
// processes stop when the test ends (TaskManagers first) and die with the
// test process (Pdeathsig). The package keeps the build results of the
// test process (the module, the jars, each version's classpath) in
// guarded values, as each is built once per process.
package flinktest
