package io.github.skewlens.flink.sampler;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.Test;

import io.github.skewlens.flink.kafka.LogCapture;
import io.github.skewlens.flink.kafka.TopicReader;
import io.github.skewlens.flink.reporter.SkewlensReporterFactory;
import io.github.skewlens.flink.testing.KafkaBroker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The key sampler in a real MiniCluster job against the real broker. */
class KeySamplerJobTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final AtomicLong SENT = new AtomicLong();
    static final AtomicLong DROPPED = new AtomicLong();

    /** A keyed function that samples its keys, as a user would write it. */
    static final class SampledCount extends KeyedProcessFunction<String, String, String> {
        private final KeySampler.Config config;
        private final int sleepEvery;
        private transient KeySampler sampler;
        private transient long n;

        SampledCount(KeySampler.Config config, int sleepEvery) {
            this.config = config;
            this.sleepEvery = sleepEvery;
        }

        @Override
        public void open(OpenContext c) {
            sampler = KeySampler.open(getRuntimeContext(), config);
        }

        @Override
        public void processElement(String v, Context ctx, Collector<String> out) throws Exception {
            sampler.sample(ctx.getCurrentKey());
            if (sleepEvery > 0 && ++n % sleepEvery == 0) {
                Thread.sleep(1);
            }
            out.collect(v);
        }

        @Override
        public void close() {
            SENT.addAndGet(sampler.sent());
            DROPPED.addAndGet(sampler.dropped());
            sampler.close();
        }
    }

    static String key(long v) {
        return "user-" + (v % 997);
    }

    private static StreamExecutionEnvironment env(int parallelism, Map<String, String> conf) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(parallelism,
                Configuration.fromMap(conf));
        env.setMaxParallelism(90);
        return env;
    }

    @Test
    void samplesCarryTheSubtaskFlinkRoutesTheKeyToAndTheReportersTask() throws Exception {
        String samples = "samples-" + UUID.randomUUID();
        String metrics = "sampler-metrics-" + UUID.randomUUID();
        KafkaBroker.createTopic(samples, 2, Map.of());
        KafkaBroker.createTopic(metrics, 1, Map.of());
        Map<String, String> conf = new HashMap<>();
        conf.put("metrics.reporter.skewlens.factory.class", SkewlensReporterFactory.class.getName());
        conf.put("metrics.reporter.skewlens.interval", "1 s");
        conf.put("metrics.reporter.skewlens.bootstrap.servers", KafkaBroker.bootstrap());
        conf.put("metrics.reporter.skewlens.topic", metrics);
        conf.put("metrics.reporter.skewlens.metrics",
                "taskmanager.job.task.busyTimeMsPerSecond,taskmanager.job.task.operator.skewlens.*");
        KeySampler.Config cfg = KeySampler.Config.of(KafkaBroker.bootstrap());
        cfg.sender.topic = samples;
        cfg.sampleRate = 0.2;
        int p = 3;
        long records = 30_000;
        StreamExecutionEnvironment env = env(p, conf);
        env.fromSequence(1, records).name("numbers")
                .map(KeySamplerJobTest::key).name("to key")
                .keyBy(k -> k)
                .process(new SampledCount(cfg, 5)).name("Sampled count")
                .sinkTo(new DiscardingSink<>()).name("discard");
        SENT.set(0);
        DROPPED.set(0);
        JobExecutionResult res = env.execute("sampler job");
        String jobId = res.getJobID().toString();
        assertEquals(0, DROPPED.get());

        // Records per subtask under Flink's own routing.
        long[] perSubtask = new long[p];
        for (long v = 1; v <= records; v++) {
            perSubtask[KeyGroupRangeAssignment.assignKeyToParallelOperator(key(v), 90, p)]++;
        }
        List<TopicReader.KeyedLine> lines;
        try (TopicReader r = new TopicReader(samples)) {
            lines = r.readUntil(l -> l.size() >= SENT.get(), 30_000);
        }
        assertEquals(SENT.get(), lines.size());
        Path out = Paths.get("target", "skewlens-key-samples-sample.jsonl");
        Files.createDirectories(out.getParent());
        Files.write(out, lines.stream().map(TopicReader.KeyedLine::line).toList());

        long[] sampled = new long[p];
        Map<Integer, String> taskIds = new HashMap<>();
        String taskName = null;
        for (TopicReader.KeyedLine l : lines) {
            JsonNode n = JSON.readTree(l.line());
            assertEquals("sampler job", l.key(), "record keyed by job_name: " + l.line());
            assertEquals(jobId, n.get("job_id").asText());
            assertEquals("sampler job", n.get("job_name").asText());
            assertTrue(Math.abs(n.get("ts").asLong() - System.currentTimeMillis()) < 120_000, l.line());
            assertEquals(1, n.get("weight").asInt());
            assertEquals(0.2, n.get("sample_rate").asDouble());
            assertEquals(p, n.get("parallelism").asInt());
            assertEquals(90, n.get("max_parallelism").asInt());
            String k = n.get("key").asText();
            int sub = n.get("subtask_index").asInt();
            assertEquals(KeyGroupRangeAssignment.assignKeyToParallelOperator(k, 90, p), sub, l.line());
            sampled[sub]++;
            taskName = n.get("task_name").asText();
            String prev = taskIds.put(sub, n.get("task_id").asText());
            assertTrue(prev == null || prev.equals(n.get("task_id").asText()));
        }
        assertEquals("Sampled count -> discard: Writer", taskName);
        for (int i = 0; i < p; i++) {
            double want = perSubtask[i] * 0.2;
            double sigma = Math.sqrt(perSubtask[i] * 0.2 * 0.8);
            assertEquals(want, sampled[i], 5 * sigma, "subtask " + i + " sampled " + sampled[i] + " of " + perSubtask[i]);
        }

        // The reporter names the same task and task id for each subtask, and shows the sampler's counters.
        boolean counters = false;
        int matched = 0;
        try (TopicReader r = new TopicReader(metrics)) {
            for (TopicReader.KeyedLine l : r.readUntil(x -> x.size() > 20, 10_000)) {
                JsonNode n = JSON.readTree(l.line());
                JsonNode tags = n.get("tags");
                String name = n.get("name").asText();
                if (name.equals("taskmanager.job.task.operator.skewlens.samplesSent")) {
                    counters = true;
                }
                if (tags.has("task_name") && tags.get("task_name").asText().equals(taskName)) {
                    assertEquals(taskIds.get(tags.get("subtask_index").asInt()), tags.get("task_id").asText(), l.line());
                    matched++;
                }
            }
        }
        assertTrue(matched > 0, "no reporter line of task " + taskName);
        assertTrue(counters, "samplesSent not reported");
    }

    @Test
    void passThroughSamplesEveryRecordAtRateOneInTheChainedTask() throws Exception {
        String samples = "samples-" + UUID.randomUUID();
        KafkaBroker.createTopic(samples, 1, Map.of());
        KeySampler.Config cfg = KeySampler.Config.of(KafkaBroker.bootstrap());
        cfg.sender.topic = samples;
        cfg.sampleRate = 1;
        StreamExecutionEnvironment env = env(2, Map.of());
        SamplingPassThrough.sampleKeys(env.fromSequence(1, 3000).map(v -> (int) (v % 101)).keyBy(v -> v), cfg)
                .reduce(Integer::sum).name("Sum")
                .sinkTo(new DiscardingSink<>()).name("discard");
        env.execute("pass-through job");
        List<TopicReader.KeyedLine> lines;
        try (TopicReader r = new TopicReader(samples)) {
            lines = r.readUntil(l -> l.size() >= 3000, 30_000);
        }
        assertEquals(3000, lines.size());
        for (TopicReader.KeyedLine l : lines) {
            JsonNode n = JSON.readTree(l.line());
            assertEquals("skewlens key sampler -> Sum -> discard: Writer", n.get("task_name").asText());
            // Integer keys: the subtask is Flink's routing of the Integer, not of its string.
            int k = Integer.parseInt(n.get("key").asText());
            assertEquals(KeyGroupRangeAssignment.assignKeyToParallelOperator(k, 90, 2), n.get("subtask_index").asInt());
        }
    }

    @Test
    void unreachableBrokerDoesNotDisturbTheJob() throws Exception {
        KeySampler.Config cfg = KeySampler.Config.of("127.0.0.1:1");
        cfg.sender.topic = "nowhere-samples";
        cfg.sender.maxQueuedLines = 10;
        cfg.sender.producer.put("max.block.ms", "200");
        cfg.sampleRate = 1;
        StreamExecutionEnvironment env = env(2, Map.of());
        env.fromSequence(1, 20_000).map(KeySamplerJobTest::key)
                .keyBy(k -> k)
                .process(new SampledCount(cfg, 0))
                .sinkTo(new DiscardingSink<>());
        SENT.set(0);
        DROPPED.set(0);
        try (LogCapture log = LogCapture.open()) {
            long t = System.nanoTime();
            JobExecutionResult res = env.execute("unreachable sampler job");
            double secs = (System.nanoTime() - t) / 1e9;
            assertNotNull(res.getJobID());
            assertTrue(secs < 20, "job took " + secs + " s");
            assertTrue(DROPPED.get() > 0, "no drops counted");
            assertEquals(20_000, SENT.get() + DROPPED.get());
            assertTrue(log.await(l -> l.startsWith("WARN") && l.contains("nowhere-samples")
                    && (l.contains("dropped") || l.contains("failed")), 10_000), "no warning: " + log.lines());
            List<String> errors = new ArrayList<>(log.lines());
            errors.removeIf(l -> !l.startsWith("ERROR"));
            assertTrue(errors.isEmpty(), "errors: " + errors);
        }
    }
}
