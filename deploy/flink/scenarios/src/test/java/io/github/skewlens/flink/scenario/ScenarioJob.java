package io.github.skewlens.flink.scenario;

import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.runtime.execution.ExecutionState;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.executiongraph.AccessExecutionVertex;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.JobVertex;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

import io.github.skewlens.flink.reporter.SkewlensReporter;
import io.github.skewlens.flink.salting.PerRecord;
import io.github.skewlens.flink.salting.SaltingConfig;
import io.github.skewlens.flink.salting.TwoPhaseAggregation;
import io.github.skewlens.flink.salting.TwoPhaseConfig;

/**
 * A Flink job with a known problem, run on a MiniCluster in this JVM:
 *
 * <pre>
 *   "Source: gen" (DataGeneratorSource, rate-limited)
 *     -- keyBy(key) --&gt; "KeyedProcess -&gt; enrich" (sleep per record)
 *     -- rebalance --&gt;  "sink: Writer"            (sleep per record)
 * </pre>
 *
 * With --salting-url, the keyed part is skewlens' two-phase aggregation
 * (io.github.skewlens.flink.salting), following the plans that skewlens
 * serve publishes for this job and task:
 *
 * <pre>
 *   "Source: gen -&gt; Salt keys for KeyedProcess -&gt; enrich"
 *     -- keyBy(salted key) --&gt; "KeyedProcess -&gt; enrich" (phase 1: count, sleep per record)
 *     -- keyBy(key) --&gt;        "merge"                  (phase 2)
 *     -- rebalance --&gt;         "sink: Writer"
 * </pre>
 *
 * Every task has --parallelism subtasks (max parallelism --max-parallelism).
 * Costs are sleeps ({@link Cost}), so saturation and back-pressure are real
 * without using the CPU. The scenarios:
 *
 * <ul>
 *   <li>{@code hot_key}: --hot-key carries --hot-share of the records, the
 *       rest are uniform over --keys keys; the keyed subtask that owns the hot
 *       key saturates, the others do not, the source is back-pressured.</li>
 *   <li>{@code slow_sink}: uniform keys; sink subtask --slow-subtask sleeps
 *       --slow-sink-cost-ms per record and saturates with the same input as
 *       its peers (rebalance is round-robin).</li>
 *   <li>{@code under_provisioned}: uniform keys; the source offers every keyed
 *       subtask more than it can do.</li>
 *   <li>{@code modest_hot_key}: a hot key of modest share (--hot-share 0.2,
 *       400 records/s at p=4, 7 ms a record, --sample-rate 0.05): its
 *       subtask saturates with about twice its peers' input while the peers
 *       are about half busy (issue 20's real job).</li>
 *   <li>{@code hot_key_onset}: hot_key, but the hot key starts only --hot-from
 *       (90 s) after the job, once the 60 s busy-time gauges have settled on
 *       the healthy load: the capture shows how fast counters and gauges
 *       see the change.</li>
 *   <li>{@code healthy}: uniform keys, everything well below capacity.</li>
 *   <li>{@code checkpoint_timeout}: as slow_sink, but sink subtask
 *       --slow-subtask slows step by step (--sink-steps) under aligned
 *       checkpoints every 5 s with a 20 s timeout: the barrier waits longer
 *       behind its queue at every step until checkpoints expire; the job goes
 *       on (--tolerable-failed-checkpoints).</li>
 *   <li>{@code checkpoint_recover}: the same rise, stopped before checkpoints
 *       reach the timeout, then back to the first cost.</li>
 * </ul>
 *
 * Reporters (each only when its flag is given): --prometheus-port (Flink's
 * PrometheusReporter, default label filtering), --prometheus-unfiltered-port
 * (a second one with {@code filterLabelValueCharacters: false}),
 * --influx-url (Flink's InfluxdbReporter), --kafka-bootstrap (skewlens' Kafka
 * reporter, topic --metrics-topic, and key sampler in the keyed task, topic
 * --samples-topic, rate --sample-rate).
 *
 * <p>It prints {@code SCENARIO_READY job_id=<id>} on stdout once every subtask
 * is RUNNING, and stops after --duration or on SIGTERM/SIGINT: it cancels the
 * job, writes its truth files and exits 0. It exits 1 if the job fails and 2
 * on bad flags. With --out DIR it writes:
 *
 * <ul>
 *   <li>{@code job.json} when ready: job id, task names and ids, parameters;</li>
 *   <li>{@code routing.jsonl} every 10 s and at the end: one line per key,
 *       {@code {"key":..,"subtask":..,"task_name":..}}, the keyed subtask that
 *       processed it;</li>
 *   <li>{@code truth.json} at the end: job.json plus the hot key's subtask and
 *       the records each subtask processed, and with checkpointing every
 *       checkpoint as Flink's REST API reported it ({@link CheckpointLog});</li>
 *   <li>{@code checkpoints.jsonl} at the end, with checkpointing: Flink's
 *       REST replies about each checkpoint, as they came.</li>
 * </ul>
 */
public final class ScenarioJob {
    static final String SOURCE_NAME = "gen";
    static final String KEYED_NAME = "KeyedProcess";
    static final String ENRICH_NAME = "enrich";
    static final String SINK_NAME = "sink";
    /** The keyed task's name: "KeyedProcess" chained with "enrich" (or phase 1's name, with salting). */
    static final String KEYED_TASK = KEYED_NAME + " -> " + ENRICH_NAME;
    static final String MERGE_NAME = "merge";

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    /** The Kafka reporter's extra metrics in the checkpoint scenarios. */
    static final List<String> CHECKPOINT_METRICS = List.of("jobmanager.job.lastCheckpointSize",
            "jobmanager.job.numberOfCompletedCheckpoints", "jobmanager.job.numberOfInProgressCheckpoints",
            "jobmanager.job.totalNumberOfCheckpoints");

    private ScenarioJob() {}

    public static void main(String[] args) {
        ScenarioOptions o;
        try {
            o = ScenarioOptions.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("ScenarioJob: " + e.getMessage());
            System.exit(2);
            return;
        }
        CountDownLatch stop = new CountDownLatch(1);
        Signals.onTerminate(stop::countDown);
        int rc;
        try {
            rc = run(o, stop);
        } catch (Throwable t) {
            t.printStackTrace();
            rc = 1;
        }
        System.out.flush();
        System.exit(rc);
    }

    /** Runs the scenario until --duration passes or {@code stop} opens; returns the exit code. */
    public static int run(ScenarioOptions o, CountDownLatch stop) throws Exception {
        Truth.reset(o.parallelism);
        if (o.scenario == ScenarioOptions.Scenario.HOT_KEY_ONSET) {
            // The job runs a few seconds after this; truth.json has the exact time.
            o.hotFromEpochMs = System.currentTimeMillis() + o.hotFrom.toMillis();
        }
        // The sink's steps count from here too; truth.json has their epoch ms.
        o.sinkStepsFromEpochMs = System.currentTimeMillis();
        Configuration conf = configuration(o);
        JobGraph jobGraph = jobGraph(o, conf);
        JobID jobId = jobGraph.getJobID();
        MiniClusterConfiguration mcc = new MiniClusterConfiguration.Builder()
                .setConfiguration(conf)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(o.parallelism)
                .build();
        long startedAt = System.currentTimeMillis();
        try (MiniCluster cluster = new MiniCluster(mcc)) {
            cluster.start();
            cluster.submitJob(jobGraph).get(60, TimeUnit.SECONDS);
            log("submitted job " + jobId + " (" + o.jobName() + "), scenario " + o.scenario.flag()
                    + ", rate " + Math.round(o.effectiveRate()) + "/s, parallelism " + o.parallelism
                    + ", max parallelism " + o.maxParallelism);
            Map<String, Object> job = jobInfo(o, jobGraph, startedAt);
            long readyAt = awaitRunning(cluster, jobId, Duration.ofMinutes(2), stop);
            if (readyAt < 0) {
                return finish(o, cluster, jobId, job, null, false);
            }
            job.put("ready_at_ms", readyAt);
            writeJson(o, "job.json", job);
            System.out.println("SCENARIO_READY job_id=" + jobId);
            System.out.flush();
            CheckpointLog checkpoints = null;
            if (!o.checkpointInterval().isZero()) {
                Map<String, String> vertices = new LinkedHashMap<>();
                for (JobVertex v : jobGraph.getVerticesSortedTopologicallyFromSources()) {
                    vertices.put(v.getID().toString(), v.getName());
                }
                checkpoints = new CheckpointLog(cluster.getRestAddress().get(30, TimeUnit.SECONDS),
                        jobId.toString(), vertices);
            }

            long deadline = o.duration.isZero() ? Long.MAX_VALUE : System.nanoTime() + o.duration.toNanos();
            long nextRouting = System.nanoTime();
            while (true) {
                long now = System.nanoTime();
                if (now >= deadline) {
                    log("duration " + o.duration + " reached");
                    break;
                }
                if (stop != null && stop.await(Math.min(1000, Math.max(1, (deadline - now) / 1_000_000)),
                        TimeUnit.MILLISECONDS)) {
                    log("stop requested");
                    break;
                }
                if (stop == null) {
                    Thread.sleep(Math.min(1000, Math.max(1, (deadline - now) / 1_000_000)));
                }
                JobStatus st = cluster.getJobStatus(jobId).get(30, TimeUnit.SECONDS);
                if (st.isGloballyTerminalState()) {
                    log("job " + jobId + " ended on its own: " + st);
                    return finish(o, cluster, jobId, job, checkpoints, false);
                }
                if (checkpoints != null) {
                    checkpoints.poll();
                }
                if (System.nanoTime() >= nextRouting) {
                    writeRouting(o);
                    nextRouting = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                }
            }
            return finish(o, cluster, jobId, job, checkpoints, true);
        }
    }

    /**
     * Cancels (if asked), waits for the end, writes the truth (with the
     * checkpoints, when checkpoints is not null); 0 if we cancelled it, 1 if
     * it failed.
     */
    private static int finish(ScenarioOptions o, MiniCluster cluster, JobID jobId, Map<String, Object> job,
            CheckpointLog checkpoints, boolean cancel) throws Exception {
        JobStatus st = cluster.getJobStatus(jobId).get(30, TimeUnit.SECONDS);
        if (cancel && !st.isGloballyTerminalState()) {
            cluster.cancelJob(jobId).get(60, TimeUnit.SECONDS);
        }
        JobResult result;
        try {
            result = cluster.requestJobResult(jobId).get(120, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            log("job " + jobId + " did not end within 120 s of cancel");
            return 1;
        }
        long stoppedAt = System.currentTimeMillis();
        job.put("stopped_at_ms", stoppedAt);
        writeRouting(o);
        if (checkpoints != null) {
            // The checkpoints in flight at the cancel end as FAILED; wait out
            // the REST cache (1 s) so that the last poll sees them so.
            Thread.sleep(1500);
            checkpoints.poll();
            putCheckpoints(job, checkpoints);
            if (o.out != null) {
                Files.createDirectories(o.out);
                Path tmp = o.out.resolve("checkpoints.jsonl.tmp");
                checkpoints.writeRaw(tmp);
                Files.move(tmp, o.out.resolve("checkpoints.jsonl"), StandardCopyOption.REPLACE_EXISTING,
                        StandardCopyOption.ATOMIC_MOVE);
            }
        }
        Map<String, Object> truth = truth(o, job);
        writeJson(o, "truth.json", truth);
        JobStatus end = result.getJobStatus().orElse(JobStatus.FAILED);
        log("job " + jobId + " ended " + end + "; hot key " + o.hotKey + " records per keyed subtask "
                + truth.get("hot_key_records_per_subtask") + "; records per keyed subtask "
                + truth.get("keyed_records") + ", per sink subtask " + truth.get("sink_records"));
        if (result.getSerializedThrowable().isPresent() && end != JobStatus.CANCELED) {
            System.err.println("ScenarioJob: job failed: "
                    + result.getSerializedThrowable().get().getFullStringifiedStackTrace());
            return 1;
        }
        if (!cancel || end != JobStatus.CANCELED) {
            return 1;
        }
        if (o.saltingUrl == null && ((Number) truth.get("keys_on_several_subtasks")).intValue() > 0) {
            System.err.println("ScenarioJob: without salting, keys were seen on several keyed subtasks");
            return 1;
        }
        return 0;
    }

    /**
     * Puts into job: every checkpoint ({@link CheckpointLog#checkpoints}),
     * Flink's counts, and the first one that timed out (null if none did).
     */
    private static void putCheckpoints(Map<String, Object> job, CheckpointLog log) {
        List<Map<String, Object>> all = log.checkpoints();
        Map<String, Object> first = null;
        for (Map<String, Object> c : all) {
            if (Boolean.TRUE.equals(c.get("timed_out"))) {
                first = c;
                break;
            }
        }
        job.put("first_timed_out_checkpoint", first == null ? null : Map.of(
                "id", first.get("id"), "trigger_timestamp", first.get("trigger_timestamp"),
                "failure_timestamp", first.get("failure_timestamp")));
        job.put("checkpoint_counts", log.counts());
        job.put("checkpoints", all);
        StringBuilder b = new StringBuilder();
        for (Map<String, Object> c : all) {
            b.append(String.format(" %s:%s/%.1fs", c.get("id"), c.get("status"),
                    ((Number) c.get("end_to_end_duration")).longValue() / 1000.0));
        }
        log("checkpoints (id:status/duration):" + b);
    }

    /** Waits until every subtask is RUNNING; returns the time, or -1 if the job ended or stop opened. */
    private static long awaitRunning(MiniCluster cluster, JobID jobId, Duration timeout, CountDownLatch stop)
            throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            AccessExecutionGraph g = cluster.getExecutionGraph(jobId).get(30, TimeUnit.SECONDS);
            if (g.getState().isGloballyTerminalState()) {
                log("job " + jobId + " ended before running: " + g.getState());
                return -1;
            }
            boolean all = g.getState() == JobStatus.RUNNING;
            for (AccessExecutionVertex v : g.getAllExecutionVertices()) {
                all &= v.getExecutionState() == ExecutionState.RUNNING;
            }
            if (all) {
                return System.currentTimeMillis();
            }
            if (stop != null && stop.await(100, TimeUnit.MILLISECONDS)) {
                return -1;
            }
            if (stop == null) {
                Thread.sleep(100);
            }
        }
        throw new TimeoutException("job " + jobId + " not running after " + timeout);
    }

    static Configuration configuration(ScenarioOptions o) {
        Configuration c = new Configuration();
        c.setString("parallelism.default", Integer.toString(o.parallelism));
        c.setString("pipeline.max-parallelism", Integer.toString(o.maxParallelism));
        c.setString("taskmanager.numberOfTaskSlots", Integer.toString(o.parallelism));
        // A failure ends the run (and the process, with exit 1) instead of
        // restarting forever under the checkpointing default.
        c.setString("restart-strategy.type", "none");
        // Loopback only; random ports for the REST endpoint and the RPC.
        c.setString("rest.bind-address", "127.0.0.1");
        c.setString("rest.address", "127.0.0.1");
        c.setString("rest.bind-port", "0");
        c.setString("jobmanager.bind-host", "127.0.0.1");
        c.setString("taskmanager.bind-host", "127.0.0.1");
        c.setString("taskmanager.host", "127.0.0.1");
        if (!o.checkpointInterval().isZero()) {
            c.setString("execution.checkpointing.interval", o.checkpointInterval().toMillis() + " ms");
            c.setString("execution.checkpointing.timeout", o.checkpointTimeout().toMillis() + " ms");
            c.setString("execution.checkpointing.tolerable-failed-checkpoints",
                    Integer.toString(o.tolerableFailedCheckpoints()));
            // CheckpointLog reads every checkpoint from the REST history:
            // keep all of them, and let the REST caches refresh each second.
            c.setString("web.checkpoints.history", "1000");
            c.setString("rest.cache.checkpoint-statistics.timeout", "1 s");
            c.setString("rest.cache.execution-graph.timeout", "1 s");
        }
        String interval = o.reportInterval.toMillis() + " ms";
        if (o.prometheusPort >= 0) {
            String p = "metrics.reporter.prom.";
            c.setString(p + "factory.class", "org.apache.flink.metrics.prometheus.PrometheusReporterFactory");
            c.setString(p + "port", Integer.toString(o.prometheusPort));
        }
        if (o.prometheusUnfilteredPort >= 0) {
            String p = "metrics.reporter.promraw.";
            c.setString(p + "factory.class", "org.apache.flink.metrics.prometheus.PrometheusReporterFactory");
            c.setString(p + "port", Integer.toString(o.prometheusUnfilteredPort));
            c.setString(p + "filterLabelValueCharacters", "false");
        }
        if (o.influxUrl != null) {
            java.net.URI u = java.net.URI.create(o.influxUrl);
            String p = "metrics.reporter.influx.";
            c.setString(p + "factory.class", "org.apache.flink.metrics.influxdb.InfluxdbReporterFactory");
            c.setString(p + "scheme", u.getScheme() == null ? "http" : u.getScheme());
            c.setString(p + "host", u.getHost());
            c.setString(p + "port", Integer.toString(u.getPort() > 0 ? u.getPort() : 8086));
            c.setString(p + "db", o.influxDb);
            c.setString(p + "interval", interval);
        }
        if (o.kafkaBootstrap != null) {
            String p = "metrics.reporter.skewlens.";
            c.setString(p + "factory.class", Plugins.REPORTER_FACTORY);
            c.setString(p + "bootstrap.servers", o.kafkaBootstrap);
            c.setString(p + "topic", o.metricsTopic);
            c.setString(p + "interval", interval);
            if (o.scenario.checkpoints()) {
                // The default list and the job's other checkpoint metrics,
                // so that the captures hold every checkpoint count Flink
                // reports, not only those skewlens reads today.
                List<String> m = new ArrayList<>(SkewlensReporter.DEFAULT_METRICS);
                m.addAll(CHECKPOINT_METRICS);
                c.setString(p + "metrics", String.join(",", m));
            }
        }
        return c;
    }

    static JobGraph jobGraph(ScenarioOptions o, Configuration conf) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(conf);
        env.setParallelism(o.parallelism);
        env.setMaxParallelism(o.maxParallelism);
        DataGeneratorSource<Event> source = new DataGeneratorSource<>(new Functions.Generator(o), Long.MAX_VALUE,
                RateLimiterStrategy.perSecond(o.effectiveRate()), TypeInformation.of(Event.class));
        DataStream<Event> events = env.fromSource(source, WatermarkStrategy.noWatermarks(), SOURCE_NAME)
                .uid("gen");
        Functions.TruthHook hook = new Functions.TruthHook(Plugins.keyedHook(o));
        List<ScenarioOptions.Step> steps = o.sinkSteps();
        long[] stepAt = new long[steps.size()];
        double[] stepCost = new double[steps.size()];
        for (int i = 0; i < steps.size(); i++) {
            stepAt[i] = o.sinkStepsFromEpochMs + steps.get(i).at().toMillis();
            stepCost[i] = steps.get(i).costMs();
        }
        Functions.SleepSink<Object> sink = new Functions.SleepSink<>(o.sinkCostMs(), o.slowSinkCostMs,
                o.effectiveSlowSubtask(), stepAt, stepCost);
        if (o.saltingUrl == null) {
            events.keyBy(e -> e.key)
                    .process(new Functions.KeyedCounter(o.keyedCostMs(), hook))
                    .name(KEYED_NAME).uid("keyed-process")
                    .map(new Functions.Enrich()).name(ENRICH_NAME).uid("enrich")
                    .rebalance()
                    .sinkTo(sink.cast()).name(SINK_NAME).uid("sink");
        } else {
            // Two-phase aggregation that follows skewlens' salting plans: phase 1
            // is the keyed task skewlens diagnoses, named as the unsalted
            // job's keyed task so that plans and findings name the same task.
            SaltingConfig sc = SaltingConfig.http(o.saltingUrl, KEYED_TASK, o.parallelism, o.maxParallelism);
            if (o.saltingPollInterval != null) {
                sc.pollInterval = o.saltingPollInterval;
            }
            TwoPhaseConfig tc = TwoPhaseConfig.of(sc);
            tc.perRecord = hook;
            tc.flushInterval = o.saltingFlushInterval;
            tc.mergeName = MERGE_NAME;
            TwoPhaseAggregation.aggregate(events, e -> e.key, new Functions.CountWithCost(o.keyedCostMs()),
                            Types.LONG, Types.LONG, tc)
                    .rebalance()
                    .sinkTo(sink.cast()).name(SINK_NAME).uid("sink");
        }
        StreamGraph sg = env.getStreamGraph();
        sg.setJobName(o.jobName());
        return sg.getJobGraph();
    }

    private static Map<String, Object> jobInfo(ScenarioOptions o, JobGraph g, long startedAt) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("scenario", o.scenario.flag());
        m.put("flink_version", org.apache.flink.runtime.util.EnvironmentInformation.getVersion());
        m.put("job_id", g.getJobID().toString());
        m.put("job_name", o.jobName());
        m.put("started_at_ms", startedAt);
        m.put("started_at", Instant.ofEpochMilli(startedAt).toString());
        List<Map<String, Object>> tasks = new ArrayList<>();
        for (JobVertex v : g.getVerticesSortedTopologicallyFromSources()) {
            Map<String, Object> t = new LinkedHashMap<>();
            t.put("task_name", v.getName());
            t.put("task_id", v.getID().toString());
            t.put("parallelism", v.getParallelism());
            t.put("role", v.getName().startsWith("Source") ? "source"
                    : v.getName().equals(KEYED_TASK) ? "keyed"
                    : v.getName().startsWith(MERGE_NAME) ? "merge" : "sink");
            tasks.add(t);
        }
        m.put("tasks", tasks);
        m.put("parallelism", o.parallelism);
        m.put("max_parallelism", o.maxParallelism);
        m.put("rate_per_s", o.effectiveRate());
        m.put("hot_key", o.scenario.hot() ? o.hotKey : null);
        m.put("hot_share", o.effectiveHotShare());
        // hot_key_onset: when the hot key started (epoch ms); 0: from the start.
        m.put("hot_from_ms", o.hotFromEpochMs);
        m.put("uniform_keys", o.keys);
        m.put("slow_sink_subtask", o.effectiveSlowSubtask() >= 0 ? o.effectiveSlowSubtask() : null);
        m.put("keyed_cost_ms", o.keyedCostMs());
        m.put("sink_cost_ms", o.sinkCostMs());
        m.put("slow_sink_cost_ms", o.effectiveSlowSubtask() >= 0 && o.sinkSteps().isEmpty() ? o.slowSinkCostMs : null);
        // The slow sink subtask's cost from each step's epoch ms on (empty: slow_sink_cost_ms throughout).
        List<Map<String, Object>> steps = new ArrayList<>();
        for (ScenarioOptions.Step s : o.sinkSteps()) {
            Map<String, Object> x = new LinkedHashMap<>();
            x.put("at_ms", o.sinkStepsFromEpochMs + s.at().toMillis());
            x.put("offset_ms", s.at().toMillis());
            x.put("cost_ms", s.costMs());
            steps.add(x);
        }
        m.put("sink_steps_from_ms", o.sinkSteps().isEmpty() ? null : o.sinkStepsFromEpochMs);
        m.put("sink_steps", steps);
        m.put("record_bytes", List.of(o.minRecordBytes, o.maxRecordBytes));
        m.put("report_interval_ms", o.reportInterval.toMillis());
        m.put("checkpoint_interval_ms", o.checkpointInterval().toMillis());
        m.put("checkpoint_timeout_ms", o.checkpointInterval().isZero() ? null : o.checkpointTimeout().toMillis());
        m.put("tolerable_failed_checkpoints", o.checkpointInterval().isZero() ? null : o.tolerableFailedCheckpoints());
        // Flink's defaults, not set by the job: exactly-once, aligned, one at a time, no pause.
        m.put("checkpointing", o.checkpointInterval().isZero() ? null
                : Map.of("mode", "EXACTLY_ONCE", "unaligned", false, "max_concurrent", 1, "min_pause_ms", 0));
        m.put("key_sampler", Plugins.keyedHook(o) != PerRecord.NONE);
        m.put("kafka_reporter", o.kafkaBootstrap != null);
        m.put("sample_rate", o.kafkaBootstrap != null ? o.sampleRate() : null);
        m.put("salting_url", o.saltingUrl);
        return m;
    }

    private static Map<String, Object> truth(ScenarioOptions o, Map<String, Object> job) {
        Map<String, Object> m = new LinkedHashMap<>(job);
        TreeMap<String, TreeMap<Integer, Long>> routing = Truth.routing();
        String hot = o.scenario.hot() ? o.hotKey : null;
        TreeMap<Integer, Long> hotPer = hot == null ? null : routing.get(hot);
        Integer hotSubtask = null;
        if (hotPer != null) {
            hotSubtask = hotPer.entrySet().stream().max(Map.Entry.comparingByValue()).get().getKey();
        }
        // The subtask that processed most of the hot key's records (the only
        // one, without salting); null unless hot_key.
        m.put("hot_key_subtask", hotSubtask);
        m.put("hot_key_records_per_subtask", hotPer);
        // Where Flink's key-group routing sends --hot-key (also for the other
        // scenarios, where it is just one of the uniform keys).
        m.put("hot_key_subtask_computed", KeyGroupRangeAssignment.assignKeyToParallelOperator(
                o.hotKey, o.maxParallelism, o.parallelism));
        m.put("keyed_task_name", Truth.keyedTaskName);
        m.put("sink_task_name", Truth.sinkTaskName);
        m.put("keyed_records", toList(Truth.keyedRecords));
        m.put("sink_records", toList(Truth.sinkRecords));
        Map<Integer, Integer> keysPer = new TreeMap<>();
        int multi = 0;
        for (TreeMap<Integer, Long> per : routing.values()) {
            per.keySet().forEach(s -> keysPer.merge(s, 1, Integer::sum));
            if (per.size() > 1) {
                multi++;
            }
        }
        m.put("distinct_keys", routing.size());
        m.put("distinct_keys_per_keyed_subtask", keysPer);
        // Keys seen on more than one keyed subtask: 0 without salting.
        m.put("keys_on_several_subtasks", multi);
        return m;
    }

    private static List<Long> toList(java.util.concurrent.atomic.AtomicLongArray a) {
        List<Long> l = new ArrayList<>(a.length());
        for (int i = 0; i < a.length(); i++) {
            l.add(a.get(i));
        }
        return l;
    }

    /**
     * routing.jsonl: one line per key and keyed subtask that processed it,
     * {"key":..,"subtask":..,"task_name":..,"records":..} (one line per key
     * without salting; a salted key has one per subtask it was spread over).
     */
    private static void writeRouting(ScenarioOptions o) throws IOException {
        if (o.out == null) {
            return;
        }
        Files.createDirectories(o.out);
        Path tmp = o.out.resolve("routing.jsonl.tmp");
        String task = Truth.keyedTaskName;
        ObjectMapper mapper = new ObjectMapper();
        try (Writer w = Files.newBufferedWriter(tmp, StandardCharsets.UTF_8)) {
            for (Map.Entry<String, TreeMap<Integer, Long>> e : Truth.routing().entrySet()) {
                for (Map.Entry<Integer, Long> s : e.getValue().entrySet()) {
                    Map<String, Object> line = new LinkedHashMap<>();
                    line.put("key", e.getKey());
                    line.put("subtask", s.getKey());
                    line.put("task_name", task);
                    line.put("records", s.getValue());
                    w.write(mapper.writeValueAsString(line));
                    w.write('\n');
                }
            }
        }
        Files.move(tmp, o.out.resolve("routing.jsonl"), StandardCopyOption.REPLACE_EXISTING,
                StandardCopyOption.ATOMIC_MOVE);
    }

    private static void writeJson(ScenarioOptions o, String name, Object v) throws IOException {
        if (o.out == null) {
            return;
        }
        Files.createDirectories(o.out);
        Path tmp = o.out.resolve(name + ".tmp");
        JSON.writeValue(tmp.toFile(), v);
        Files.move(tmp, o.out.resolve(name), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    static void log(String msg) {
        System.err.println(Instant.now() + " ScenarioJob: " + msg);
    }
}
