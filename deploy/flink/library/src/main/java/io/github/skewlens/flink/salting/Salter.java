package io.github.skewlens.flink.salting;

import java.util.Objects;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.MetricGroup;

/**
 * Chooses each record's routing key, once, before {@code keyBy}: one of the
 * current plan's salted keys, verbatim, for a hot key (round-robin per
 * instance, so each instance spreads a hot key evenly), the key itself for
 * every other key and whenever there is no applicable plan. The choice is
 * stored in the {@link Salted} record, because Flink calls a
 * {@code KeySelector} more than once per record and a selector that chose
 * itself would send records to the wrong key group (rule 1 of
 * docs/salting-plans.md). Key the result with {@link SaltedKeySelector}.
 *
 * <p>The plan comes from the JVM's shared {@link PlanClient} for the
 * configuration and job. {@code open()} acquires it and waits up to
 * {@link SaltingConfig#startupWait} for the source's first answer;
 * {@link #map} only reads a volatile field and a hash map: it never blocks
 * and never does I/O. {@code close()} releases the client.
 *
 * <p>Metrics, in the group {@code skewlens}: {@code saltingPlanVersion}
 * (the applied plan's version, -1 without one) and {@code saltedRecords}.
 *
 * <p>The key selector must return a non-null String, as for
 * {@code keyBy}. Thread safety: one instance per subtask, called by
 * Flink's task thread only.
 */
public class Salter<T> extends RichMapFunction<T, Salted<T>> {
    private static final long serialVersionUID = 1L;

    private final KeySelector<T, String> keyFn;
    private final SaltingConfig cfg;

    private transient PlanClient client;
    private transient int next;
    private transient Counter saltedRecords;

    /** A salter for the keys keyFn extracts, with plans as cfg says (validated here). */
    public Salter(KeySelector<T, String> keyFn, SaltingConfig cfg) {
        this.keyFn = Objects.requireNonNull(keyFn, "key selector");
        this.cfg = Objects.requireNonNull(cfg, "salting config");
        cfg.validate();
    }

    @Override
    public void open(OpenContext openContext) throws Exception {
        String job = cfg.jobId != null ? cfg.jobId : getRuntimeContext().getJobInfo().getJobId().toString();
        String name = cfg.jobName != null ? cfg.jobName : getRuntimeContext().getJobInfo().getJobName();
        client = PlanClient.acquire(cfg, job, name);
        // Start the round robin at the subtask index so that instances do
        // not all send their first hot record to the same salted key.
        next = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        MetricGroup g = getRuntimeContext().getMetricGroup().addGroup("skewlens");
        PlanClient c = client;
        g.gauge("saltingPlanVersion", (Gauge<Long>) c::appliedVersion);
        saltedRecords = g.counter("saltedRecords");
        if (!cfg.startupWait.isZero()) {
            client.awaitFirstAnswer(cfg.startupWait);
        }
    }

    @Override
    public Salted<T> map(T value) throws Exception {
        String key = keyFn.getKey(value);
        return new Salted<>(key, saltedKey(key), value);
    }

    /** The routing key of a record with this key. Never blocks. */
    public String saltedKey(String key) {
        String[] salts = client.lookup(key);
        if (salts == null) {
            return key;
        }
        saltedRecords.inc();
        return salts[Integer.remainderUnsigned(next++, salts.length)];
    }

    @Override
    public void close() throws Exception {
        PlanClient.release(client);
        client = null;
    }
}
