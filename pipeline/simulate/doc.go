// Package simulate is a deterministic physical model of a small Flink job
// that writes the inputs skewlens reads (Flink metric reports and sampled
// record keys) for named incident scenarios.
//
// It is a model of the job, not a copy of any detection rule: tests use its
// output as incidents the engine must diagnose, so every symptom here is a
// consequence of Flink mechanics, never a value written to satisfy a rule.
//
// # The job
//
//	"Source: kafka" (Ps) --keyBy--> "wideReduce-toNarrow" (P, max parallelism M) --rebalance--> "Sink: es" (Pk)
//
// Subtask i of every task shares slot i (Flink's default slot sharing);
// slots are spread round-robin over TaskManagers with SlotsPerTM slots,
// hosts 10.0.0.2, 10.0.0.3, ... (the JobManager is 10.0.0.1). Ids (job,
// task, attempt, TaskManager) are 32 hex digits drawn from the seed.
//
// # Flow model
//
// Time advances in steps of at most 100 ms (at most 100 per interval). Each
// receiving subtask has a fluid queue: the records buffered in front of it,
// in its input gate (2 exclusive buffers per channel + 8 floating) and in
// its senders' subpartitions (up to 10 buffers per channel, fewer when the
// sender's pool of 2n+8 buffers is shared by several backed-up channels),
// with 32 KiB buffers holding 512-byte records on the keyBy edge and
// 32-byte records on the rebalance edge. Per step:
//
//   - Kafka offers the demand plus any lag; the source reads as much as its
//     capacity allows, unless that would overflow a keyed queue: a source
//     subtask that cannot get a buffer for one channel blocks for all
//     channels, so the whole emission is throttled to what the full queues
//     drain (keyBy coupling). Keys route with keygroup (bit-exact Flink);
//     each keyed subtask receives its share of the key distribution, which
//     fluctuates by ~2.5% (AR(1), 1 s correlation) around the share of the
//     keys it owns.
//   - Rebalance splits every keyed subtask's output evenly over the sinks,
//     so the sink that can take least bounds the keyed task's total output,
//     and that sink's input gate shares its drain among the channels by
//     water-filling (it serves every channel that has data). A keyed
//     subtask whose output would exceed its share blocks. With a stuck sink
//     subtask, the keyed subtasks with the largest input block and fill
//     their queues, which blocks the source; the others then wait for
//     input. Every sink subtask receives the same rate.
//   - Keyed subtasks and sinks process min(capacity, queued, allowed).
//
// Steady states follow (f is the throttle): processed rate of keyed subtask
// i is R*f*s_i. busy = processed/capacity; a subtask blocked on output
// spends the rest back-pressured (2-5% of it idle); everything else is
// idle. A saturated subtask shows 3-15 ms/s idle. busy/idle/backPressured
// average the last 5 s of the interval and satisfy busy = 1000 - idle - bp
// (busy is a Double gauge, the other two Long, as in Flink). Input gauges
// flat-line at the gate's capacity when the queue is full and otherwise
// show the small random queue of a busy server (rho^2/(1-rho), so 0-2 when
// healthy); exclusive buffers fill before floating ones. outPoolUsage is
// the backlog in the sender's subpartitions over its pool: 1.0 when all
// channels are blocked, ~0.5 when one keyBy channel is (the source in
// hot_key is fully back-pressured with half its pool free), ~0.1 healthy.
// Counters are cumulative since Start; meters are Flink MeterViews (rate
// over the last 60 s, counting from 0 at Start, so rates ramp up during
// the first minute and lag changes by up to a minute). Event time is the
// processing time: the lag a bottleneck builds in Kafka is not fed back
// into event time.
//
// # Capacities and scenarios (defaults; K = P*25000 records/s)
//
// A keyed subtask reduces 25000 rec/s; a source subtask reads 2K/Ps; a sink
// subtask writes 1.6K/Pk. Normal keys "user<N>" follow a mild
// Zipf-Mandelbrot law (exponent 1.05, offset max(100, KeySpace/20), a
// random popularity order; the most popular of 100000 keys carries 0.007%),
// so keyed subtasks own shares within a few percent of each other. Figures
// below are the default run after its first minute.
//
//   - healthy: demand 0.25K (50000/s). Busy: source ~125, keyed ~250, sink
//     ~155 ms/s; nothing back-pressured.
//   - hot_key: key "u42" carries HotShare (0.35) of the records; demand
//     1.4*25000/(h+(1-h)/P) (81159/s), so the hot subtask is offered 1.4x
//     its capacity. Hot subtask busy ~990 at 25000/s with a full input gate;
//     peers ~180 busy, idle the rest; source ~145 busy, ~825 back-pressured;
//     sink ~180 busy.
//   - rotating_hot_key: the same with key "u42|<bucket>", the bucket being
//     the event time floored to 5 minutes (epoch ms); the saturated subtask
//     changes with the bucket. With the default Start the two buckets of
//     the default 10 minutes route to keyed subtasks 2 and 1.
//   - slow_sink: demand 0.3K (60000/s); sink subtask SlowSubtask runs at 5%
//     of its capacity (4000/s: blocked in bulk requests, so busy ~990).
//     Every sink subtask receives ~4000/s (peers ~50 busy). Keyed ~80 busy;
//     the ones with the largest input ~880-900 back-pressured, the others
//     partly or not at all (Flink's task-level rating, the worst subtask,
//     is high throughout); source ~40 busy, ~920 back-pressured.
//     Checkpoints take ~27 s (barriers wait behind the stuck sink's full
//     buffers) but complete.
//   - under_provisioned: demand 1.6K (320000/s). Every keyed subtask is
//     ~910-997 busy with a full input gate; rates within a few percent;
//     source ~485 busy, ~500 back-pressured; sink ~600 busy.
//   - checkpoint_timeout: sink subtasks of 500 rec/s, base demand 0.7 of
//     the sink's capacity (1400/s, sink ~700 busy), 3x demand for 90 s (at
//     least 2 intervals) starting at a fifth of the run (Truth.From/To).
//     The burst leaves ~100 s of work queued in each sink's buffers; the
//     sinks stay saturated until it drains (~5 more minutes; the keyed and
//     source tasks are not back-pressured because the queue never fills),
//     and checkpoints triggered meanwhile time out (3 in the default run).
//     A burst shorter than ~45 s could not exceed the 60 s timeout.
//     With Config.Slowdown there is no burst: from Slowdown.At the sink
//     keeps Slowdown.Factor of its capacity every Slowdown.Every,
//     Slowdown.Steps times (with Slowdown.Jitter of noise per interval),
//     and gets it back at Slowdown.RecoverAt if that is set. Once its
//     capacity is below the demand the sink saturates and the backlog in
//     its buffers grows by the difference, so each checkpoint's barrier
//     waits longer behind it (and longer still after every step), until
//     checkpoints time out, or until the backlog, bounded by the buffers
//     (smaller with a smaller keyed parallelism), levels them off below
//     the timeout. Truth.From and To span the slowdown.
//
// Config.Rate overrides the base demand.
//
// # Checkpoints
//
// Aligned checkpoints every 30 s, timeout 60 s (Config.CheckpointInterval
// and CheckpointTimeout), at most one at a time, the next triggered an
// interval after the previous one started or when it ended. The
// barrier enters behind the records queued in front of each keyed subtask
// and passes it once those are processed; a sink subtask receives its last
// barrier once its own queue plus its share of the keyed queues has drained
// and every keyed subtask has forwarded the barrier. Completion adds
// 250-750 ms of snapshotting. checkpointStartDelayNanos (trigger to first
// barrier) and checkpointAlignmentTime (first to last barrier) are set per
// subtask when its barriers arrive and keep their value until the next
// arrival (a timed-out checkpoint leaves them unchanged where its barrier
// never arrived). jobmanager_job_lastCheckpointDuration (ms) is the last
// completed checkpoint, jobmanager_job_numberOfFailedCheckpoints counts
// timeouts; both are Gauges in Flink and written as gauges (influx value=Ni).
// With Config.CheckpointDetail the JobManager also reports
// numberOfCompletedCheckpoints and lastCheckpointSize (48 bytes per key
// the keyed task has seen, up to the key space). Generator.Checkpoints
// lists every checkpoint that ended, with its trigger, duration and
// whether it timed out: the truth a forecast of timeouts is scored
// against (package forecasteval).
//
// # Key samples
//
// The keyed task samples SamplesPerInterval records per interval (at most
// the records it processed), drawn from what each keyed subtask actually
// processed in each step (the hot key's part of a subtask's stream is its
// part of that subtask's arrivals; normal keys by popularity among the keys
// the subtask owns), with ts uniform inside the step. subtask_index is the
// subtask Flink routes the key to. sample_rate = samples / processed
// records, so weight/sample_rate estimates the true count.
//
// # Output
//
// Lines are newline-terminated; every ts lies inside its interval (metrics
// 1-200 ms before the interval end, jittered per TaskManager; within an
// interval metrics come first, then key samples). Key samples are always
// JSON; metrics are JSON, influx line protocol or Prometheus text (with
// timestamp, without # HELP/# TYPE lines; labels without task_attempt_num,
// per the format contract) per Config.MetricFormat. Every subtask reports 15
// metrics per interval; sources report zeros for input buffers and sinks
// for output buffers and numRecordsOut, as Flink does.
//
// # Side tasks and fleets
//
// Config.SideTasks adds a chain of tasks on a side output of the source
// ("Map: audit" ... "Sink: audit-log"): the first takes 20% of what the
// source emits, each passes on 80%, and each has the capacity to stay
// below 600 ms/s busy with the source reading flat out, so they are never
// saturated or back-pressured and never change the truth. Without side
// tasks the output is what it was before they existed (their ids come
// from a stream of their own). Config.NoKeySamples turns the sampler off.
//
// A Fleet (FleetConfig, FleetJobs) is many such jobs side by side: a
// parallelism drawn log-uniformly in [1, 200] per job (operators keep it
// or take less), 3-8 tasks, influx, prometheus or json, key samples for
// about 5% of the tasks, and a few incidents placed on random jobs with
// keyed parallelism >= 4, each with its Truth. Shapes come from the
// fleet's seed job by job; WriteTo streams interval n of every job, then
// interval n+1, holding one job's interval at a time.
//
// # Determinism and concurrency
//
// The same Config gives byte-identical output: ids, noise and samples come
// from math/rand/v2 PCG streams seeded from Config.Seed, and nothing is
// ordered by map iteration. The metric stream does not depend on
// SamplesPerInterval (samples use their own stream). A Generator is not
// safe for concurrent use; separate Generators are independent and may run
// in parallel.
package simulate
