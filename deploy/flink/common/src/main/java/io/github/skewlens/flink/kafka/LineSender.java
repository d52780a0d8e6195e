package io.github.skewlens.flink.kafka;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends text lines to a Kafka topic, several lines per record, each record
 * keyed by the job id its lines belong to (skewlens' partitioning rule: a
 * job's metrics and key samples reach one skewlens instance).
 *
 * <p><b>Never blocks the caller.</b> {@link #offer} puts a line into a
 * bounded queue and returns at once. One background thread drains the
 * queue, groups lines by job into records of at most
 * {@link Config#maxRecordBytes} and hands them to the Kafka producer. Only
 * that thread ever waits on Kafka (metadata, a full producer buffer).
 *
 * <p><b>Held until acknowledged.</b> A line counts against
 * {@link Config#maxQueuedLines} from {@link #offer} until the broker
 * acknowledges its record ({@link #held()}): in the queue, in the sender
 * thread's hands or inside the producer. A record that fails with an error
 * Kafka calls retriable (the broker is away, the delivery timeout passed,
 * the producer's buffer stayed full, the topic's metadata did not come) is
 * kept and sent again, in order, after {@link #RETRY_BACKOFF}, for as long
 * as it takes: a broker restart costs no line while the queue has room.
 * Overflow policy: when {@code maxQueuedLines} are held, the newest lines
 * are dropped and counted ({@link #dropped()}). A record the broker refuses
 * for good (too large, not authorised) is lost and counted
 * ({@link #failed()}); so are, as drops, the lines still held when
 * {@link #close} gives up. Drops, losses and a broker that does not take
 * lines are each logged as a warning at most once a minute, by the sender
 * thread or the producer's, so no caller ever logs here.
 *
 * <p>Thread safety: {@link #offer} may be called from any number of threads.
 * {@link #close} is idempotent and waits about its timeout; it is the
 * only method that blocks.
 */
public final class LineSender implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LineSender.class);

    /** How long a record that failed retriably waits before it is sent again. */
    static final Duration RETRY_BACKOFF = Duration.ofSeconds(1);

    /**
     * What to send where. Defaults are stated on each field. Serializable so
     * that a job can build it on the client and ship it inside a function.
     */
    public static final class Config implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        /** Kafka bootstrap servers; required. */
        public String bootstrapServers;
        /** The topic; required. */
        public String topic;
        /**
         * Lines held until the broker acknowledges them (queued, or sent and
         * not yet acknowledged), so also while Kafka is slow or away;
         * default 20 000. When that many are held, new lines are dropped.
         */
        public int maxQueuedLines = 20_000;
        /** Upper bound of one record's value; default 256 KiB. */
        public int maxRecordBytes = 256 * 1024;
        /** How long the sender waits for more lines before it sends; default 50 ms. */
        public Duration lingerTime = Duration.ofMillis(50);
        /** Extra producer settings (for example security); they win over the defaults. */
        public HashMap<String, String> producer = new HashMap<>();
        /**
         * The producer's client.id; default (null) "skewlens-" + topic, so
         * that the reporter's and the sampler's producers in one JVM do not
         * clash in JMX.
         */
        public String clientId;

        /** Checks every field; throws IllegalArgumentException naming the first bad one. */
        public void validate() {
            if (bootstrapServers == null || bootstrapServers.isBlank()) {
                throw new IllegalArgumentException("bootstrap.servers is required");
            }
            if (topic == null || topic.isBlank()) {
                throw new IllegalArgumentException("topic is required");
            }
            if (maxQueuedLines < 1) {
                throw new IllegalArgumentException("queue size (max queued lines) must be >= 1, got " + maxQueuedLines);
            }
            if (maxRecordBytes < 1024) {
                throw new IllegalArgumentException("max record bytes must be >= 1024, got " + maxRecordBytes);
            }
            if (lingerTime == null || lingerTime.isNegative()) {
                throw new IllegalArgumentException("linger time must not be negative");
            }
        }

        String clientIdOrDefault() {
            return clientId != null && !clientId.isBlank() ? clientId : "skewlens-" + topic;
        }

        /** A deep copy, so that a running sender never sees its caller's later edits. */
        public Config copy() {
            Config c = new Config();
            c.bootstrapServers = bootstrapServers;
            c.topic = topic;
            c.maxQueuedLines = maxQueuedLines;
            c.maxRecordBytes = maxRecordBytes;
            c.lingerTime = lingerTime;
            c.producer = new HashMap<>(producer == null ? Map.of() : producer);
            c.clientId = clientId;
            return c;
        }

        /** The identity of a shared sender: configurations that are equal share one. */
        String identity() {
            return bootstrapServers + "|" + topic + "|" + maxQueuedLines + "|" + maxRecordBytes + "|"
                    + lingerTime + "|" + new java.util.TreeMap<>(producer == null ? Map.of() : producer) + "|"
                    + clientIdOrDefault();
        }
    }

    private record Line(String job, String text) {}

    /** One record handed to the producer: kept until acknowledged, to send it again. */
    private record Batch(String key, byte[] value, int lines) {}

    // Lines taken from the queue per send: bounds the sender's own buffers.
    private static final int MAX_BATCH = 4096;
    private static final long LOG_EVERY_MS = 60_000;

    private final Config cfg;
    private final ArrayBlockingQueue<Line> queue;
    /** Records that failed retriably, oldest first, waiting to be sent again by the sender thread. */
    private final ConcurrentLinkedQueue<Batch> retries = new ConcurrentLinkedQueue<>();
    private final Producer<String, byte[]> producer;
    private final Thread thread;
    /** Lines offered and not yet acknowledged, dropped or lost: at most cfg.maxQueuedLines. */
    private final AtomicInteger held = new AtomicInteger();
    private final AtomicLong sentLines = new AtomicLong();
    private final AtomicLong sentRecords = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong resent = new AtomicLong();
    private volatile boolean closing;
    /** Set before the producer closes: what it aborts then is dropped, not sent again. */
    private volatile boolean producerClosing;
    /** System.nanoTime() before which retries wait. */
    private volatile long retryAt;
    // Rate limits of the warnings; the producer's thread and the sender
    // thread both log, so they are claimed with compareAndSet.
    private final AtomicLong lastFailureLog = new AtomicLong(Long.MIN_VALUE / 2);
    private final AtomicLong lastRetryLog = new AtomicLong(Long.MIN_VALUE / 2);
    /** Whether a retriable failure was logged and no record was acknowledged since. */
    private volatile boolean outage;
    // Drops happen on the callers' (Flink's) threads; the sender thread logs
    // them, at most once a minute, so that no Flink thread ever logs here.
    private long droppedLogged;
    private long lastDropLog = Long.MIN_VALUE / 2;
    private boolean closed;

    /** Starts a sender with its own producer and thread. */
    public LineSender(Config cfg) {
        this(cfg, null);
    }

    /** For tests: a sender over the given producer (null: a KafkaProducer from cfg). */
    LineSender(Config cfg, Producer<String, byte[]> producer) {
        cfg = cfg.copy();
        cfg.validate();
        this.cfg = cfg;
        this.queue = new ArrayBlockingQueue<>(cfg.maxQueuedLines);
        this.producer = producer != null ? producer : newProducer(cfg);
        this.thread = new Thread(this::loop, "skewlens-sender-" + cfg.topic);
        this.thread.setDaemon(true);
        this.thread.start();
    }

    private static Producer<String, byte[]> newProducer(Config cfg) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cfg.bootstrapServers);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, cfg.clientIdOrDefault());
        p.put(ProducerConfig.ACKS_CONFIG, "1");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "20");
        // Only the sender thread blocks on these; short bounds keep close()
        // quick. A record that times out is not lost: the sender sends it
        // again (see the class comment), so these only decide how often.
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "5000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "120000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.BUFFER_MEMORY_CONFIG, Integer.toString(8 * 1024 * 1024));
        p.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, Integer.toString(Math.max(1024 * 1024, cfg.maxRecordBytes + 4096)));
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        // No client telemetry pushed to the broker (KIP-714): the plugin jar
        // leaves its classes out to stay small.
        p.put(ProducerConfig.ENABLE_METRICS_PUSH_CONFIG, "false");
        p.putAll(cfg.producer);
        // kafka-clients loads its classes through the context class loader;
        // inside Flink's plugin or user-code class loader that must be ours.
        Thread t = Thread.currentThread();
        ClassLoader prev = t.getContextClassLoader();
        t.setContextClassLoader(LineSender.class.getClassLoader());
        try {
            return new KafkaProducer<>(p);
        } finally {
            t.setContextClassLoader(prev);
        }
    }

    /**
     * The record key of a job's lines: its name, so that every run of a job
     * (Flink gives each submission a new id) lands on one partition, and so
     * on the skewlens instance that can tell the runs apart and link them;
     * the job id when the name is unknown; null when neither is.
     */
    public static String recordKey(String jobName, String jobId) {
        if (jobName != null && !jobName.isEmpty()) {
            return jobName;
        }
        return jobId == null || jobId.isEmpty() ? null : jobId;
    }

    /**
     * Queues one line (without its newline) under a record key (see
     * {@link #recordKey}; null or empty: a record without a key). Returns
     * false, and counts a drop, when {@link Config#maxQueuedLines} lines are
     * held or the sender is closed; a null line is ignored. Never blocks.
     */
    public boolean offer(String key, String line) {
        if (line == null) {
            return false;
        }
        if (closing || !reserve()) {
            dropped.incrementAndGet();
            return false;
        }
        if (!queue.offer(new Line(Objects.requireNonNullElse(key, ""), line))) {
            // Cannot happen (the queue holds at most what is held), but a
            // line must never be held without being anywhere.
            held.decrementAndGet();
            dropped.incrementAndGet();
            return false;
        }
        return true;
    }

    /** Counts one more held line unless maxQueuedLines are held. */
    private boolean reserve() {
        int cap = cfg.maxQueuedLines;
        while (true) {
            int h = held.get();
            if (h >= cap) {
                return false;
            }
            if (held.compareAndSet(h, h + 1)) {
                return true;
            }
        }
    }

    /** Lines handed to the producer and acknowledged by the broker. */
    public long sentLines() { return sentLines.get(); }

    /** Records acknowledged by the broker. */
    public long sentRecords() { return sentRecords.get(); }

    /** Lines dropped: offered while maxQueuedLines were held or after close, or still held when close gave up. */
    public long dropped() { return dropped.get(); }

    /** Lines lost: their record was refused by Kafka with an error that is not retriable. */
    public long failed() { return failed.get(); }

    /** Records sent again after a retriable failure (a broker away, a delivery timeout). */
    public long resentRecords() { return resent.get(); }

    /** Lines held: offered and not yet acknowledged, dropped or lost (at most the capacity). */
    public int held() { return held.get(); }

    /** Lines held (see {@link #held()}); the reporter reports it as queuedLines. */
    public int queued() { return held.get(); }

    /** The capacity: {@link Config#maxQueuedLines}. */
    public int capacity() { return cfg.maxQueuedLines; }

    private void loop() {
        List<Line> batch = new ArrayList<>(1024);
        long lingerMs = cfg.lingerTime.toMillis();
        while (true) {
            try {
                if (!retries.isEmpty()) {
                    // Records that failed go first, and new lines wait in
                    // the queue behind them: in order, and without a stream
                    // of new records (each blocking up to max.block.ms while
                    // the broker is away) postponing them forever.
                    long wait = retryAt - System.nanoTime();
                    if (wait > 0) {
                        logDrops();
                        TimeUnit.NANOSECONDS.sleep(Math.min(wait, TimeUnit.MILLISECONDS.toNanos(100)));
                    } else {
                        resend();
                    }
                    continue;
                }
                Line first = queue.poll(100, TimeUnit.MILLISECONDS);
                logDrops();
                if (first == null) {
                    if (closing && retries.isEmpty()) {
                        return;
                    }
                    continue;
                }
                batch.add(first);
                // Linger by sleeping, then take what came in one drain: a
                // sender waiting on the queue would be woken by every
                // offer, a context switch per line on the callers' cores.
                if (!closing && queue.size() < MAX_BATCH - 1) {
                    Thread.sleep(lingerMs);
                }
                queue.drainTo(batch, MAX_BATCH - 1);
                List<Batch> records = group(batch);
                batch.clear();
                for (Batch b : records) {
                    emit(b);
                }
            } catch (InterruptedException e) {
                // close() gave up waiting: what this thread holds is dropped.
                drop(batch.size());
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** Sends again, oldest first, the records that failed retriably. */
    private void resend() {
        // Only what is there now: a record that fails again waits for the next backoff.
        for (int n = retries.size(); n > 0; n--) {
            Batch b = retries.poll();
            if (b == null) {
                return;
            }
            resent.incrementAndGet();
            emit(b);
        }
    }

    /** Groups lines by job, in arrival order, into records of at most maxRecordBytes. */
    private List<Batch> group(List<Line> batch) {
        Map<String, StringBuilder> byJob = new LinkedHashMap<>();
        Map<String, Integer> counts = new HashMap<>();
        List<Batch> out = new ArrayList<>();
        for (Line l : batch) {
            StringBuilder sb = byJob.computeIfAbsent(l.job, k -> new StringBuilder(4096));
            if (sb.length() > 0 && sb.length() + l.text.length() + 1 > cfg.maxRecordBytes) {
                out.add(batch(l.job, sb, counts.remove(l.job)));
                sb.setLength(0);
            }
            sb.append(l.text).append('\n');
            counts.merge(l.job, 1, Integer::sum);
        }
        for (Map.Entry<String, StringBuilder> e : byJob.entrySet()) {
            if (e.getValue().length() > 0) {
                out.add(batch(e.getKey(), e.getValue(), counts.remove(e.getKey())));
            }
        }
        return out;
    }

    private static Batch batch(String job, StringBuilder sb, Integer lines) {
        return new Batch(job.isEmpty() ? null : job, sb.toString().getBytes(StandardCharsets.UTF_8),
                lines == null ? 0 : lines);
    }

    /** Hands one record to the producer; its outcome is settled by {@link #settle}. Never throws. */
    private void emit(Batch b) {
        try {
            producer.send(new ProducerRecord<>(cfg.topic, b.key, b.value), (md, err) -> settle(b, err));
        } catch (RuntimeException e) {
            // The producer may throw (closed, interrupted by close()).
            settle(b, e);
        }
    }

    /**
     * The outcome of one record (err null: acknowledged). Runs on the
     * producer's thread, or on the sender thread when send threw.
     */
    private void settle(Batch b, Exception err) {
        if (err == null) {
            sentLines.addAndGet(b.lines);
            sentRecords.incrementAndGet();
            held.addAndGet(-b.lines);
            if (outage) {
                outage = false;
                LOG.info("skewlens: Kafka topic {} at {} takes lines again ({} lines held, {} records sent again so far)",
                        cfg.topic, cfg.bootstrapServers, held.get(), resent.get());
            }
            return;
        }
        if (producerClosing) {
            drop(b.lines);
            return;
        }
        if (retriable(err)) {
            retryAt = System.nanoTime() + RETRY_BACKOFF.toNanos();
            retries.add(b);
            logRetry(err);
            return;
        }
        if (closing) {
            drop(b.lines);
            return;
        }
        failed.addAndGet(b.lines);
        held.addAndGet(-b.lines);
        logFailure(err);
    }

    /**
     * Whether Kafka may take the record later: its retriable errors (a
     * broker away, a timeout, a full buffer, missing metadata), also when
     * wrapped.
     */
    static boolean retriable(Throwable err) {
        for (Throwable t = err; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof RetriableException) {
                return true;
            }
        }
        return false;
    }

    private void drop(int lines) {
        if (lines > 0) {
            dropped.addAndGet(lines);
            held.addAndGet(-lines);
        }
    }

    private void logDrops() {
        long d = dropped.get();
        long now = System.currentTimeMillis();
        if (d > droppedLogged && now - lastDropLog >= LOG_EVERY_MS) {
            LOG.warn("skewlens: dropped {} lines for Kafka topic {} at {} because {} lines (queue.size) were held"
                    + " unacknowledged ({} dropped in total); Kafka is slow or unreachable, or the queue is too small",
                    d - droppedLogged, cfg.topic, cfg.bootstrapServers, cfg.maxQueuedLines, d);
            droppedLogged = d;
            lastDropLog = now;
        }
    }

    private void logRetry(Throwable err) {
        outage = true;
        if (claim(lastRetryLog)) {
            LOG.warn("skewlens: Kafka topic {} at {} does not take lines now ({}); holding {} of at most {} lines"
                    + " and sending them again every {} ms until it does ({} dropped so far)",
                    cfg.topic, cfg.bootstrapServers, err.toString(), held.get(), cfg.maxQueuedLines,
                    RETRY_BACKOFF.toMillis(), dropped.get());
        }
    }

    private void logFailure(Throwable err) {
        if (claim(lastFailureLog)) {
            LOG.warn("skewlens: Kafka topic {} at {} refused lines for good ({} lines lost so far, {} dropped): {}",
                    cfg.topic, cfg.bootstrapServers, failed.get(), dropped.get(), err.toString());
        }
    }

    /** Claims a once-a-minute log slot; true for the caller that may log now. */
    private static boolean claim(AtomicLong last) {
        long now = System.currentTimeMillis();
        long prev = last.get();
        return now - prev >= LOG_EVERY_MS && last.compareAndSet(prev, now);
    }

    /**
     * Sends what is held (waiting up to {@code timeout}, and at most a
     * second more for the sender thread to stop), then closes the producer.
     * What is still held then is dropped and counted, as are lines offered
     * afterwards. Safe to call twice.
     */
    public synchronized void close(Duration timeout) {
        if (closed) {
            return;
        }
        closed = true;
        closing = true;
        long deadline = System.nanoTime() + timeout.toNanos();
        try {
            thread.join(Math.max(1, timeout.toMillis()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        thread.interrupt();
        try {
            thread.join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        long left = Math.max(0, deadline - System.nanoTime());
        producerClosing = true;
        // Waits for acknowledgements up to the deadline; what is still in
        // the producer then is aborted, and settle() drops it.
        producer.close(Duration.ofNanos(left));
        for (Batch b; (b = retries.poll()) != null; ) {
            drop(b.lines);
        }
        for (Line l; (l = queue.poll()) != null; ) {
            drop(1);
        }
        logDrops();
    }

    /** close(5 s). */
    @Override
    public void close() {
        close(Duration.ofSeconds(5));
    }

    // Shared senders: one per configuration and JVM, so that the subtasks of
    // a TaskManager share one producer and one thread.
    private static final Map<String, Shared> SHARED = new HashMap<>();

    private static final class Shared {
        final LineSender sender;
        int refs;

        Shared(LineSender s) { sender = s; }
    }

    /**
     * Returns the JVM's sender for this configuration, starting it on first
     * use. Each call must be paired with one {@link #release}.
     */
    public static LineSender acquire(Config cfg) {
        cfg.validate();
        synchronized (SHARED) {
            Shared s = SHARED.computeIfAbsent(cfg.identity(), k -> new Shared(new LineSender(cfg)));
            s.refs++;
            return s.sender;
        }
    }

    /**
     * Releases a sender from {@link #acquire}; the last release closes it,
     * waiting at most 5 s for queued lines (see {@link #close(Duration)}).
     */
    public static void release(LineSender sender) {
        release(sender, Duration.ofSeconds(5));
    }

    /**
     * Releases a sender from {@link #acquire}; the last release closes it,
     * waiting at most {@code timeout} for queued lines to be sent.
     */
    public static void release(LineSender sender, Duration timeout) {
        if (sender == null) {
            return;
        }
        synchronized (SHARED) {
            String id = sender.cfg.identity();
            Shared s = SHARED.get(id);
            if (s == null || s.sender != sender) {
                return;
            }
            if (--s.refs > 0) {
                return;
            }
            SHARED.remove(id);
        }
        sender.close(timeout);
    }
}
