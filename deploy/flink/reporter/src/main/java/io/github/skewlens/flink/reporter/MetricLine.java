package io.github.skewlens.flink.reporter;

import java.util.Map;
import java.util.TreeMap;

import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.HistogramStatistics;
import org.apache.flink.metrics.Meter;
import org.apache.flink.metrics.Metric;

import io.github.skewlens.flink.kafka.Json;
import io.github.skewlens.flink.kafka.LineSender;

/**
 * One registered metric and the fixed parts of its JSON line, built once
 * when Flink adds the metric, so that a report only writes the timestamp
 * and the value:
 *
 * <pre>
 * {"name":"taskmanager.job.task.busyTimeMsPerSecond","timestamp":1700000000000,"value":12.5,
 *  "tags":{"job_id":"…","task_name":"…","subtask_index":"0",…}}
 * </pre>
 *
 * <p>Values: counters as integers; numeric gauges as numbers (booleans as 1
 * or 0); meters as {@code {"count":..,"rate":..}}; histograms as
 * {@code {"count":..,"min":..,"max":..,"mean":..,"stddev":..,"p50":..,"p75":..,
 * "p95":..,"p98":..,"p99":..,"p999":..}}. A gauge that is NaN, infinite,
 * null, not a number, or throws is skipped for that report, since skewlens
 * would reject the line.
 *
 * <p>Immutable apart from the metric it reads; safe to share between
 * threads. {@link #write} reads the metric on the caller's thread.
 */
final class MetricLine {
    /**
     * The record key of the job the metric belongs to (its {@code job_name}
     * variable, else its {@code job_id}; see {@link LineSender#recordKey}),
     * or null for a metric of no job.
     */
    final String key;
    final Metric metric;
    private final String head;
    private final String tail;

    /**
     * @param name the full name: logical scope, a dot, the metric's name
     * @param variables Flink's scope variables, keys spelled {@code <host>} or bare
     */
    MetricLine(String name, Map<String, String> variables, Metric metric) {
        this.metric = metric;
        // Sorted tags: the same metric always produces the same line shape.
        Map<String, String> tags = new TreeMap<>();
        for (Map.Entry<String, String> e : variables.entrySet()) {
            if (e.getKey() != null && e.getValue() != null) {
                tags.put(bare(e.getKey()), e.getValue());
            }
        }
        this.key = LineSender.recordKey(tags.get("job_name"), tags.get("job_id"));
        StringBuilder sb = new StringBuilder(64 + name.length());
        Json.string(sb.append("{\"name\":"), name).append(",\"timestamp\":");
        this.head = sb.toString();
        sb.setLength(0);
        sb.append(",\"tags\":{");
        boolean first = true;
        for (Map.Entry<String, String> e : tags.entrySet()) {
            if (!first) {
                sb.append(',');
            }
            first = false;
            Json.string(sb, e.getKey()).append(':');
            Json.string(sb, e.getValue());
        }
        this.tail = sb.append("}}").toString();
    }

    /** Strips the angle brackets of Flink's variable keys ({@code <task_id>} → {@code task_id}). */
    static String bare(String key) {
        if (key.length() >= 2 && key.charAt(0) == '<' && key.charAt(key.length() - 1) == '>') {
            return key.substring(1, key.length() - 1);
        }
        return key;
    }

    /**
     * Appends the line for the metric's current value at {@code ts} (epoch
     * ms) to sb and returns true; returns false, leaving sb's length as it
     * was, when the value is skipped. Never throws for a bad metric.
     */
    boolean write(StringBuilder sb, long ts) {
        int start = sb.length();
        try {
            sb.append(head).append(ts).append(",\"value\":");
            if (!value(sb)) {
                sb.setLength(start);
                return false;
            }
            sb.append(tail);
            return true;
        } catch (RuntimeException e) {
            // A gauge's getValue() may throw while its task shuts down.
            sb.setLength(start);
            return false;
        }
    }

    private boolean value(StringBuilder sb) {
        if (metric instanceof Counter c) {
            sb.append(c.getCount());
            return true;
        }
        if (metric instanceof Gauge<?> g) {
            return gaugeValue(sb, g.getValue());
        }
        if (metric instanceof Meter m) {
            sb.append("{\"count\":").append(m.getCount());
            field(sb, "rate", m.getRate());
            sb.append('}');
            return true;
        }
        if (metric instanceof Histogram h) {
            HistogramStatistics s = h.getStatistics();
            sb.append("{\"count\":").append(h.getCount());
            field(sb, "min", s.getMin());
            field(sb, "max", s.getMax());
            field(sb, "mean", s.getMean());
            field(sb, "stddev", s.getStdDev());
            field(sb, "p50", s.getQuantile(0.5));
            field(sb, "p75", s.getQuantile(0.75));
            field(sb, "p95", s.getQuantile(0.95));
            field(sb, "p98", s.getQuantile(0.98));
            field(sb, "p99", s.getQuantile(0.99));
            field(sb, "p999", s.getQuantile(0.999));
            sb.append('}');
            return true;
        }
        return false;
    }

    static boolean gaugeValue(StringBuilder sb, Object v) {
        if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
            sb.append(((Number) v).longValue());
            return true;
        }
        if (v instanceof Number n) {
            double d = n.doubleValue();
            if (!Double.isFinite(d)) {
                return false;
            }
            Json.number(sb, d);
            return true;
        }
        if (v instanceof Boolean b) {
            sb.append(b ? 1 : 0);
            return true;
        }
        return false;
    }

    /** Appends ,"name":v for a finite v; a NaN or infinite field is left out. */
    private static void field(StringBuilder sb, String name, double v) {
        if (Double.isFinite(v)) {
            sb.append(",\"").append(name).append("\":");
            Json.number(sb, v);
        }
    }
}
