package io.github.skewlens.flink.reporter;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.Test;

import io.github.skewlens.flink.kafka.LogCapture;
import io.github.skewlens.flink.kafka.TopicReader;
import io.github.skewlens.flink.testing.KafkaBroker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The reporter in a real Flink MiniCluster, configured as a user would
 * (metrics.reporter.skewlens.*), against the real broker.
 */
class SkewlensReporterJobTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final String KEYED_TASK = "Count per key -> discard: Writer";
    static final String SOURCE_TASK = "Source: numbers -> Parse Event";
    static final List<String> WANT = List.of(
            "taskmanager.job.task.busyTimeMsPerSecond", "taskmanager.job.task.backPressuredTimeMsPerSecond",
            "taskmanager.job.task.idleTimeMsPerSecond", "taskmanager.job.task.accumulateBusyTimeMs",
            "taskmanager.job.task.accumulateIdleTimeMs", "taskmanager.job.task.accumulateBackPressuredTimeMs",
            "taskmanager.job.task.numRecordsIn", "taskmanager.job.task.numRecordsOut",
            "taskmanager.job.task.numRecordsInPerSecond", "taskmanager.job.task.numRecordsOutPerSecond",
            "taskmanager.job.task.Shuffle.Netty.Input.Buffers.inPoolUsage",
            "taskmanager.job.task.Shuffle.Netty.Output.Buffers.outPoolUsage",
            "skewlens.reporter.sentLines", "skewlens.reporter.droppedLines");

    /** Sleeps per record so that the job runs a few reporting intervals and is busy. */
    static final class SlowCount extends KeyedProcessFunction<Long, Long, Long> {
        @Override
        public void processElement(Long v, Context ctx, Collector<Long> out) throws Exception {
            if (v % 2 == 0) {
                Thread.sleep(1);
            }
            out.collect(v);
        }
    }

    static JobExecutionResult runJob(Map<String, String> reporter, long records) throws Exception {
        Map<String, String> conf = new HashMap<>();
        conf.put("metrics.reporter.skewlens.factory.class", SkewlensReporterFactory.class.getName());
        conf.put("metrics.reporter.skewlens.interval", "1 s");
        reporter.forEach((k, v) -> conf.put("metrics.reporter.skewlens." + k, v));
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(2, Configuration.fromMap(conf));
        env.fromSequence(1, records).name("numbers")
                .map(v -> {
                    // Slow too, so the source task lives for a few reports
                    // (else it fills the network buffers and finishes at once).
                    if (v % 2 == 0) {
                        Thread.sleep(1);
                    }
                    return v;
                }).name("Parse Event")
                .keyBy(v -> v % 16)
                .process(new SlowCount()).name("Count per key")
                .sinkTo(new DiscardingSink<>()).name("discard");
        return env.execute("skewlens reporter job");
    }

    @Test
    void reportsTaskAndJobMetricsOfARunningJob() throws Exception {
        String topic = "reporter-job-" + UUID.randomUUID();
        KafkaBroker.createTopic(topic, 2, Map.of());
        long t0 = System.nanoTime();
        JobExecutionResult res = runJob(Map.of("bootstrap.servers", KafkaBroker.bootstrap(), "topic", topic), 12000);
        System.err.printf("job: %.1f s (net runtime %d ms)%n", (System.nanoTime() - t0) / 1e9, res.getNetRuntime());
        String jobId = res.getJobID().toString();

        List<TopicReader.KeyedLine> lines;
        try (TopicReader r = new TopicReader(topic)) {
            lines = r.readUntil(l -> has(l, "taskmanager.job.task.busyTimeMsPerSecond", KEYED_TASK, 2)
                    && has(l, "taskmanager.job.task.accumulateBusyTimeMs", KEYED_TASK, 2)
                    && has(l, "taskmanager.job.task.numRecordsIn", KEYED_TASK, 2)
                    && has(l, "taskmanager.job.task.busyTimeMsPerSecond", SOURCE_TASK, 2)
                    && WANT.stream().allMatch(w -> l.stream().anyMatch(x -> x.line().contains("\"name\":\"" + w + "\""))),
                    30_000);
        }
        System.err.printf("job and read: %.1f s%n", (System.nanoTime() - t0) / 1e9);
        Path sample = Paths.get("target", "skewlens-reporter-sample.jsonl");
        Files.createDirectories(sample.getParent());
        Files.write(sample, lines.stream().map(TopicReader.KeyedLine::line).toList());

        Set<String> names = new HashSet<>();
        Set<String> tasks = new HashSet<>();
        long maxRecordsIn = 0;
        for (TopicReader.KeyedLine l : lines) {
            JsonNode n = JSON.readTree(l.line());
            String name = n.get("name").asText();
            names.add(name);
            JsonNode tags = n.get("tags");
            if (name.startsWith("skewlens.reporter.")) {
                assertNotNull(tags.get("host"), l.line());
                continue;
            }
            assertEquals(jobId, tags.get("job_id").asText(), l.line());
            assertEquals("skewlens reporter job", l.key(), "record keyed by job_name: " + l.line());
            assertEquals("skewlens reporter job", tags.get("job_name").asText());
            assertFalse(name.contains(".operator."), "operator-level metric reported: " + name);
            if (name.startsWith("taskmanager.job.task.")) {
                for (String t : List.of("host", "tm_id", "task_id", "task_name", "task_attempt_id", "task_attempt_num",
                        "subtask_index")) {
                    assertNotNull(tags.get(t), t + " missing: " + l.line());
                }
                assertTrue(tags.get("task_id").asText().matches("[0-9a-f]{32}"), l.line());
                tasks.add(tags.get("task_name").asText());
                if (name.equals("taskmanager.job.task.numRecordsIn") && tags.get("task_name").asText().equals(KEYED_TASK)) {
                    maxRecordsIn = Math.max(maxRecordsIn, n.get("value").asLong());
                }
            }
            if (name.endsWith("PerSecond") && name.contains("numRecords")) {
                assertTrue(n.get("value").has("count") && n.get("value").has("rate"), "meter shape: " + l.line());
            }
        }
        assertTrue(tasks.contains(KEYED_TASK), "tasks: " + tasks);
        assertTrue(tasks.contains(SOURCE_TASK), "tasks: " + tasks);
        assertTrue(maxRecordsIn > 0, "numRecordsIn never > 0");
        Set<String> want = new HashSet<>(WANT);
        want.removeAll(names);
        assertTrue(want.isEmpty(), "missing " + want + " in " + names);
        Set<String> unexpected = new HashSet<>(names);
        unexpected.removeIf(n -> n.startsWith("skewlens.reporter.") || SkewlensReporter.DEFAULT_METRICS.contains(n));
        assertTrue(unexpected.isEmpty(), "not in the default set: " + unexpected);
    }

    private static boolean has(List<TopicReader.KeyedLine> lines, String name, String task, int subtasks) {
        Set<String> seen = new HashSet<>();
        String n = "\"name\":\"" + name + "\"";
        String t = "\"task_name\":\"" + task + "\"";
        for (TopicReader.KeyedLine l : lines) {
            if (l.line().contains(n) && l.line().contains(t)) {
                int i = l.line().indexOf("\"subtask_index\":\"");
                seen.add(l.line().substring(i, l.line().indexOf('"', i + 17)));
            }
        }
        return seen.size() >= subtasks;
    }

    @Test
    void unreachableBrokerDoesNotDisturbTheJob() throws Exception {
        try (LogCapture log = LogCapture.open()) {
            long t = System.nanoTime();
            JobExecutionResult res = runJob(Map.of("bootstrap.servers", "127.0.0.1:1", "topic", "nowhere",
                    "queue.size", "10", "producer.max.block.ms", "200"), 3000);
            double secs = (System.nanoTime() - t) / 1e9;
            assertNotNull(res.getJobID());
            assertTrue(secs < 30, "job took " + secs + " s");
            assertTrue(log.await(l -> l.startsWith("WARN") && l.contains("127.0.0.1:1")
                    && (l.contains("dropped") || l.contains("failed")), 10_000), "no warning: " + log.lines());
            List<String> errors = new ArrayList<>(log.lines());
            errors.removeIf(l -> !l.startsWith("ERROR"));
            assertTrue(errors.isEmpty(), "errors: " + errors);
        }
    }
}
