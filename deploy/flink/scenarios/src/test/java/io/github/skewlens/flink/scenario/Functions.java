package io.github.skewlens.flink.scenario;

import java.io.IOException;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

import io.github.skewlens.flink.salting.PerRecord;

/** The functions of {@link ScenarioJob}'s topology. */
final class Functions {
    private Functions() {}

    /** SplitMix64: a well-mixed 64-bit value for each sequence number. */
    static long mix(long x) {
        long z = x + 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    /**
     * Makes record number {@code seq}: with probability hotShare the hot key,
     * else one of {@code keys} uniform keys {@code customer-N}; a payload of
     * min..max bytes (ASCII, so one byte per char on the wire).
     */
    static final class Generator implements GeneratorFunction<Long, Event> {
        private static final long serialVersionUID = 1L;
        private static final int PAYLOADS = 64;
        private final String hotKey;
        private final double hotShare;
        /** Epoch ms from which the hot key is drawn (0: from the start). */
        private final long hotFromMs;
        private final int keys;
        private final int minBytes;
        private final int maxBytes;
        private transient String[] payloads;
        private transient String[] keyNames;

        Generator(ScenarioOptions o) {
            this.hotKey = o.hotKey;
            this.hotShare = o.effectiveHotShare();
            this.hotFromMs = o.hotFromEpochMs;
            this.keys = o.keys;
            this.minBytes = o.minRecordBytes;
            this.maxBytes = o.maxRecordBytes;
        }

        @Override
        public void open(SourceReaderContext readerContext) {
            payloads = new String[PAYLOADS];
            StringBuilder sb = new StringBuilder(maxBytes);
            for (int i = 0; i < maxBytes; i++) {
                sb.append((char) ('a' + i % 26));
            }
            String all = sb.toString();
            for (int i = 0; i < PAYLOADS; i++) {
                payloads[i] = all.substring(0, minBytes + (int) ((long) (maxBytes - minBytes) * i / (PAYLOADS - 1)));
            }
            keyNames = new String[keys];
            for (int i = 0; i < keys; i++) {
                keyNames[i] = "customer-" + i;
            }
        }

        @Override
        public Event map(Long seq) {
            long h = mix(seq);
            // 53 bits of h as a uniform double in [0, 1).
            double u = (h >>> 11) * 0x1.0p-53;
            long h2 = mix(h);
            long now = System.currentTimeMillis();
            String key = u < hotShare && now >= hotFromMs ? hotKey : keyNames[(int) Long.remainderUnsigned(h2, keys)];
            String payload = payloads[(int) ((h2 >>> 40) % PAYLOADS)];
            return new Event(key, seq, now, payload);
        }
    }

    /**
     * The keyed task's first operator, "KeyedProcess" (without salting):
     * counts records per key in keyed state, runs its per-record hook
     * ({@link TruthHook}: the truth files, then the key sampler) and sleeps
     * its cost.
     */
    static final class KeyedCounter extends KeyedProcessFunction<String, Event, Event> {
        private static final long serialVersionUID = 1L;
        private final double costMs;
        private final PerRecord hook;
        private transient ValueState<Long> count;
        private transient Cost cost;

        KeyedCounter(double costMs, PerRecord hook) {
            this.costMs = costMs;
            this.hook = hook;
        }

        @Override
        public void open(OpenContext ctx) throws Exception {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
            cost = new Cost(costMs);
            hook.open(getRuntimeContext());
        }

        @Override
        public void processElement(Event e, Context ctx, Collector<Event> out) throws Exception {
            Long c = count.value();
            long n = c == null ? 1 : c + 1;
            count.update(n);
            e.count = n;
            hook.onRecord(e.key);
            cost.charge();
            out.collect(e);
        }

        @Override
        public void close() throws Exception {
            hook.close();
        }
    }

    /**
     * The keyed task's per-record hook: counts each record's original key
     * on its subtask for the truth files, then runs the key sampler's hook
     * (if any). Used by {@link KeyedCounter} and, with salting, by phase 1
     * of the two-phase aggregation.
     */
    static final class TruthHook implements PerRecord {
        private static final long serialVersionUID = 1L;
        private final PerRecord next;
        private transient int subtask;

        TruthHook(PerRecord next) {
            this.next = next;
        }

        @Override
        public void open(RuntimeContext ctx) throws Exception {
            subtask = ctx.getTaskInfo().getIndexOfThisSubtask();
            Truth.keyedTaskName = ctx.getTaskInfo().getTaskName();
            next.open(ctx);
        }

        @Override
        public void onRecord(String originalKey) {
            Truth.route(originalKey, subtask);
            next.onRecord(originalKey);
        }

        @Override
        public void close() throws Exception {
            next.close();
        }
    }

    /**
     * With salting, phase 1's aggregate: counts records per key and sleeps
     * the keyed cost per record (the same cost as {@link KeyedCounter}).
     * Not a RichFunction (two-phase aggregation forbids it): the Cost is
     * made lazily, one per deserialized copy, that is per subtask.
     */
    static final class CountWithCost implements AggregateFunction<Event, Long, Long> {
        private static final long serialVersionUID = 1L;
        private final double costMs;
        private transient Cost cost;

        CountWithCost(double costMs) {
            this.costMs = costMs;
        }

        @Override
        public Long createAccumulator() {
            return 0L;
        }

        @Override
        public Long add(Event e, Long acc) {
            if (cost == null) {
                cost = new Cost(costMs);
            }
            cost.charge();
            return acc + 1;
        }

        @Override
        public Long getResult(Long acc) {
            return acc;
        }

        @Override
        public Long merge(Long a, Long b) {
            return a + b;
        }
    }

    /** "enrich": a cheap map chained after the keyed operator. */
    static final class Enrich extends RichMapFunction<Event, Event> {
        private static final long serialVersionUID = 1L;

        @Override
        public Event map(Event e) {
            // Latency since generation in the spare field, as an enrichment would.
            e.ts = System.currentTimeMillis() - e.ts;
            return e;
        }
    }

    /**
     * The sink (of Events, or of KeyedResults with salting): sleeps its cost
     * per record; one subtask may be slow, at a fixed cost or, with steps, at
     * a cost that changes at given epoch ms (a sink that slows down).
     */
    static final class SleepSink<T> implements Sink<T> {
        private static final long serialVersionUID = 1L;
        private final double costMs;
        private final double slowCostMs;
        private final int slowSubtask;
        /** Epoch ms from which the slow subtask costs stepCostMs[i]; empty: slowCostMs throughout. */
        private final long[] stepAtMs;
        private final double[] stepCostMs;

        SleepSink(double costMs, double slowCostMs, int slowSubtask) {
            this(costMs, slowCostMs, slowSubtask, new long[0], new double[0]);
        }

        SleepSink(double costMs, double slowCostMs, int slowSubtask, long[] stepAtMs, double[] stepCostMs) {
            if (stepAtMs.length != stepCostMs.length) {
                throw new IllegalArgumentException("steps: " + stepAtMs.length + " times, " + stepCostMs.length + " costs");
            }
            this.costMs = costMs;
            this.slowCostMs = slowCostMs;
            this.slowSubtask = slowSubtask;
            this.stepAtMs = stepAtMs.clone();
            this.stepCostMs = stepCostMs.clone();
        }

        /** The same sink for records of another type (it never looks at them). */
        @SuppressWarnings("unchecked")
        <U> SleepSink<U> cast() {
            return (SleepSink<U>) (SleepSink<?>) this;
        }

        @Override
        public SinkWriter<T> createWriter(WriterInitContext context) throws IOException {
            int subtask = context.getTaskInfo().getIndexOfThisSubtask();
            Truth.sinkTaskName = context.getTaskInfo().getTaskName();
            boolean stepped = subtask == slowSubtask && stepAtMs.length > 0;
            Cost cost = new Cost(subtask != slowSubtask ? costMs : stepped ? stepCostMs[0] : slowCostMs);
            return new SinkWriter<>() {
                /** The next step not applied yet; stepAtMs.length when all are (or none apply). */
                private int next = stepped ? 1 : stepAtMs.length;

                @Override
                public void write(T e, Context ctx) {
                    Truth.sinkRecords.incrementAndGet(subtask);
                    if (next < stepAtMs.length) {
                        long now = System.currentTimeMillis();
                        while (next < stepAtMs.length && now >= stepAtMs[next]) {
                            cost.set(stepCostMs[next++]);
                        }
                    }
                    cost.charge();
                }

                @Override
                public void flush(boolean endOfInput) {}

                @Override
                public void close() {}
            };
        }
    }
}
