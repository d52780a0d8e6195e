package io.github.skewlens.flink.salting;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads the compacted plans topic from the beginning and follows the
 * messages keyed {@code job_id/task_name} of one task: a plan replaces the
 * current one when its version is newer (a resend of a version already
 * handled is ignored), a tombstone (null value) retires it and resets the
 * version, so the next plan may start at any version.
 *
 * <p><b>A resubmitted job.</b> When the job's name is known the consumer
 * also follows the name's lineage key, {@code /lineage/<job_name>/<task_name>}
 * ({@link #lineageKey}): skewlens publishes there the task's plan of the
 * name's newest run (its one rule, docs/salting-plans.md), or a tombstone
 * when the name has none. The run's own plan wins; while it has none
 * (before skewlens has seen the new run report and carried the plan over,
 * or after a tombstone of its own key), the lineage plan applies through
 * {@link PlanClient#onLineagePlan} with the same checks as any plan: the
 * job's name, the task's parallelism pair, versions compared within one
 * job id. So a new run is salted from its first read of the topic.
 *
 * <p>The consumer has no group: it assigns every partition of the topic
 * (checked again every {@link SaltingConfig#pollInterval}, so partitions
 * added later are read too) and commits nothing. While it catches up with
 * the end offsets seen at assignment, only the last message of each of
 * its keys is kept and handled once caught up, so a restart neither
 * applies every old version in turn nor warns about bad messages that
 * newer ones replaced. Messages of other tasks are skipped by comparing
 * the key bytes, without parsing them: memory holds two plans at most
 * (the run's own and its name's lineage plan), whatever the topic holds.
 *
 * <p>Unreachable broker: every poll interval the consumer asks the broker
 * for the end offsets (a real round trip); when that fails the plan is kept
 * for {@link SaltingConfig#unreachableGrace} after the last answer, then
 * dropped, and the topic is read again from the beginning once the broker
 * answers.
 *
 * <p>Blocking and thread safety: only the consumer's own daemon thread
 * touches the KafkaConsumer and blocks on the network; {@link #stop} wakes it
 * up. No message, however malformed, and no client error ends that thread;
 * only {@link #stop} does. Otherwise see {@link PlanClient}.
 */
final class KafkaPlanConsumer extends PlanClient {
    private static final AtomicLong CLIENT_IDS = new AtomicLong();
    private static final Duration POLL = Duration.ofMillis(500);

    private final byte[] wantKey;
    /** The job name's lineage key, or null when the name is unknown. */
    private final byte[] lineageKey;
    private final Thread thread;
    private volatile boolean closing;
    private volatile Consumer<byte[], byte[]> consumer;

    KafkaPlanConsumer(SaltingConfig cfg, String jobId) {
        this(cfg, jobId, null);
    }

    KafkaPlanConsumer(SaltingConfig cfg, String jobId, String jobName) {
        super(cfg, jobId, jobName);
        this.wantKey = (jobId + "/" + cfg.taskName).getBytes(StandardCharsets.UTF_8);
        this.lineageKey = this.jobName == null ? null : lineageKey(this.jobName, cfg.taskName).getBytes(StandardCharsets.UTF_8);
        this.thread = new Thread(this::loop, "skewlens-salting-kafka-" + jobId + "-" + cfg.taskName);
        this.thread.setDaemon(true);
    }

    @Override
    void start() {
        thread.start();
    }

    @Override
    void stop() {
        closing = true;
        Consumer<byte[], byte[]> c = consumer;
        if (c != null) {
            c.wakeup();
        }
        thread.interrupt();
        try {
            thread.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * The key of the lineage messages of a job name and task, as skewlens
     * writes it (sinks/planpub LineageKey): {@code /lineage/}, the job name
     * with '%' written {@code %25} and '/' written {@code %2F}, '/', and the
     * task name as it is. No plan's key starts with '/' (job ids are not
     * empty), and the name's escaping keeps names and tasks holding '/' apart.
     */
    static String lineageKey(String jobName, String taskName) {
        return "/lineage/" + jobName.replace("%", "%25").replace("/", "%2F") + "/" + taskName;
    }

    // Consumer thread only: what the two keys hold.
    /** The run's own key holds a plan (its last message was not a tombstone). */
    private boolean ownPlan;
    /** The last lineage message's value; null: none, or a tombstone. */
    private byte[] lineage;

    /**
     * Handles one message of the task's own key: null value = tombstone,
     * after which the name's lineage plan applies, if any. Never throws.
     * Consumer thread only (tests call it on an unstarted client).
     */
    void onMessage(byte[] value) {
        try {
            if (value == null) {
                ownPlan = false;
                onRetired("a tombstone on " + cfg.topic);
                if (lineage != null) {
                    onLineagePlan(lineage);
                }
            } else {
                ownPlan = true;
                onPlan(value);
            }
        } catch (RuntimeException e) {
            onInvalidPlan("cannot handle the message: " + e, -1);
        }
    }

    /**
     * Handles one message of the job name's lineage key: kept, and applied
     * unless the run has a plan of its own; a tombstone then retires the
     * lineage plan. Never throws. Consumer thread only (tests call it on an
     * unstarted client).
     */
    void onLineageMessage(byte[] value) {
        try {
            lineage = value;
            if (ownPlan) {
                return; // the run's own plan wins
            }
            if (value == null) {
                onRetired("the lineage of job name " + SaltingPlan.q(jobName) + " ended: a tombstone on " + cfg.topic);
            } else {
                onLineagePlan(value);
            }
        } catch (RuntimeException e) {
            onInvalidPlan("cannot handle the message: " + e, -1);
        }
    }

    /**
     * The topic was read to the end seen at assignment: handles the last
     * message of each key, own (when hasOwn) and lineage (when hasLineage),
     * as one state: the own plan, else the lineage plan.
     */
    private void onCaughtUp(boolean hasOwn, byte[] own, boolean hasLineage, byte[] lin) {
        ownPlan = false;
        lineage = hasLineage ? lin : null;
        if (hasOwn && own != null) {
            onMessage(own);
        } else if (hasOwn) {
            onMessage(null); // retires, then offers the lineage plan
        } else if (lineage != null) {
            onLineageMessage(lineage);
        }
    }

    /** Whether a record key is the task's key. */
    boolean isOurs(byte[] key) {
        return key != null && Arrays.equals(key, wantKey);
    }

    /** Whether a record key is the job name's lineage key of the task. */
    boolean isLineage(byte[] key) {
        return key != null && lineageKey != null && Arrays.equals(key, lineageKey);
    }

    private Consumer<byte[], byte[]> newConsumer() {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cfg.bootstrapServers);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "skewlens-salting-" + CLIENT_IDS.incrementAndGet());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        // Reading a missing topic must not create it (with the wrong policy).
        p.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        String timeout = Long.toString(cfg.requestTimeout.toMillis());
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, timeout);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, timeout);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.putAll(cfg.consumer);
        // kafka-clients loads classes through the context class loader;
        // inside Flink's user-code class loader that must be ours.
        Thread t = Thread.currentThread();
        ClassLoader prev = t.getContextClassLoader();
        t.setContextClassLoader(KafkaPlanConsumer.class.getClassLoader());
        try {
            return new KafkaConsumer<>(p);
        } finally {
            t.setContextClassLoader(prev);
        }
    }

    private void loop() {
        long interval = cfg.pollInterval.toNanos();
        while (!closing && consumer == null) {
            try {
                consumer = newConsumer();
            } catch (RuntimeException e) {
                // No resolvable bootstrap server, for one: retry like an unreachable broker.
                failure("cannot create a Kafka consumer: " + e.getMessage(), System.nanoTime());
                answered();
                if (!sleep(interval)) {
                    return;
                }
            }
        }
        if (closing) {
            closeConsumer();
            return;
        }
        try {
            run(interval);
        } finally {
            closeConsumer();
        }
    }

    private void run(long interval) {
        Consumer<byte[], byte[]> c = consumer;
        Set<TopicPartition> assigned = new HashSet<>();
        Map<TopicPartition, Long> catchUpTo = null; // end offsets to reach before the first plan is handled
        boolean caughtUp = false;
        boolean reread = false;                     // the plan was dropped while unreachable: read the topic again
        byte[] pending = null;                      // the task's last message while catching up
        boolean hasPending = false;
        byte[] pendingLineage = null;               // the name's last lineage message while catching up
        boolean hasPendingLineage = false;
        long nextCheck = System.nanoTime();
        while (!closing) {
            try {
                if (assigned.isEmpty() || System.nanoTime() - nextCheck >= 0) {
                    nextCheck = System.nanoTime() + interval;
                    List<PartitionInfo> infos = c.partitionsFor(cfg.topic, cfg.requestTimeout);
                    if (infos == null || infos.isEmpty()) {
                        failure("topic " + cfg.topic + " does not exist", System.nanoTime());
                        answered();
                        if (!sleep(interval)) {
                            return;
                        }
                        continue;
                    }
                    Set<TopicPartition> all = new HashSet<>();
                    for (PartitionInfo pi : infos) {
                        all.add(new TopicPartition(pi.topic(), pi.partition()));
                    }
                    if (!all.equals(assigned)) {
                        Set<TopicPartition> added = new HashSet<>(all);
                        added.removeAll(assigned);
                        c.assign(all);
                        c.seekToBeginning(added);
                        assigned = all;
                        if (!caughtUp) {
                            catchUpTo = null;
                        }
                    }
                    // A round trip to the partition leaders: the broker really answers.
                    Map<TopicPartition, Long> end = c.endOffsets(assigned, cfg.requestTimeout);
                    contact(System.nanoTime());
                    if (reread) {
                        reread = false;
                        c.seekToBeginning(assigned);
                        caughtUp = false;
                        catchUpTo = null;
                        hasPending = false;
                        pending = null;
                        hasPendingLineage = false;
                        pendingLineage = null;
                    }
                    if (!caughtUp && catchUpTo == null) {
                        catchUpTo = new HashMap<>(end);
                    }
                }
                ConsumerRecords<byte[], byte[]> records = c.poll(POLL);
                if (!records.isEmpty()) {
                    contact(System.nanoTime());
                }
                for (ConsumerRecord<byte[], byte[]> r : records) {
                    if (isOurs(r.key())) {
                        if (caughtUp) {
                            onMessage(r.value());
                        } else {
                            pending = r.value();
                            hasPending = true;
                        }
                    } else if (isLineage(r.key())) {
                        if (caughtUp) {
                            onLineageMessage(r.value());
                        } else {
                            pendingLineage = r.value();
                            hasPendingLineage = true;
                        }
                    }
                }
                if (!caughtUp && catchUpTo != null && reached(c, catchUpTo)) {
                    caughtUp = true;
                    catchUpTo = null;
                    onCaughtUp(hasPending, pending, hasPendingLineage, pendingLineage);
                    pending = null;
                    hasPending = false;
                    pendingLineage = null;
                    hasPendingLineage = false;
                    answered();
                }
            } catch (WakeupException | InterruptException e) {
                if (closing) {
                    return;
                }
                // Not from stop(): clear the interrupt so the next call does not throw again at once.
                Thread.interrupted();
            } catch (TimeoutException e) {
                if (failure("no answer within " + cfg.requestTimeout.toMillis() + " ms (" + e.getMessage() + ")",
                        System.nanoTime())) {
                    reread = true;
                }
                answered();
            } catch (RuntimeException e) {
                // Anything else the client throws (authorization, a corrupt
                // batch): log it, wait, try again. Never end the thread.
                if (failure(e.getClass().getSimpleName() + ": " + e.getMessage(), System.nanoTime())) {
                    reread = true;
                }
                answered();
                if (!sleep(interval)) {
                    return;
                }
            }
        }
    }

    private boolean reached(Consumer<byte[], byte[]> c, Map<TopicPartition, Long> end) {
        for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
            if (c.position(e.getKey(), cfg.requestTimeout) < e.getValue()) {
                return false;
            }
        }
        return true;
    }

    private void closeConsumer() {
        Consumer<byte[], byte[]> c = consumer;
        if (c == null) {
            return;
        }
        // stop() interrupts the thread to end a sleep; a pending interrupt
        // would make close() fail at once and log an error instead of closing.
        boolean interrupted = Thread.interrupted();
        try {
            c.close(CloseOptions.timeout(Duration.ofSeconds(1)));
        } catch (RuntimeException e) {
            // Closing a consumer that never reached a broker may complain; nothing to do.
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
