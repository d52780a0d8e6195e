// Package flinktest gives integration tests real Flink jobs, two ways:
//
//   - the scenario jobs of deploy/flink's scenarios module
//     (io.github.skewlens.flink.scenario, its test code) run as plain
//     `java` processes, each a Flink MiniCluster (Classpath,
//     StartScenario);
//   - a standalone session cluster as production runs one (StartCluster):
//     a JobManager and TaskManagers, each a JVM of its own, started from
//     Maven Central's jars (deploy/flink/cluster's pom: there is no Flink
//     distribution to download) with a conf/config.yaml and a plugins/
//     directory, on Flink 2 (Flink2) or the 1.20 LTS (Flink1). Jars builds
//     the reporter plugin (deploy/flink's reporter module) and the example
//     job jar (deploy/flink/example, on the installed library module) as a
//     user would, and Cluster.Run runs the job through the REST API
//     (/jars/upload, /jars/:id/run). An operator's moves are there too:
//     Job.StopWithSavepoint (/jobs/:id/stop), Cluster.Start with a
//     RunRequest (savepointPath, flinkConfiguration) to resubmit,
//     Cluster.Vertices to check the parallelism, Cluster.JSON for the rest
//     (the adaptive scheduler's resource requirements). A host's failure
//     too: Cluster.KillTaskManager (SIGKILL of one TaskManager) and
//     Cluster.AddTaskManager (one more, e.g. its replacement). RunLocal
//     runs a job jar from main(), as local mode does.
//
// Both kinds of job are a Job: its accessors (JobID, StartedAt, Done,
// Output, Tail, Stop) serve a ScenarioJob process and a cluster's job
// alike.
//
// The files: build.go (the Maven builds: Classpath, Jars, the cluster's
// classpath), scenario.go (StartScenario), cluster.go (the cluster's
// processes), rest.go (its REST client), job.go (Job, and running one on
// a cluster), local.go (RunLocal).
//
// Classpath builds the scenarios module and the modules it depends on
// once per test process (mvn test-compile and dependency:build-classpath;
// Maven's own incremental build makes a second run cheap, and a file lock
// serialises test processes building at once) and returns the Java
// classpath of its test code. StartScenario starts a ScenarioJob with the
// given flags, waits for its SCENARIO_READY line and returns it; the
// test's cleanup stops it (SIGTERM, then SIGKILL), and the kernel kills
// it should the test process die first (Pdeathsig).
//
// Java 17+ and Maven must be installed. Under go test -short, Classpath,
// StartScenario, StartCluster, Jars and RunLocal skip the test; otherwise
// nothing here skips: a build or start failure fails the test with the
// tail of the output.
//
// Classpath, StartScenario, StartCluster and Jars block and are safe for
// concurrent use; a Cluster's methods block on its REST API. The cluster's
// processes stop when the test ends (TaskManagers first) and die with the
// test process (Pdeathsig). The package keeps the build results of the
// test process (the modules, the jars, each version's classpath) in
// guarded values, as each is built once per process.
package flinktest
