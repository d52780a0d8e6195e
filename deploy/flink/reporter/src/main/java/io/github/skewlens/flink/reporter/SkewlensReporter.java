package io.github.skewlens.flink.reporter;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.flink.metrics.CharacterFilter;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.LogicalScopeProvider;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.Scheduled;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.github.skewlens.flink.kafka.Json;
import io.github.skewlens.flink.kafka.LineSender;

/**
 * A Flink metric reporter that writes metrics as JSON lines to Kafka, in
 * the shape skewlens decodes (see {@link MetricLine}): by default exactly
 * the task and job metrics skewlens reads, named by the metric group's
 * logical scope ({@code taskmanager.job.task.busyTimeMsPerSecond},
 * {@code jobmanager.job.lastCheckpointDuration}) with every scope variable
 * as a tag. Records are keyed by {@code job_id} and hold many lines.
 *
 * <p><b>Blocking.</b> Nothing here waits on Kafka: {@link #report} formats
 * the lines on Flink's reporter thread and hands them to a shared
 * {@link LineSender}, which holds lines until Kafka acknowledges them
 * (sending again what failed while the broker was away) and, once
 * {@code queue.size} are held, drops new ones (and counts them, and logs
 * once a minute). {@link #close} waits at most 5 s for held lines.
 *
 * <p><b>Thread safety.</b> Flink calls {@link #notifyOfAddedMetric} and
 * {@link #notifyOfRemovedMetric} from task threads while {@link #report}
 * runs on the reporter thread: the registered metrics live in a concurrent
 * map, and {@link #report} is synchronized.
 *
 * <p><b>Bad input.</b> An invalid configuration is logged as one error in
 * {@link #open} and the reporter then reports nothing; it never throws into
 * Flink. (Flink would catch an exception from open() and log "Could not
 * instantiate", with a stack trace; a clear line is kinder.) A metric that
 * throws or has no numeric value is skipped for that report.
 *
 * <p>Its own state is reported as lines too, with {@code host} and
 * {@code tm_id} tags (skewlens ignores them; the JobManager's have no
 * {@code tm_id}; none are written before a metric group has named the host): {@code skewlens.reporter.sentLines},
 * {@code .failedLines}, {@code .droppedLines} (totals of the JVM's sender),
 * {@code .queuedLines} (held, not yet acknowledged) and {@code .reportedMetrics}, keyed by the job id of
 * a job line of the same report (null when there was none), so that they
 * share a partition with that job's metrics.
 */
public final class SkewlensReporter implements MetricReporter, Scheduled {
    private static final Logger LOG = LoggerFactory.getLogger(SkewlensReporter.class);

    /**
     * The metrics skewlens reads (pipeline/decode/names.go, checked both
     * ways by its TestReporterDefaultMetrics), the cumulative
     * busy/back-pressured/idle counters among them. Only task-level scopes:
     * the operator-level numRecordsIn and friends
     * ({@code taskmanager.job.task.operator.*}) would be counted twice.
     */
    public static final List<String> DEFAULT_METRICS = List.of(
            "taskmanager.job.task.Shuffle.Netty.Input.Buffers.inputQueueLength",
            "taskmanager.job.task.Shuffle.Netty.Input.Buffers.inPoolUsage",
            "taskmanager.job.task.Shuffle.Netty.Output.Buffers.outputQueueLength",
            "taskmanager.job.task.Shuffle.Netty.Output.Buffers.outPoolUsage",
            "taskmanager.job.task.Shuffle.Netty.Input.Buffers.inputFloatingBuffersUsage",
            "taskmanager.job.task.Shuffle.Netty.Input.Buffers.inputExclusiveBuffersUsage",
            "taskmanager.job.task.busyTimeMsPerSecond",
            "taskmanager.job.task.backPressuredTimeMsPerSecond",
            "taskmanager.job.task.idleTimeMsPerSecond",
            "taskmanager.job.task.accumulateBusyTimeMs",
            "taskmanager.job.task.accumulateBackPressuredTimeMs",
            "taskmanager.job.task.accumulateIdleTimeMs",
            "taskmanager.job.task.numRecordsIn",
            "taskmanager.job.task.numRecordsInPerSecond",
            "taskmanager.job.task.numRecordsOut",
            "taskmanager.job.task.numRecordsOutPerSecond",
            "taskmanager.job.task.checkpointAlignmentTime",
            "taskmanager.job.task.checkpointStartDelayNanos",
            "jobmanager.job.lastCheckpointDuration",
            "jobmanager.job.numberOfFailedCheckpoints",
            "jobmanager.job.lastCheckpointSize",
            "jobmanager.job.numberOfCompletedCheckpoints");

    /**
     * The reporter's options, read from {@code metrics.reporter.NAME.*}.
     * Each default is stated here once.
     *
     * <ul>
     *   <li>{@code bootstrap.servers}: Kafka's bootstrap servers; required.</li>
     *   <li>{@code topic}: default {@code flink-metrics}.</li>
     *   <li>{@code metrics}: comma-separated full metric names (logical scope,
     *       a dot, the name, as in the line's {@code name}) to report; an
     *       entry ending in {@code *} is a prefix; {@code *} alone is every
     *       metric except histograms, which are reported only when an entry
     *       other than {@code *} names them. Default {@link #DEFAULT_METRICS}.</li>
     *   <li>{@code queue.size}: lines held until Kafka acknowledges them,
     *       also while it is slow or away; default that of
     *       {@link LineSender.Config#maxQueuedLines} (20 000). Overflow
     *       policy: the newest lines are dropped and counted.</li>
     *   <li>{@code max.record.bytes}: upper bound of one Kafka record's value;
     *       default that of {@link LineSender.Config#maxRecordBytes} (256 KiB).</li>
     *   <li>{@code producer.*}: passed to the Kafka producer without the
     *       prefix (for example {@code producer.security.protocol}).</li>
     * </ul>
     */
    public static final class Config {
        /** Where and how lines are sent. */
        public LineSender.Config sender = new LineSender.Config();
        /** What is reported. */
        public List<String> metrics = DEFAULT_METRICS;

        public Config() {
            sender.topic = "flink-metrics";
        }

        /** Reads the options above from Flink's reporter properties; throws IllegalArgumentException naming a bad one. */
        public static Config from(Properties p) {
            Config c = new Config();
            String v = get(p, "bootstrap.servers");
            c.sender.bootstrapServers = v;
            if ((v = get(p, "topic")) != null) {
                c.sender.topic = v.trim();
            }
            if ((v = get(p, "metrics")) != null) {
                List<String> m = new ArrayList<>();
                for (String s : v.split(",")) {
                    if (!s.isBlank()) {
                        m.add(s.trim());
                    }
                }
                c.metrics = m;
            }
            if ((v = get(p, "queue.size")) != null) {
                c.sender.maxQueuedLines = integer("queue.size", v);
            }
            if ((v = get(p, "max.record.bytes")) != null) {
                c.sender.maxRecordBytes = integer("max.record.bytes", v);
            }
            for (Object k : p.keySet()) {
                if (k instanceof String s && s.startsWith("producer.") && s.length() > 9) {
                    c.sender.producer.put(s.substring(9), get(p, s));
                }
            }
            return c;
        }

        private static String get(Properties p, String key) {
            // Flink may hand over values that are not strings (an Integer, a Duration).
            Object v = p.get(key);
            return v == null ? null : String.valueOf(v);
        }

        private static int integer(String key, String v) {
            try {
                return Integer.parseInt(v.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(key + " must be an integer, got \"" + v + "\"");
            }
        }

        /** Checks every option; throws IllegalArgumentException naming the first bad one. */
        public void validate() {
            if (sender == null) {
                throw new IllegalArgumentException("no sender configuration");
            }
            sender.validate();
            if (metrics == null || metrics.isEmpty()) {
                throw new IllegalArgumentException("metrics must name at least one metric (or *)");
            }
        }
    }

    /** Which full metric names are reported; immutable. */
    static final class Filter {
        private final Set<String> exact;
        private final List<String> prefixes = new ArrayList<>();
        private final boolean all;

        Filter(List<String> patterns) {
            Set<String> e = new java.util.HashSet<>();
            boolean a = false;
            for (String p : patterns) {
                if (p.equals("*")) {
                    a = true;
                } else if (p.endsWith("*")) {
                    prefixes.add(p.substring(0, p.length() - 1));
                } else {
                    e.add(p);
                }
            }
            this.exact = Set.copyOf(e);
            this.all = a;
        }

        boolean matches(String name, Metric m) {
            if (exact.contains(name)) {
                return true;
            }
            for (String p : prefixes) {
                if (name.startsWith(p)) {
                    return true;
                }
            }
            return all && !(m instanceof Histogram);
        }
    }

    /** A registered metric: identity of the metric object plus its identifier. */
    private record Key(Metric metric, String id) {
        @Override
        public boolean equals(Object o) {
            return o instanceof Key k && k.metric == metric && k.id.equals(id);
        }

        @Override
        public int hashCode() {
            return System.identityHashCode(metric) * 31 + id.hashCode();
        }
    }

    private final Map<Key, MetricLine> lines = new ConcurrentHashMap<>();
    private volatile Filter filter;
    private volatile LineSender sender;
    private volatile String host;
    private volatile String tmId;
    private volatile boolean warnedScope;
    // Used by report() only (synchronized).
    private final StringBuilder sb = new StringBuilder(1024);

    /** Reads the configuration and starts (or shares) the JVM's sender; never throws. */
    @Override
    public void open(MetricConfig config) {
        try {
            Config c = Config.from(config);
            c.validate();
            filter = new Filter(c.metrics);
            sender = LineSender.acquire(c.sender);
            LOG.info("skewlens reporter: sending {} to Kafka topic {} at {}",
                    c.metrics.equals(DEFAULT_METRICS) ? "the metrics skewlens reads" : c.metrics,
                    c.sender.topic, c.sender.bootstrapServers);
        } catch (RuntimeException e) {
            sender = null;
            LOG.error("skewlens reporter: invalid configuration ({}); it reports nothing. Set "
                    + "metrics.reporter.<name>.bootstrap.servers (and optionally topic, metrics, queue.size, "
                    + "max.record.bytes, producer.*)", causes(e));
        }
    }

    /**
     * The messages of e and its causes, joined: "Failed to construct kafka
     * producer" alone does not say which producer setting was wrong.
     */
    static String causes(Throwable e) {
        StringBuilder sb = new StringBuilder();
        for (Throwable t = e; t != null && sb.length() < 2000; t = t.getCause() == t ? null : t.getCause()) {
            if (sb.length() > 0) {
                sb.append(": ");
            }
            sb.append(t.getMessage() != null ? t.getMessage() : t.getClass().getSimpleName());
        }
        return sb.toString();
    }

    /** Releases the sender, waiting at most 5 s for queued lines. */
    @Override
    public void close() {
        LineSender s = sender;
        sender = null;
        lines.clear();
        LineSender.release(s);
    }

    /** Registers the metric if the filter wants it; called by Flink from any thread; never throws. */
    @Override
    public void notifyOfAddedMetric(Metric metric, String metricName, MetricGroup group) {
        Filter f = filter;
        if (f == null || sender == null) {
            return;
        }
        try {
            Map<String, String> vars = group.getAllVariables();
            if (host == null && vars.get("<host>") != null) {
                host = vars.get("<host>");
            }
            if (tmId == null && vars.get("<tm_id>") != null) {
                tmId = vars.get("<tm_id>");
            }
            String name = fullName(metricName, group);
            if (name == null || !f.matches(name, metric)) {
                return;
            }
            lines.put(new Key(metric, group.getMetricIdentifier(metricName)), new MetricLine(name, vars, metric));
        } catch (RuntimeException e) {
            LOG.debug("skewlens reporter: cannot register {}", metricName, e);
        }
    }

    /** Forgets the metric; called by Flink from any thread; never throws. */
    @Override
    public void notifyOfRemovedMetric(Metric metric, String metricName, MetricGroup group) {
        try {
            lines.remove(new Key(metric, group.getMetricIdentifier(metricName)));
        } catch (RuntimeException e) {
            LOG.debug("skewlens reporter: cannot unregister {}", metricName, e);
        }
    }

    /** The logical scope, a dot and the name; null when the group has no logical scope. */
    private String fullName(String metricName, MetricGroup group) {
        try {
            String scope = LogicalScopeProvider.castFrom(group).getLogicalScope(CharacterFilter.NO_OP_FILTER, '.');
            return scope.isEmpty() ? metricName : scope + "." + metricName;
        } catch (IllegalStateException e) {
            if (!warnedScope) {
                warnedScope = true;
                LOG.warn("skewlens reporter: metric group {} has no logical scope; its metrics are not reported",
                        group.getClass().getName());
            }
            return null;
        }
    }

    /** Writes one line per registered metric and the reporter's own lines; never blocks, never throws. */
    @Override
    public synchronized void report() {
        LineSender s = sender;
        if (s == null) {
            return;
        }
        long ts = System.currentTimeMillis();
        int reported = 0;
        String selfKey = null;
        for (MetricLine l : lines.values()) {
            sb.setLength(0);
            if (l.write(sb, ts)) {
                s.offer(l.key, sb.toString());
                reported++;
                if (l.key != null) {
                    selfKey = l.key;
                }
            }
        }
        if (host == null) {
            // No metric group has told us where we run yet: lines without
            // host could not be told apart, so they wait for the next report.
            return;
        }
        self(s, selfKey, ts, "sentLines", s.sentLines());
        self(s, selfKey, ts, "failedLines", s.failed());
        self(s, selfKey, ts, "droppedLines", s.dropped());
        self(s, selfKey, ts, "queuedLines", s.queued());
        self(s, selfKey, ts, "reportedMetrics", reported);
    }

    /**
     * Offers one of the reporter's own lines, keyed by key: the record key of
     * a job line of the same report, so that they land on a partition that
     * carries that job's metrics, or null when the report had none.
     * skewlens skips these lines, and a partition that received only them
     * would tell it nothing about event time.
     */
    private void self(LineSender s, String key, long ts, String name, long value) {
        sb.setLength(0);
        sb.append("{\"name\":\"skewlens.reporter.").append(name).append("\",\"timestamp\":").append(ts)
                .append(",\"value\":").append(value).append(",\"tags\":{");
        Json.string(sb.append("\"host\":"), host);
        String tm = tmId;
        if (tm != null) {
            Json.string(sb.append(",\"tm_id\":"), tm);
        }
        s.offer(key, sb.append("}}").toString());
    }

    /** For tests: the number of registered metrics. */
    int registered() {
        return lines.size();
    }

    /** For tests: the sender, or null when the configuration was invalid. */
    LineSender sender() {
        return sender;
    }
}
