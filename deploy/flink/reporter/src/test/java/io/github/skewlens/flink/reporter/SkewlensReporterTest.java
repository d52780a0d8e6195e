package io.github.skewlens.flink.reporter;

import java.util.List;
import java.util.Map;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.SimpleCounter;
import org.junit.jupiter.api.Test;

import io.github.skewlens.flink.kafka.LogCapture;
import io.github.skewlens.flink.kafka.TopicReader;
import io.github.skewlens.flink.testing.KafkaBroker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SkewlensReporterTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static MetricConfig config(String... kv) {
        MetricConfig c = new MetricConfig();
        for (int i = 0; i < kv.length; i += 2) {
            c.setProperty(kv[i], kv[i + 1]);
        }
        return c;
    }

    @Test
    void configurationErrorsNameTheirCause() {
        // kafka-clients wraps the real reason ("No LoginModule found for …")
        // in "Failed to construct kafka producer".
        Exception e = new RuntimeException("Failed to construct kafka producer",
                new IllegalStateException("Failed to create new NetworkClient", new SecurityException("No LoginModule found")));
        assertEquals("Failed to construct kafka producer: Failed to create new NetworkClient: No LoginModule found",
                SkewlensReporter.causes(e));
        assertEquals("NullPointerException", SkewlensReporter.causes(new NullPointerException()));
    }

    @Test
    void invalidConfigurationLogsOneErrorAndReportsNothing() {
        for (MetricConfig c : List.of(config(), config("bootstrap.servers", "h:1", "queue.size", "many"),
                config("bootstrap.servers", "h:1", "queue.size", "0"), config("bootstrap.servers", "h:1", "metrics", " , "),
                config("bootstrap.servers", "h:1", "producer.acks", "bogus"))) {
            try (LogCapture log = LogCapture.open()) {
                SkewlensReporter r = new SkewlensReporter();
                r.open(c);
                assertNull(r.sender(), c.toString());
                assertTrue(log.any(l -> l.startsWith("ERROR") && l.contains("invalid configuration")), log.lines().toString());
                r.notifyOfAddedMetric(new SimpleCounter(), "numRecordsIn", FakeGroup.task("taskmanager.job.task", "t", 0));
                assertEquals(0, r.registered());
                r.report();
                r.close();
            }
        }
    }

    @Test
    void configurationIsRead() {
        MetricConfig p = config("bootstrap.servers", "h:1", "topic", "m", "metrics", "a.b, c.*",
                "queue.size", "5", "max.record.bytes", "2048", "producer.acks", "all", "interval", "10 s");
        p.put("producer.linger.ms", 7); // Flink may pass non-strings
        SkewlensReporter.Config c = SkewlensReporter.Config.from(p);
        c.validate();
        assertEquals("h:1", c.sender.bootstrapServers);
        assertEquals("m", c.sender.topic);
        assertEquals(List.of("a.b", "c.*"), c.metrics);
        assertEquals(5, c.sender.maxQueuedLines);
        assertEquals(2048, c.sender.maxRecordBytes);
        assertEquals(Map.of("acks", "all", "linger.ms", "7"), c.sender.producer);
        SkewlensReporter.Config d = SkewlensReporter.Config.from(config("bootstrap.servers", "h:1"));
        assertEquals("flink-metrics", d.sender.topic);
        assertEquals(SkewlensReporter.DEFAULT_METRICS, d.metrics);
    }

    @Test
    void filterReportsTaskLevelNotOperatorLevel() {
        SkewlensReporter.Filter f = new SkewlensReporter.Filter(SkewlensReporter.DEFAULT_METRICS);
        SimpleCounter c = new SimpleCounter();
        assertTrue(f.matches("taskmanager.job.task.numRecordsIn", c));
        assertFalse(f.matches("taskmanager.job.task.operator.numRecordsIn", c));
        assertTrue(f.matches("taskmanager.job.task.Shuffle.Netty.Input.Buffers.inPoolUsage", c));
        assertTrue(f.matches("jobmanager.job.lastCheckpointDuration", c));
        assertFalse(f.matches("taskmanager.Status.JVM.CPU.Load", c));

        SkewlensReporter.Filter all = new SkewlensReporter.Filter(List.of("*"));
        assertTrue(all.matches("taskmanager.Status.JVM.CPU.Load", c));
        assertFalse(all.matches("taskmanager.job.task.operator.latency", MetricLineTest.histogram()));
        SkewlensReporter.Filter named = new SkewlensReporter.Filter(List.of("*", "taskmanager.job.task.operator.*"));
        assertTrue(named.matches("taskmanager.job.task.operator.latency", MetricLineTest.histogram()));
    }

    @Test
    void reportsRegisteredMetricsToKafkaKeyedByJob() throws Exception {
        String topic = "reporter-unit-" + UUID.randomUUID();
        KafkaBroker.createTopic(topic, 2, Map.of());
        SkewlensReporter r = new SkewlensReporter();
        r.open(config("bootstrap.servers", KafkaBroker.bootstrap(), "topic", topic));
        assertNotNull(r.sender());
        FakeGroup task = FakeGroup.task("taskmanager.job.task", "Keyed Aggregation -> Sink: out", 3);
        FakeGroup op = FakeGroup.task("taskmanager.job.task.operator", "Keyed Aggregation -> Sink: out", 3);
        SimpleCounter in = new SimpleCounter();
        in.inc(100);
        Gauge<Double> busy = () -> 800.0;
        Gauge<Double> nan = () -> Double.NaN;
        r.notifyOfAddedMetric(in, "numRecordsIn", task);
        r.notifyOfAddedMetric(new SimpleCounter(), "numRecordsIn", op);
        r.notifyOfAddedMetric(busy, "busyTimeMsPerSecond", task);
        r.notifyOfAddedMetric(nan, "idleTimeMsPerSecond", task);
        r.notifyOfAddedMetric(busy, "somethingElse", task);
        FakeGroup jm = new FakeGroup("jobmanager.job", Map.of("<host>", "jm", "<job_id>", "j1", "<job_name>", "the job"));
        Gauge<Long> cp = () -> 1500L;
        r.notifyOfAddedMetric(cp, "lastCheckpointDuration", jm);
        assertEquals(4, r.registered());
        r.report();
        r.notifyOfRemovedMetric(busy, "busyTimeMsPerSecond", task);
        assertEquals(3, r.registered());
        r.close();

        try (TopicReader tr = new TopicReader(topic)) {
            List<TopicReader.KeyedLine> lines = tr.readUntil(l -> l.size() >= 8, 30_000);
            assertEquals(8, lines.size(), lines.toString());
            int job = 0;
            for (TopicReader.KeyedLine l : lines) {
                JsonNode n = JSON.readTree(l.line());
                String name = n.get("name").asText();
                assertTrue(n.get("timestamp").asLong() > 1_600_000_000_000L);
                if (name.startsWith("skewlens.reporter.")) {
                    // Keyed by the job of the report's lines (its name),
                    // so they share its partition.
                    assertEquals("the job", l.key(), l.line());
                    assertEquals("10.0.0.2", n.get("tags").get("host").asText(), l.line());
                    assertEquals("tm-1", n.get("tags").get("tm_id").asText());
                    continue;
                }
                job++;
                assertEquals("the job", l.key(), "record keyed by job_name: " + l.line());
                assertEquals("j1", n.get("tags").get("job_id").asText());
                switch (name) {
                    case "taskmanager.job.task.numRecordsIn" -> assertEquals(100, n.get("value").asLong());
                    case "taskmanager.job.task.busyTimeMsPerSecond" -> {
                        assertEquals(800, n.get("value").asDouble());
                        assertEquals("Keyed Aggregation -> Sink: out", n.get("tags").get("task_name").asText());
                        assertEquals("3", n.get("tags").get("subtask_index").asText());
                    }
                    case "jobmanager.job.lastCheckpointDuration" -> assertEquals(1500, n.get("value").asLong());
                    default -> throw new AssertionError("unexpected " + l.line());
                }
            }
            assertEquals(3, job);
        }
    }
}
