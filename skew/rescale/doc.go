// Package rescale writes the changes skewlens recommends to a Flink job's
// configuration in the forms Flink users apply them:
//
//   - a rescale (an under_provisioned finding's recommended parallelism):
//     the value of pipeline.jobvertex-parallelism-overrides (vertex id to
//     parallelism, the ids as Flink's REST API shows them), a `flink run
//     -D…` argument, the body of the adaptive scheduler's PUT
//     /jobs/:jobid/resource-requirements, and a FlinkDeployment patch for
//     the Kubernetes operator (Forms);
//   - the Flink autoscaler's exclusion of vertices whose problem is a hot
//     key, not their size (job.autoscaler.vertex.exclude.ids, as a flat
//     key and as a FlinkDeployment patch: Exclusion).
//
// Flink applies the override to a submitted JobGraph only
// (Dispatcher.applyParallelismOverrides): Flink 1.20 submits one, Flink
// 2.x submits a StreamGraph and ignores the override for DataStream jobs
// (FLINK-38770), where the adaptive scheduler's resource requirements
// rescale the running job instead. Forms carries both, and says so.
//
// The engine (package skew) puts the forms into the findings' evidence;
// everything else (the API, the web view, the alerts) shows what the
// finding carries. The package imports the standard library only, so the
// engine can import it and stay pure. It formats and does no I/O; its
// functions are safe for concurrent use.
package rescale
