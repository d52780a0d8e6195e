// Package planpub publishes salting-plan changes (plans.Change) to a
// compacted Kafka topic, the one a Flink job reads its plans from.
//
// # Messages
//
// One message per change, keyed by plans.Key(job, task) ("job_id/
// task_name"). A new or changed plan has the plan's JSON (plans.Plan) as
// value and the headers skewlens-plan-version (the version, decimal) and
// skewlens-plan-source ("engine" or "override"); a retirement is a
// tombstone: a nil value and the header skewlens-plan-retired: true. The
// topic is compacted (cleanup.policy=compact), so a reader that starts
// from the beginning sees the latest plan of each task, and no message
// for tasks whose plan was retired once compaction has removed the
// tombstone (after the topic's delete.retention.ms). Partitions are
// chosen with Kafka's Java default partitioner (murmur2 of the key), so
// that a Java producer writing the same keys lands on the same partition
// and compaction keeps one value per key.
//
// Lineage messages (lineage.go), keyed LineageKey(job name, task)
// ("/lineage/<job_name>/<task_name>", a form no plan's key takes), carry
// the plan of the task of each job name's newest run (plans.NewestRuns:
// plans.Lineage's rule), or a tombstone when the name has none: a Flink job
// resubmitted under a new job id applies it until skewlens has carried the
// plan over to the new id. A PlanObserver publishes them after the changes
// that make them, to the Publisher among its publishers (a Tee holding
// one), and only for the jobs it owns; Load skips them (they are derived,
// not state) but notes what they carry, so that a resumed PlanObserver
// tombstones the stale ones of its jobs.
//
// # Wiring
//
// PlanObserver is a stage of the pipeline (a stream.Observer): the findings of
// each closed window, once stored, feed a plans.Manager, and PlanObserver
// publishes the changes.
// Load reads the topic back after a restart, for plans.Manager.Restore, so
// that versions continue (Restore; StoredPlans reads the plans table
// instead when there is no topic). PlanObserver.Resume does the same at each
// assignment of partitions of the consumer group, for the jobs the
// pipeline restored (those whose partitions it reads now): the plans of
// the others are another instance's. EnsureTopic creates the topic.
// OverridePoller reads the operators' overrides (made through the API,
// possibly by another process) every few seconds and hands a changed
// set, compared by override identity and time, to the PlanObserver; its Run
// blocks until its done channel closes or its context ends, and a failed
// read is simply tried again at the next tick.
//
// # Blocking and safety
//
// A Publisher is safe for concurrent use; Publish calls are serialised so
// that the changes of one call reach the topic in order. Publish blocks
// until the broker acknowledged every message of the call (all in-sync
// replicas) or the one attempt failed: Publish does not retry, its callers
// do (the stream runner retries the write a PlanObserver publishes from,
// with no bound; the override poller tries again at its next tick), so one
// layer retries a publish. A PlanObserver resends all the changes it keeps,
// so every key's last message is its last change; a message may be written
// twice, which compaction makes harmless. EnsureTopic (at start-up) and
// Load (at start-up through Restore, and at each assignment of partitions
// through PlanObserver.Resume and StoredPlans) retry retryable errors
// (broker restarts, a topic whose metadata has not propagated yet,
// timeouts) themselves with retry.Do, as Config.Retry says. Every blocking
// call returns promptly when its context ends.
//
// Publish holds no queue of its own: the caller's slice is the batch. A
// PlanObserver keeps the changes it could not publish, in order, and
// publishes them with the next ones: a change replaces its task's last
// pending change only when both carry the same plan version (a plan
// republished unchanged); a new version or a retirement is queued after it
// (see PlanObserver). Metric skewlens_planpub_pending_changes counts them.
// Load blocks until it has read the topic to the end it had when called.
//
// Errors that retrying cannot fix are marked permanent (retry.IsPermanent
// reports them): a change that cannot be encoded or is larger than
// Config.MaxMessageBytes, a topic that exists but is not compacted,
// authorization or configuration errors, a closed Publisher. Other errors
// may succeed when the caller tries again.
//
// # Metrics
//
// Registered on the injected prometheus.Registerer by New and
// unregistered by Close: plans, tombstones and lineage messages published, failures by
// class (retryable, fatal: permanent, canceled), retries, and the duration of
// successful Publish calls. NewPlanObserver adds the pending changes and the
// Manager's statistics (skewlens_plans_*: plans served, tasks, findings
// and keys left out), unregistered by PlanObserver.Close.
package planpub
