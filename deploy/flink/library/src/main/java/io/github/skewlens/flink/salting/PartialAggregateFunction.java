package io.github.skewlens.flink.salting;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.TimeDomain;
import org.apache.flink.streaming.api.TimerService;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Phase 1 of {@link TwoPhaseAggregation}: keyed by the salted key, it adds
 * every record to a partial accumulator and sends the partials to phase 2
 * every flush interval (processing-time timers) and at the end of input.
 *
 * <p>State: per salted key, a map from original key to accumulator. Almost
 * always one entry; the map keeps results right when a data key happens to
 * equal another key's salted key (say the plan salts "a" into "a#1" and the
 * data also holds a key "a#1"). Only keys that received records since the
 * last flush hold state, and a flush clears it.
 *
 * <p>Timers, both through the public {@link TimerService}: the first record
 * of a key since its last flush registers a processing-time timer at the
 * end of the current flush interval (timers of all keys fall on the same
 * instants, so Flink keeps one per key and interval at most) and an
 * event-time timer at {@link #END_OF_INPUT}. Only the end of input (or a
 * stop with {@code --drain}) sends the watermark that fires the latter,
 * so it flushes every key that still holds partials then, which is what a
 * function that gets no end-of-input call needs; a processing-time flush
 * deletes it, so a key without state holds no timer. What the end-of-input
 * flush emits carries that timer's timestamp, {@code Long.MAX_VALUE} (Flink
 * stamps what an event-time timer emits); the interval flushes emit no
 * timestamp.
 *
 * <p>Thread safety: Flink calls a function from its task thread only.
 */
final class PartialAggregateFunction<T, ACC>
        extends KeyedProcessFunction<String, Salted<T>, TwoPhaseAggregation.Partial<ACC>> {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(PartialAggregateFunction.class);
    /** The state's name. */
    static final String STATE = "skewlens-partials";
    /** The event-time timer that the end of input's watermark (Long.MAX_VALUE) fires. */
    static final long END_OF_INPUT = Long.MAX_VALUE;

    private final AggregateFunction<T, ACC, ?> agg;
    private final TypeInformation<ACC> accType;
    private final long flushMillis;
    private final PerRecord perRecord;

    private transient MapState<String, ACC> partials;
    private transient String name;
    private transient boolean hook;
    private transient WarnLimiter hookWarns;
    private transient long hookFailures;

    PartialAggregateFunction(AggregateFunction<T, ACC, ?> agg, TypeInformation<ACC> accType, long flushMillis,
            PerRecord perRecord) {
        this.agg = agg;
        this.accType = accType;
        this.flushMillis = flushMillis;
        this.perRecord = perRecord;
    }

    @Override
    public void open(OpenContext openContext) throws Exception {
        partials = getRuntimeContext().getMapState(new MapStateDescriptor<>(STATE, Types.STRING, accType));
        name = getRuntimeContext().getTaskInfo().getTaskName();
        hookWarns = new WarnLimiter(LOG);
        hook = perRecord != PerRecord.NONE;
        if (hook) {
            try {
                perRecord.open(getRuntimeContext());
            } catch (Exception | LinkageError e) {
                hook = false;
                LOG.warn("skewlens: the per-record hook of {} failed to open and is disabled for subtask {}: {}",
                        name, getRuntimeContext().getTaskInfo().getIndexOfThisSubtask(), e.toString(), e);
            }
        }
    }

    @Override
    public void processElement(Salted<T> s, Context ctx, Collector<TwoPhaseAggregation.Partial<ACC>> out)
            throws Exception {
        if (hook) {
            try {
                perRecord.onRecord(s.key);
            } catch (RuntimeException e) {
                hookFailures++;
                hookWarns.warn("skewlens: the per-record hook of " + name + " failed (" + hookFailures
                        + " times so far): " + e);
            }
        }
        ACC acc = partials.get(s.key);
        if (acc == null) {
            if (partials.isEmpty()) {
                // The first record of this salted key since the last flush.
                registerTimers(ctx.timerService());
            }
            acc = agg.createAccumulator();
        }
        partials.put(s.key, agg.add(s.value, acc));
    }

    /** This key's flush at the end of the flush interval, and at the end of input. */
    private void registerTimers(TimerService timers) {
        long now = timers.currentProcessingTime();
        timers.registerProcessingTimeTimer(now - Math.floorMod(now, flushMillis) + flushMillis);
        timers.registerEventTimeTimer(END_OF_INPUT);
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<TwoPhaseAggregation.Partial<ACC>> out)
            throws Exception {
        if (ctx.timeDomain() == TimeDomain.PROCESSING_TIME) {
            ctx.timerService().deleteEventTimeTimer(END_OF_INPUT);
        }
        List<Map.Entry<String, ACC>> flushed = new ArrayList<>(1);
        for (Map.Entry<String, ACC> e : partials.entries()) {
            flushed.add(Map.entry(e.getKey(), e.getValue()));
        }
        partials.clear();
        for (Map.Entry<String, ACC> e : flushed) {
            out.collect(new TwoPhaseAggregation.Partial<>(e.getKey(), e.getValue()));
        }
    }

    @Override
    public void close() throws Exception {
        if (hook) {
            hook = false;
            try {
                perRecord.close();
            } catch (Exception e) {
                LOG.warn("skewlens: the per-record hook of {} failed to close: {}", name, e.toString());
            }
        }
    }
}
