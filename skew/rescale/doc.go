// Package rescale turns an under_provisioned finding into the change a
// Flink user applies, in the forms they apply it: the value of
// pipeline.jobvertex-parallelism-overrides (vertex id to parallelism, the
// ids as Flink's REST API shows them), a `flink run -D…` argument, the
// body of the adaptive scheduler's PUT /jobs/:jobid/resource-requirements,
// and a FlinkDeployment patch for the Kubernetes operator.
//
// Flink applies the override to a submitted JobGraph only
// (Dispatcher.applyParallelismOverrides): Flink 1.20 submits one, Flink
// 2.x submits a StreamGraph and ignores the override for DataStream jobs
// (FLINK-38770), where the adaptive scheduler's resource requirements
// rescale the running job instead. Change carries both.
//
// The package is pure: it formats, it does no I/O. Its functions are safe
// for concurrent use.
package rescale
