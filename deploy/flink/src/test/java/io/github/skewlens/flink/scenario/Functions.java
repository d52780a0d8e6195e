package io.github.skewlens.flink.scenario;

import java.io.IOException;
import java.util.HashSet;
import java.util.Set;

import org.apache.flink.api.common.functions.OpenContext;
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
        private final int keys;
        private final int minBytes;
        private final int maxBytes;
        private transient String[] payloads;
        private transient String[] keyNames;

        Generator(ScenarioOptions o) {
            this.hotKey = o.hotKey;
            this.hotShare = o.effectiveHotShare();
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
            String key = u < hotShare ? hotKey : keyNames[(int) Long.remainderUnsigned(h2, keys)];
            String payload = payloads[(int) ((h2 >>> 40) % PAYLOADS)];
            return new Event(key, seq, System.currentTimeMillis(), payload);
        }
    }

    /**
     * The keyed task's first operator, "KeyedProcess": counts records per key
     * in keyed state, records which subtask saw each key, runs the optional
     * per-record hook (the key sampler) and sleeps its cost.
     */
    static final class KeyedCounter extends KeyedProcessFunction<String, Event, Event> {
        private static final long serialVersionUID = 1L;
        private final double costMs;
        private final Hooks.Factory hooks;
        private transient ValueState<Long> count;
        private transient Cost cost;
        private transient int subtask;
        private transient Set<String> seen;
        private transient Hooks.PerRecord hook;

        KeyedCounter(double costMs, Hooks.Factory hooks) {
            this.costMs = costMs;
            this.hooks = hooks;
        }

        @Override
        public void open(OpenContext ctx) throws Exception {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
            cost = new Cost(costMs);
            subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            seen = new HashSet<>();
            Truth.keyedTaskName = getRuntimeContext().getTaskInfo().getTaskName();
            hook = hooks == null ? null : hooks.open(getRuntimeContext());
        }

        @Override
        public void processElement(Event e, Context ctx, Collector<Event> out) throws Exception {
            Long c = count.value();
            long n = c == null ? 1 : c + 1;
            count.update(n);
            e.count = n;
            if (seen.add(e.key)) {
                Truth.route(e.key, subtask);
            }
            if (hook != null) {
                hook.record(e.key);
            }
            Truth.keyedRecords.incrementAndGet(subtask);
            cost.charge();
            out.collect(e);
        }

        @Override
        public void close() throws Exception {
            if (hook != null) {
                hook.close();
            }
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

    /** The sink: sleeps its cost per record; one subtask may be slow. */
    static final class SleepSink implements Sink<Event> {
        private static final long serialVersionUID = 1L;
        private final double costMs;
        private final double slowCostMs;
        private final int slowSubtask;

        SleepSink(double costMs, double slowCostMs, int slowSubtask) {
            this.costMs = costMs;
            this.slowCostMs = slowCostMs;
            this.slowSubtask = slowSubtask;
        }

        @Override
        public SinkWriter<Event> createWriter(WriterInitContext context) throws IOException {
            int subtask = context.getTaskInfo().getIndexOfThisSubtask();
            Truth.sinkTaskName = context.getTaskInfo().getTaskName();
            Cost cost = new Cost(subtask == slowSubtask ? slowCostMs : costMs);
            return new SinkWriter<>() {
                @Override
                public void write(Event e, Context ctx) {
                    Truth.sinkRecords.incrementAndGet(subtask);
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
