package io.github.skewlens.flink.salting;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;

/**
 * Applies skewlens' salting plans to a stream:
 *
 * <pre>{@code
 * KeyedStream<Salted<Order>, String> keyed = Salting.apply(orders, o -> o.customerId,
 *         SaltingConfig.http("http://skewlens:8080", "Partial sums", 8, 128));
 * keyed.process(...).name("Partial sums").setParallelism(8).setMaxParallelism(128);
 * }</pre>
 *
 * <p>The keyed operator downstream must be the task the plans are for: its
 * name, parallelism and max parallelism those of the configuration. For the
 * usual shape (aggregate per salted key, then combine per original key)
 * see {@link TwoPhaseAggregation}, which sets all three.
 *
 * <p>These methods build the job graph and return at once; they validate
 * the configuration (IllegalArgumentException). Not thread-safe, like
 * building any Flink job graph.
 */
public final class Salting {
    private Salting() {}

    /**
     * Salts each record's key (see {@link Salter}) and keys the stream by the
     * salted key, the String itself (see {@link SaltedKeySelector}).
     */
    public static <T> KeyedStream<Salted<T>, String> apply(DataStream<T> stream, KeySelector<T, String> keyFn,
            SaltingConfig cfg) {
        return salt(stream, keyFn, cfg).keyBy(new SaltedKeySelector<>(), Types.STRING);
    }

    /**
     * Only the salting step: records with their salted key, not yet keyed.
     * It runs at the input's parallelism, so that it chains to the operator
     * before it; it holds no state, so it needs no uid.
     */
    public static <T> SingleOutputStreamOperator<Salted<T>> salt(DataStream<T> stream, KeySelector<T, String> keyFn,
            SaltingConfig cfg) {
        cfg.validate();
        return stream.map(new Salter<>(keyFn, cfg), Salted.typeInfo(stream.getType()))
                .name("Salt keys for " + cfg.taskName)
                .setParallelism(stream.getParallelism());
    }
}
