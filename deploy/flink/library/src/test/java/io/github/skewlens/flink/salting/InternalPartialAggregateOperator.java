package io.github.skewlens.flink.salting;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.InternalTimerService;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.Triggerable;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The benchmark's baseline: phase 1 of {@link TwoPhaseAggregation} as it
 * was until it became {@link PartialAggregateFunction}, an operator on
 * Flink's {@code @Internal} timer and state APIs ({@code InternalTimerService},
 * {@code Triggerable}, {@code KeyedStateBackend.getKeys} for the end of
 * input). Test code only: {@link PartialAggregateJmh} runs the same
 * workload through both, so that the public API's cost can be measured
 * again. Not used by any job.
 */
final class InternalPartialAggregateOperator<T, ACC> extends AbstractStreamOperator<TwoPhaseAggregation.Partial<ACC>>
        implements OneInputStreamOperator<Salted<T>, TwoPhaseAggregation.Partial<ACC>>,
                Triggerable<String, VoidNamespace>, BoundedOneInput {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(InternalPartialAggregateOperator.class);
    private static final String STATE = "skewlens-partials";

    private final AggregateFunction<T, ACC, ?> agg;
    private final TypeInformation<ACC> accType;
    private final long flushMillis;
    private final PerRecord perRecord;

    private transient MapState<String, ACC> partials;
    private transient MapStateDescriptor<String, ACC> descriptor;
    private transient InternalTimerService<VoidNamespace> timers;
    private transient boolean hook;
    private transient WarnLimiter hookWarns;
    private transient long hookFailures;

    InternalPartialAggregateOperator(AggregateFunction<T, ACC, ?> agg, TypeInformation<ACC> accType, long flushMillis,
            PerRecord perRecord) {
        this.agg = agg;
        this.accType = accType;
        this.flushMillis = flushMillis;
        this.perRecord = perRecord;
    }

    @Override
    public void open() throws Exception {
        super.open();
        descriptor = new MapStateDescriptor<>(STATE, Types.STRING, accType);
        partials = getPartitionedState(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, descriptor);
        timers = getInternalTimerService("skewlens-flush", VoidNamespaceSerializer.INSTANCE, this);
        hookWarns = new WarnLimiter(LOG);
        hook = perRecord != PerRecord.NONE;
        if (hook) {
            try {
                perRecord.open(getRuntimeContext());
            } catch (Exception | LinkageError e) {
                hook = false;
                LOG.warn("skewlens: the per-record hook of {} failed to open and is disabled for subtask {}: {}",
                        getOperatorName(), getRuntimeContext().getTaskInfo().getIndexOfThisSubtask(), e.toString(), e);
            }
        }
    }

    @Override
    public void processElement(StreamRecord<Salted<T>> element) throws Exception {
        Salted<T> s = element.getValue();
        if (hook) {
            try {
                perRecord.onRecord(s.key);
            } catch (RuntimeException e) {
                hookFailures++;
                hookWarns.warn("skewlens: the per-record hook of " + getOperatorName() + " failed (" + hookFailures
                        + " times so far): " + e);
            }
        }
        ACC acc = partials.get(s.key);
        if (acc == null) {
            if (partials.isEmpty()) {
                // First record of this salted key since the last flush.
                // Timers of all keys fall on the same instants, so Flink
                // keeps one per key and interval at most.
                long now = timers.currentProcessingTime();
                timers.registerProcessingTimeTimer(VoidNamespace.INSTANCE, now - Math.floorMod(now, flushMillis) + flushMillis);
            }
            acc = agg.createAccumulator();
        }
        partials.put(s.key, agg.add(s.value, acc));
    }

    @Override
    public void onProcessingTime(InternalTimer<String, VoidNamespace> timer) throws Exception {
        flushCurrentKey();
    }

    @Override
    public void onEventTime(InternalTimer<String, VoidNamespace> timer) {
        // No event-time timers are registered.
    }

    @Override
    public void endInput() throws Exception {
        // Keys first, then flush: clearing state while iterating the backend's keys is not safe.
        List<String> keys = new ArrayList<>();
        KeyedStateBackend<String> backend = getKeyedStateBackend();
        try (Stream<String> s = backend.getKeys(STATE, VoidNamespace.INSTANCE)) {
            s.forEach(keys::add);
        }
        for (String k : keys) {
            setCurrentKey(k);
            flushCurrentKey();
        }
    }

    private void flushCurrentKey() throws Exception {
        List<Map.Entry<String, ACC>> out = new ArrayList<>(1);
        for (Map.Entry<String, ACC> e : partials.entries()) {
            out.add(Map.entry(e.getKey(), e.getValue()));
        }
        partials.clear();
        for (Map.Entry<String, ACC> e : out) {
            output.collect(new StreamRecord<>(new TwoPhaseAggregation.Partial<>(e.getKey(), e.getValue())));
        }
    }

    @Override
    public void close() throws Exception {
        try {
            if (hook) {
                hook = false;
                perRecord.close();
            }
        } catch (Exception e) {
            LOG.warn("skewlens: the per-record hook of {} failed to close: {}", getOperatorName(), e.toString());
        } finally {
            super.close();
        }
    }
}
