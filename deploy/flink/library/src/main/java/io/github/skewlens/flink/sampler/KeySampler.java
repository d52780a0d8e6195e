package io.github.skewlens.flink.sampler;

import java.io.Serializable;
import java.time.Duration;
import java.util.Map;

import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.SimpleCounter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.github.skewlens.flink.kafka.Json;
import io.github.skewlens.flink.kafka.LineSender;

/**
 * Samples the keys a keyed operator's subtask processes and sends each
 * sample to Kafka as one JSON line (key order as written):
 *
 * <pre>
 * {"ts":1700000000000,"job_id":"…","job_name":"…","task_name":"…","task_id":"…","key":"u42",
 *  "weight":1,"sample_rate":0.01,"parallelism":4,"max_parallelism":128,"subtask_index":2}
 * </pre>
 *
 * <p>{@code ts} is the wall-clock time of the sample (epoch ms), like the
 * metric reporters' timestamps. {@code job_id}, {@code parallelism},
 * {@code max_parallelism} and {@code subtask_index} come from the
 * RuntimeContext; {@code task_id} and {@code task_name} from the operator
 * metric group's variables, so they equal what Flink's metric reporters
 * report for the same subtask. Records are keyed by {@code job_id}.
 *
 * <pre>
 * public void open(OpenContext c) { sampler = KeySampler.open(getRuntimeContext(), config); }
 * public void processElement(Event e, Context ctx, Collector&lt;Out&gt; out) { sampler.sample(ctx.getCurrentKey()); ... }
 * public void close() { sampler.close(); }
 * </pre>
 *
 * <p><b>Keys.</b> Pass the key as the keyed stream's KeySelector returns it
 * ({@code ctx.getCurrentKey()}): skewlens routes a String key with Flink's
 * own key-group assignment. Other keys are written as {@code String.valueOf(key)}
 * (only for sampled records).
 *
 * <p><b>Cost and blocking.</b> The decision is a decrement of a skip
 * counter drawn from a geometric distribution (exactly the configured rate
 * on average, from a per-instance xorshift generator): no allocation, no
 * clock, no lock for a record that is not sampled. A sampled record builds
 * its line and offers it to the JVM's shared {@link LineSender} for this
 * configuration, which never blocks: when its bounded queue is full the
 * sample is dropped and counted (policy: drop the newest).
 *
 * <p><b>Metrics.</b> Counters in the operator's metric group, group
 * {@code skewlens}: {@code samplesSent} (handed to the sender) and
 * {@code samplesDropped} (the sender's queue was full, or the line was longer
 * than the sender's maximum record size). Lines the producer later fails to
 * deliver are counted and logged by the sender.
 *
 * <p><b>Thread safety.</b> One instance per subtask, used by that subtask's
 * thread only; not thread-safe. {@link #close} is idempotent.
 *
 * <p><b>Bad input.</b> {@link #open} never throws: an invalid configuration
 * or a producer that cannot be created is logged as an error and gives a
 * sampler that samples nothing. {@link #sample} never throws.
 */
public final class KeySampler implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(KeySampler.class);

    /**
     * What to sample and where to send it. Each default is stated here
     * once. Serializable: build it on the client and keep it in your
     * function.
     */
    public static final class Config implements Serializable {
        private static final long serialVersionUID = 1L;

        /**
         * Where and how samples are sent: {@code bootstrapServers} required;
         * topic default {@code flink-key-samples}; the queue size, record size
         * and producer settings default to those of {@link LineSender.Config}.
         */
        public LineSender.Config sender = new LineSender.Config();
        /** The fraction of records sampled, in (0, 1]; default 0.01. */
        public double sampleRate = 0.01;

        public Config() {
            sender.topic = "flink-key-samples";
        }

        /** The defaults, sending to the given bootstrap servers. */
        public static Config of(String bootstrapServers) {
            Config c = new Config();
            c.sender.bootstrapServers = bootstrapServers;
            return c;
        }

        /** Checks every field; throws IllegalArgumentException naming the first bad one. */
        public void validate() {
            if (sender == null) {
                throw new IllegalArgumentException("no sender configuration");
            }
            sender.validate();
            if (!(sampleRate > 0 && sampleRate <= 1)) {
                throw new IllegalArgumentException("sample rate must be in (0, 1], got " + sampleRate);
            }
        }
    }

    // How long close() waits for queued samples when it closes the sender.
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(2);

    private final LineSender sender;
    // The job's record key (LineSender.recordKey): its name, else its id.
    private final String recordKey;
    private final String head;
    private final String tail;
    private final int maxLine;
    private final double rate;
    private final double invLogQ;
    private final Counter sent;
    private final Counter dropped;
    private long skip;
    private long rng;
    private boolean closed;

    KeySampler(LineSender sender, String recordKey, String head, String tail, int maxLine, double rate,
            Counter sent, Counter dropped, long seed) {
        this.sender = sender;
        this.recordKey = recordKey;
        this.head = head;
        this.tail = tail;
        this.maxLine = maxLine;
        this.rate = rate;
        this.invLogQ = rate >= 1 ? 0 : 1 / Math.log1p(-rate);
        this.sent = sent;
        this.dropped = dropped;
        this.rng = mix(seed);
        // A sampler that cannot send never samples; the first sample of a
        // working one is drawn too, so that subtasks do not all sample
        // their first record.
        this.skip = sender == null ? Long.MAX_VALUE : nextSkip();
    }

    /**
     * Opens a sampler for the subtask of ctx (call it in open()). Never
     * throws: a bad configuration gives a sampler that samples nothing,
     * with one error logged.
     */
    public static KeySampler open(RuntimeContext ctx, Config cfg) {
        Counter sent = new SimpleCounter();
        Counter dropped = new SimpleCounter();
        try {
            MetricGroup g = ctx.getMetricGroup().addGroup("skewlens");
            sent = g.counter("samplesSent");
            dropped = g.counter("samplesDropped");
        } catch (RuntimeException e) {
            LOG.debug("skewlens key sampler: no metric group", e);
        }
        try {
            cfg.validate();
            Map<String, String> vars = ctx.getMetricGroup().getAllVariables();
            String jobId = ctx.getJobInfo().getJobId().toString();
            String jobName = ctx.getJobInfo().getJobName();
            String taskName = vars.getOrDefault("<task_name>", ctx.getTaskInfo().getTaskName());
            String taskId = vars.get("<task_id>");
            StringBuilder sb = new StringBuilder(256);
            Json.string(sb.append(",\"job_id\":"), jobId);
            Json.string(sb.append(",\"job_name\":"), jobName);
            Json.string(sb.append(",\"task_name\":"), taskName);
            if (taskId != null) {
                Json.string(sb.append(",\"task_id\":"), taskId);
            }
            String head = sb.append(",\"key\":").toString();
            sb.setLength(0);
            sb.append(",\"weight\":1,\"sample_rate\":");
            Json.number(sb, cfg.sampleRate);
            String tail = sb.append(",\"parallelism\":").append(ctx.getTaskInfo().getNumberOfParallelSubtasks())
                    .append(",\"max_parallelism\":").append(ctx.getTaskInfo().getMaxNumberOfParallelSubtasks())
                    .append(",\"subtask_index\":").append(ctx.getTaskInfo().getIndexOfThisSubtask())
                    .append('}').toString();
            LineSender sender = LineSender.acquire(cfg.sender);
            long seed = System.nanoTime() ^ ((long) ctx.getTaskInfo().getIndexOfThisSubtask() << 32)
                    ^ System.identityHashCode(sender);
            return new KeySampler(sender, LineSender.recordKey(jobName, jobId), head, tail, cfg.sender.maxRecordBytes, cfg.sampleRate,
                    sent, dropped, seed);
        } catch (RuntimeException e) {
            LOG.error("skewlens key sampler: cannot start ({}); this subtask samples no keys", e.toString());
            return new KeySampler(null, "", "", "", 0, 1, sent, dropped, 0);
        }
    }

    /** Samples key with the configured probability. Never blocks, never throws. */
    public void sample(String key) {
        if (--skip > 0) {
            return;
        }
        emit(key);
    }

    /** Samples {@code String.valueOf(key)} with the configured probability (converted only when sampled). */
    public void sample(Object key) {
        if (--skip > 0) {
            return;
        }
        emit(String.valueOf(key));
    }

    private void emit(String key) {
        skip = nextSkip();
        if (sender == null || closed) {
            return;
        }
        String k = key == null ? "null" : key;
        StringBuilder sb = new StringBuilder(head.length() + tail.length() + k.length() + 32);
        sb.append("{\"ts\":").append(System.currentTimeMillis()).append(head);
        Json.string(sb, k).append(tail);
        if (sb.length() <= maxLine && sender.offer(recordKey, sb.toString())) {
            sent.inc();
        } else {
            dropped.inc();
        }
    }

    /** The number of records until the next sample: geometric on {1, 2, …} with mean 1/rate. */
    private long nextSkip() {
        if (invLogQ == 0) {
            return 1;
        }
        return geometric(invLogQ, next());
    }

    /**
     * A geometric variate from 64 random bits: floor(ln U / ln(1-p)) + 1
     * with U uniform in (0, 1], given invLogQ = 1 / ln(1-p).
     */
    static long geometric(double invLogQ, long bits) {
        double u = ((bits >>> 11) + 1) * 0x1.0p-53;
        double g = Math.log(u) * invLogQ;
        return g >= 9.0e18 ? Long.MAX_VALUE : (long) g + 1;
    }

    // xorshift64*: a few cycles, no allocation, and each instance its own.
    private long next() {
        long x = rng;
        x ^= x >>> 12;
        x ^= x << 25;
        x ^= x >>> 27;
        rng = x;
        return x * 0x2545F4914F6CDD1DL;
    }

    // splitmix64 finaliser: a nonzero, well-spread xorshift state from any seed.
    private static long mix(long z) {
        z += 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        z ^= z >>> 31;
        return z == 0 ? 1 : z;
    }

    /** The configured rate (1 for a sampler that could not start). */
    public double sampleRate() { return rate; }

    /** Samples handed to the sender by this instance. */
    public long sent() { return sent.getCount(); }

    /** Samples this instance dropped (the sender's queue was full, or the line too long). */
    public long dropped() { return dropped.getCount(); }

    /** Whether this sampler sends (false after a bad configuration or close). */
    public boolean enabled() { return sender != null && !closed; }

    /**
     * Releases the shared sender; the last user in the JVM closes it,
     * waiting at most 2 s for queued samples. Idempotent; sample() after
     * close samples nothing.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        skip = Long.MAX_VALUE;
        if (sender != null) {
            LineSender.release(sender, CLOSE_TIMEOUT);
        }
    }
}
