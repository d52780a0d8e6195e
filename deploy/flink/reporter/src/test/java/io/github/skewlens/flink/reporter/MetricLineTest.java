package io.github.skewlens.flink.reporter;

import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.HistogramStatistics;
import org.apache.flink.metrics.Meter;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.SimpleCounter;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MetricLineTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long TS = 1_700_000_000_123L;

    private static String line(String name, Metric m) {
        FakeGroup g = FakeGroup.task("taskmanager.job.task", "Source: in -> Map", 1);
        StringBuilder sb = new StringBuilder();
        assertTrue(new MetricLine(name, g.getAllVariables(), m).write(sb, TS), "skipped");
        return sb.toString();
    }

    private static boolean skipped(Metric m) {
        StringBuilder sb = new StringBuilder("keep");
        boolean wrote = new MetricLine("x", Map.of("<job_id>", "j"), m).write(sb, TS);
        assertEquals(wrote ? sb.toString() : "keep", sb.toString());
        return !wrote;
    }

    @Test
    void gaugeLineHasNameTimestampValueAndBareTags() {
        Gauge<Double> g = () -> 12.5;
        assertEquals("{\"name\":\"taskmanager.job.task.busyTimeMsPerSecond\",\"timestamp\":1700000000123,"
                + "\"value\":12.5,\"tags\":{\"host\":\"10.0.0.2\",\"job_id\":\"j1\",\"job_name\":\"the job\","
                + "\"subtask_index\":\"1\",\"task_attempt_id\":\"a1\",\"task_attempt_num\":\"0\","
                + "\"task_id\":\"t1\",\"task_name\":\"Source: in -> Map\",\"tm_id\":\"tm-1\"}}",
                line("taskmanager.job.task.busyTimeMsPerSecond", g));
    }

    @Test
    void valuesByType() throws Exception {
        SimpleCounter c = new SimpleCounter();
        c.inc(Long.MAX_VALUE - 1);
        assertEquals(Long.MAX_VALUE - 1, JSON.readTree(line("n", c)).get("value").asLong());
        Gauge<Long> lg = () -> 1234567890123L;
        assertEquals("1234567890123", JSON.readTree(line("n", lg)).get("value").toString());
        Gauge<Integer> ig = () -> 7;
        assertEquals("7", JSON.readTree(line("n", ig)).get("value").toString());
        Gauge<Float> fg = () -> 0.25f;
        assertEquals(0.25, JSON.readTree(line("n", fg)).get("value").asDouble());
        Gauge<Double> tiny = () -> 1e-9;
        assertEquals(1e-9, JSON.readTree(line("n", tiny)).get("value").asDouble());
        Gauge<Boolean> bg = () -> true;
        assertEquals("1", JSON.readTree(line("n", bg)).get("value").toString());

        JsonNode meter = JSON.readTree(line("n", meter(42, 3.5))).get("value");
        assertEquals(42, meter.get("count").asLong());
        assertEquals(3.5, meter.get("rate").asDouble());
        JsonNode nanRate = JSON.readTree(line("n", meter(42, Double.NaN))).get("value");
        assertEquals("{\"count\":42}", nanRate.toString());

        JsonNode h = JSON.readTree(line("n", histogram())).get("value");
        assertEquals(10, h.get("count").asLong());
        assertEquals(1, h.get("min").asLong());
        assertEquals(9, h.get("max").asLong());
        assertEquals(5.0, h.get("p50").asDouble());
        assertFalse(h.has("stddev"), "NaN field left out");
    }

    @Test
    void unwritableGaugesAreSkipped() {
        assertTrue(skipped((Gauge<Double>) () -> Double.NaN));
        assertTrue(skipped((Gauge<Double>) () -> Double.POSITIVE_INFINITY));
        assertTrue(skipped((Gauge<Float>) () -> Float.NEGATIVE_INFINITY));
        assertTrue(skipped((Gauge<String>) () -> "RUNNING"));
        assertTrue(skipped((Gauge<Object>) () -> null));
        assertTrue(skipped((Gauge<Double>) () -> {
            throw new IllegalStateException("task closed");
        }));
        assertTrue(skipped(new Metric() {}));
        assertFalse(skipped((Gauge<Double>) () -> 0.0));
    }

    @Test
    void namesAndTagsAreEscaped() throws Exception {
        Map<String, String> vars = Map.of("<task_name>", "Sink: \"es\"\n\\ -> ünïcode", "custom", "v", "<job_id>", "j");
        StringBuilder sb = new StringBuilder();
        Gauge<Integer> g = () -> 1;
        assertTrue(new MetricLine("a.b\"c", vars, g).write(sb, TS));
        JsonNode n = JSON.readTree(sb.toString());
        assertEquals("a.b\"c", n.get("name").asText());
        assertEquals("Sink: \"es\"\n\\ -> ünïcode", n.get("tags").get("task_name").asText());
        assertEquals("v", n.get("tags").get("custom").asText());
        assertEquals(TS, n.get("timestamp").asLong());
        assertEquals(1, sb.toString().split("\n").length, "one line");
    }

    @Test
    void bareStripsOnlyEnclosingBrackets() {
        assertEquals("host", MetricLine.bare("<host>"));
        assertEquals("host", MetricLine.bare("host"));
        assertEquals("<", MetricLine.bare("<"));
        assertEquals("", MetricLine.bare("<>"));
    }

    static Meter meter(long count, double rate) {
        return new Meter() {
            @Override public void markEvent() {}
            @Override public void markEvent(long n) {}
            @Override public double getRate() { return rate; }
            @Override public long getCount() { return count; }
        };
    }

    static Histogram histogram() {
        return new Histogram() {
            @Override public void update(long value) {}
            @Override public long getCount() { return 10; }
            @Override public HistogramStatistics getStatistics() {
                return new HistogramStatistics() {
                    @Override public double getQuantile(double q) { return Math.round(q * 10); }
                    @Override public long[] getValues() { return new long[0]; }
                    @Override public int size() { return 10; }
                    @Override public double getMean() { return 5; }
                    @Override public double getStdDev() { return Double.NaN; }
                    @Override public long getMax() { return 9; }
                    @Override public long getMin() { return 1; }
                };
            }
        };
    }
}
