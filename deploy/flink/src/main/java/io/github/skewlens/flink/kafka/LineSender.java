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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
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
 * bounded queue and returns at once; when the queue is full the line is
 * dropped and counted ({@link #dropped()}). Overflow policy: drop the newest.
 * One background thread drains the queue, groups lines by job into records
 * of at most {@link Config#maxRecordBytes} and hands them to the Kafka
 * producer. Only that thread ever waits on Kafka (metadata, a full producer
 * buffer), so an unreachable broker fills the queue and costs dropped lines,
 * never a stalled Flink thread. Send failures ({@link #failed()}) and drops
 * are each logged as a warning at most once a minute, by that thread, so
 * no caller ever logs here.
 *
 * <p>Thread safety: {@link #offer} may be called from any number of threads.
 * {@link #close} is idempotent and waits at most its timeout; it is the
 * only method that blocks.
 */
public final class LineSender implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LineSender.class);

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
        /** Lines held while Kafka is slow or away; default 20 000. */
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

    // Lines taken from the queue per send: bounds the sender's own buffers.
    private static final int MAX_BATCH = 4096;

    private final Config cfg;
    private final ArrayBlockingQueue<Line> queue;
    private final Producer<String, byte[]> producer;
    private final Thread thread;
    private final AtomicLong sentLines = new AtomicLong();
    private final AtomicLong sentRecords = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private volatile boolean closing;
    private volatile long lastFailureLog;
    // Drops happen on the callers' (Flink's) threads; the sender thread logs
    // them, at most once a minute, so that no Flink thread ever logs here.
    private long droppedLogged;
    private long lastDropLog;
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
        // Only the sender thread blocks on these; short bounds keep close() quick
        // and turn an unreachable broker into counted failures, not a hang.
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "5000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
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
     * false, and counts a drop, when the queue is full or the sender is
     * closed; a null line is ignored. Never blocks.
     */
    public boolean offer(String key, String line) {
        if (line == null) {
            return false;
        }
        if (closing || !queue.offer(new Line(Objects.requireNonNullElse(key, ""), line))) {
            dropped.incrementAndGet();
            return false;
        }
        return true;
    }

    /** Lines handed to the producer and acknowledged by the broker. */
    public long sentLines() { return sentLines.get(); }

    /** Records acknowledged by the broker. */
    public long sentRecords() { return sentRecords.get(); }

    /** Lines dropped because the queue was full or the sender closed. */
    public long dropped() { return dropped.get(); }

    /** Lines lost because the producer failed to send them. */
    public long failed() { return failed.get(); }

    /** Lines waiting in the queue. */
    public int queued() { return queue.size(); }

    /** The queue's capacity. */
    public int capacity() { return cfg.maxQueuedLines; }

    private void loop() {
        List<Line> batch = new ArrayList<>(1024);
        long lingerMs = cfg.lingerTime.toMillis();
        while (true) {
            try {
                Line first = queue.poll(100, TimeUnit.MILLISECONDS);
                logDrops();
                if (first == null) {
                    if (closing) {
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
                send(batch);
                batch.clear();
            } catch (InterruptedException e) {
                // close() gave up waiting: what this thread holds is lost.
                dropped.addAndGet(batch.size());
                Thread.currentThread().interrupt();
                return;
            } catch (RuntimeException e) {
                // The producer may throw (closed, a serializer bug): count, log, go on.
                failed.addAndGet(batch.size());
                batch.clear();
                logFailure(e);
            }
        }
    }

    private void send(List<Line> batch) {
        // Group by job, in arrival order, and cut records at maxRecordBytes.
        Map<String, StringBuilder> byJob = new LinkedHashMap<>();
        Map<String, Integer> counts = new HashMap<>();
        for (Line l : batch) {
            StringBuilder sb = byJob.computeIfAbsent(l.job, k -> new StringBuilder(4096));
            if (sb.length() > 0 && sb.length() + l.text.length() + 1 > cfg.maxRecordBytes) {
                emit(l.job, sb, counts.remove(l.job));
                sb.setLength(0);
            }
            sb.append(l.text).append('\n');
            counts.merge(l.job, 1, Integer::sum);
        }
        for (Map.Entry<String, StringBuilder> e : byJob.entrySet()) {
            if (e.getValue().length() > 0) {
                emit(e.getKey(), e.getValue(), counts.remove(e.getKey()));
            }
        }
    }

    private void emit(String job, StringBuilder sb, Integer lines) {
        int n = lines == null ? 0 : lines;
        byte[] value = sb.toString().getBytes(StandardCharsets.UTF_8);
        producer.send(new ProducerRecord<>(cfg.topic, job.isEmpty() ? null : job, value), (md, err) -> {
            if (err != null) {
                failed.addAndGet(n);
                logFailure(err);
            } else {
                sentLines.addAndGet(n);
                sentRecords.incrementAndGet();
            }
        });
    }

    private void logDrops() {
        long d = dropped.get();
        long now = System.currentTimeMillis();
        if (d > droppedLogged && now - lastDropLog >= 60_000) {
            LOG.warn("skewlens: dropped {} lines for Kafka topic {} at {} because the queue ({} lines) was full"
                    + " ({} dropped in total); Kafka is slow or unreachable, or the queue is too small",
                    d - droppedLogged, cfg.topic, cfg.bootstrapServers, cfg.maxQueuedLines, d);
            droppedLogged = d;
            lastDropLog = now;
        }
    }

    private void logFailure(Throwable err) {
        long now = System.currentTimeMillis();
        if (now - lastFailureLog >= 60_000) {
            lastFailureLog = now;
            LOG.warn("skewlens: sending to Kafka topic {} at {} failed ({} lines lost so far, {} dropped): {}",
                    cfg.topic, cfg.bootstrapServers, failed.get(), dropped.get(), err.toString());
        }
    }

    /**
     * Sends what is queued (waiting at most {@code timeout}), then closes the
     * producer. Lines offered afterwards are dropped. Safe to call twice.
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
        long left = Math.max(0, deadline - System.nanoTime());
        producer.close(Duration.ofNanos(left));
        int lost = queue.size();
        if (lost > 0) {
            dropped.addAndGet(lost);
            queue.clear();
        }
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
