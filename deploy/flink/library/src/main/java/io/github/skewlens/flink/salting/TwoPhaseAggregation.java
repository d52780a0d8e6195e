package io.github.skewlens.flink.salting;

import java.util.Map;
import java.util.Objects;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichFunction;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.typeutils.TypeExtractor;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Two-phase aggregation with salting: the shape that lets a job apply
 * skewlens' plans without changing its results.
 *
 * <ol>
 *   <li>Salt (see {@link Salting}), key by the salted key, and add records
 *       to partial accumulators ({@link AggregateFunction#add}); every
 *       {@link TwoPhaseConfig#flushInterval} and at the end of input, send
 *       each partial with its original key. This is the keyed task skewlens
 *       diagnoses and the plans target: it is named
 *       {@code cfg.salting.taskName} and runs at the configuration's
 *       parallelism and max parallelism. Its {@link PerRecord} hook sees
 *       every record's original key.
 *   <li>Key by the original key and merge the partials
 *       ({@link AggregateFunction#merge}) into one accumulator per key;
 *       emit a {@link KeyedResult} ({@link AggregateFunction#getResult}) per
 *       partial received, the key's result so far.
 * </ol>
 *
 * <p>Because phase 2 regroups by the original key, every key's result is
 * the same with or without a plan, and while plans change; only where a hot
 * key's records are added up moves. Without a plan it behaves like one
 * phase (every record keeps its key), so deploy it once and let plans come
 * and go. Results arrive up to one flush interval after their records and
 * carry no timestamps, but for those of the flush at the end of input
 * (or of a stop with {@code --drain}), which carry {@code Long.MAX_VALUE},
 * the end-of-input watermark's; phase 2 keeps one accumulator per key for the life
 * of the job, like any non-windowed aggregation. Operator uids are
 * {@code skewlens-partial-v2:TASK} and {@code skewlens-merge:TASK}.
 *
 * <p>Like {@code WindowedStream.aggregate}, the AggregateFunction must not
 * be a RichFunction; work that needs the RuntimeContext goes into the
 * {@link PerRecord} hook. Building the graph validates the configuration
 * (IllegalArgumentException) and returns at once; not thread-safe, like
 * building any Flink job graph.
 */
public final class TwoPhaseAggregation {
    private TwoPhaseAggregation() {}

    /**
     * Aggregates input per key (keyFn) with agg, in two phases; accumulator
     * and result types are extracted from agg.
     */
    public static <T, ACC, OUT> SingleOutputStreamOperator<KeyedResult<OUT>> aggregate(DataStream<T> input,
            KeySelector<T, String> keyFn, AggregateFunction<T, ACC, OUT> agg, TwoPhaseConfig cfg) {
        TypeInformation<ACC> accType = TypeExtractor.getAggregateFunctionAccumulatorType(
                agg, input.getType(), "TwoPhaseAggregation", false);
        TypeInformation<OUT> outType = TypeExtractor.getAggregateFunctionReturnType(
                agg, input.getType(), "TwoPhaseAggregation", false);
        return aggregate(input, keyFn, agg, accType, outType, cfg);
    }

    /** As {@link #aggregate(DataStream, KeySelector, AggregateFunction, TwoPhaseConfig)}, with explicit types. */
    public static <T, ACC, OUT> SingleOutputStreamOperator<KeyedResult<OUT>> aggregate(DataStream<T> input,
            KeySelector<T, String> keyFn, AggregateFunction<T, ACC, OUT> agg, TypeInformation<ACC> accType,
            TypeInformation<OUT> outType, TwoPhaseConfig cfg) {
        Objects.requireNonNull(agg, "aggregate function");
        cfg.validate();
        if (agg instanceof RichFunction) {
            throw new IllegalArgumentException("two-phase: the AggregateFunction must not be a RichFunction; "
                    + "put work that needs the RuntimeContext into TwoPhaseConfig.perRecord");
        }
        SaltingConfig s = cfg.salting;
        KeyedStream<Salted<T>, String> salted = Salting.apply(input, keyFn, s);
        SingleOutputStreamOperator<Partial<ACC>> partials = salted
                .process(new PartialAggregateFunction<>(agg, accType, cfg.flushInterval.toMillis(), cfg.perRecord),
                        Partial.typeInfo(accType))
                .name(s.taskName)
                // -v2: phase 1 was an operator with timers of its own
                // (InternalPartialAggregateOperator in the tests); its
                // savepoints hold partials that no timer of the function
                // would flush. With a new uid, restoring one fails unless
                // --allowNonRestoredState drops them (at most one flush
                // interval of partials; phase 2's results restore).
                .uid("skewlens-partial-v2:" + s.taskName)
                .setParallelism(s.parallelism)
                .setMaxParallelism(s.maxParallelism);
        SingleOutputStreamOperator<KeyedResult<OUT>> merged = partials
                .keyBy(new PartialKey<>(), Types.STRING)
                .process(new MergePartials<>(agg, accType), KeyedResult.typeInfo(outType))
                .name(cfg.mergeNameOrDefault())
                .uid("skewlens-merge:" + s.taskName);
        if (cfg.mergeParallelism > 0) {
            merged.setParallelism(cfg.mergeParallelism);
        }
        return merged;
    }

    /**
     * A partial accumulator of one original key, from phase 1 to phase 2. A
     * Flink POJO; public only because Flink's POJO serializer needs it.
     */
    public static class Partial<ACC> {
        /** The original key. */
        public String key;
        /** The partial accumulator. */
        public ACC acc;

        public Partial() {}

        public Partial(String key, ACC acc) {
            this.key = key;
            this.acc = acc;
        }

        @SuppressWarnings({"unchecked", "rawtypes"})
        static <ACC> TypeInformation<Partial<ACC>> typeInfo(TypeInformation<ACC> accType) {
            return (TypeInformation) Types.POJO(Partial.class, Map.of("key", Types.STRING, "acc", accType));
        }
    }

    /** Phase 2's key: the original key, the String itself. Stateless. */
    static final class PartialKey<ACC> implements KeySelector<Partial<ACC>, String> {
        private static final long serialVersionUID = 1L;

        @Override
        public String getKey(Partial<ACC> p) {
            return p.key;
        }
    }

    /** Phase 2: merges partials per original key and emits the key's result so far. Task thread only. */
    static final class MergePartials<ACC, OUT> extends KeyedProcessFunction<String, Partial<ACC>, KeyedResult<OUT>> {
        private static final long serialVersionUID = 1L;

        private final AggregateFunction<?, ACC, OUT> agg;
        private final TypeInformation<ACC> accType;
        private transient ValueState<ACC> merged;

        MergePartials(AggregateFunction<?, ACC, OUT> agg, TypeInformation<ACC> accType) {
            this.agg = agg;
            this.accType = accType;
        }

        @Override
        public void open(OpenContext openContext) {
            merged = getRuntimeContext().getState(new ValueStateDescriptor<>("skewlens-merged", accType));
        }

        @Override
        public void processElement(Partial<ACC> p, Context ctx, Collector<KeyedResult<OUT>> out) throws Exception {
            ACC acc = merged.value();
            acc = agg.merge(acc == null ? agg.createAccumulator() : acc, p.acc);
            merged.update(acc);
            out.collect(new KeyedResult<>(ctx.getCurrentKey(), agg.getResult(acc)));
        }
    }
}
