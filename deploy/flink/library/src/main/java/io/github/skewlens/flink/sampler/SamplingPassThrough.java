package io.github.skewlens.flink.sampler;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.DataStreamUtils;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * A keyed pass-through that samples each record's key with a
 * {@link KeySampler} and forwards the record unchanged; {@link #sampleKeys}
 * puts it in front of a keyed operator, chained into the same task, so the
 * samples carry that task's name, id and subtask index:
 *
 * <pre>
 * KeyedStream&lt;Event, String&gt; keyed = SamplingPassThrough.sampleKeys(events.keyBy(Event::user), config);
 * keyed.window(...).aggregate(...);
 * </pre>
 *
 * <p>It costs a chained operator: a method call per record, plus a copy of
 * the record unless object reuse is enabled. Calling {@link KeySampler}
 * from your own keyed function costs only the sampling decision.
 *
 * <p>Thread safety: as any Flink function, one instance per subtask.
 */
public final class SamplingPassThrough<K, T> extends KeyedProcessFunction<K, T, T> {
    private static final long serialVersionUID = 1L;

    private final KeySampler.Config config;
    private transient KeySampler sampler;

    public SamplingPassThrough(KeySampler.Config config) {
        this.config = config;
    }

    /**
     * Samples the keys of keyed in a chained pass-through and returns a
     * stream keyed the same way, without a shuffle (reinterpreted as keyed,
     * which is exact because the records stay in their subtask). The
     * pass-through runs at the environment's default parallelism: when
     * the keyed operator after it has another parallelism, wire
     * {@code keyed.process(new SamplingPassThrough<>(config)).setParallelism(p)}
     * and {@link DataStreamUtils#reinterpretAsKeyedStream} yourself.
     */
    public static <K, T> KeyedStream<T, K> sampleKeys(KeyedStream<T, K> keyed, KeySampler.Config config) {
        DataStream<T> out = keyed.process(new SamplingPassThrough<K, T>(config), keyed.getType())
                .name("skewlens key sampler");
        return DataStreamUtils.reinterpretAsKeyedStream(out, keyed.getKeySelector(), keyed.getKeyType());
    }

    @Override
    public void open(OpenContext openContext) {
        sampler = KeySampler.open(getRuntimeContext(), config);
    }

    @Override
    public void processElement(T value, Context ctx, Collector<T> out) {
        sampler.sample(ctx.getCurrentKey());
        out.collect(value);
    }

    @Override
    public void close() {
        if (sampler != null) {
            sampler.close();
        }
    }
}
