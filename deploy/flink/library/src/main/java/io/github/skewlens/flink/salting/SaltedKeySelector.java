package io.github.skewlens.flink.salting;

import org.apache.flink.api.java.functions.KeySelector;

/**
 * Keys a stream of {@link Salted} records by their salted key, the String
 * itself: skewlens routes salted keys with {@code String.hashCode}, and any
 * wrapper (a tuple, a POJO) would hash differently and land elsewhere.
 * Deterministic: it only reads the field {@link Salter} set.
 *
 * <p>Stateless and thread-safe.
 */
public final class SaltedKeySelector<T> implements KeySelector<Salted<T>, String> {
    private static final long serialVersionUID = 1L;

    @Override
    public String getKey(Salted<T> value) {
        return value.saltedKey;
    }
}
