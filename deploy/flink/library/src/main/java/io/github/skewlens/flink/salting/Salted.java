package io.github.skewlens.flink.salting;

import java.util.Map;
import java.util.Objects;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;

/**
 * A record with the key it is routed by: {@code saltedKey} is one of the
 * plan's salted keys for a hot key, else the original {@code key} itself.
 * The salt is chosen once, by {@link Salter}, and stored here, so that the
 * {@link SaltedKeySelector} that Flink calls (more than once per record) is
 * deterministic.
 *
 * <p>A Flink POJO: public fields, a public no-arg constructor; use
 * {@link #typeInfo} for its type information (the value's type is generic).
 * Not thread-safe, like any record.
 */
public class Salted<T> {
    /** The original key, as the user's key selector returned it; report this one to skewlens' key sampler. */
    public String key;
    /** The key to route by: a salted key of the plan, or {@link #key}. */
    public String saltedKey;
    /** The record. */
    public T value;

    /** For Flink's POJO serializer. */
    public Salted() {}

    public Salted(String key, String saltedKey, T value) {
        this.key = key;
        this.saltedKey = saltedKey;
        this.value = value;
    }

    /** Whether the record was salted (its salted key is not its key). */
    public boolean isSalted() {
        return !Objects.equals(key, saltedKey);
    }

    /** Flink type information of Salted with values of valueType. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public static <T> TypeInformation<Salted<T>> typeInfo(TypeInformation<T> valueType) {
        return (TypeInformation) Types.POJO(Salted.class,
                Map.of("key", Types.STRING, "saltedKey", Types.STRING, "value", valueType));
    }

    @Override
    public String toString() {
        return "Salted{key=" + key + ", saltedKey=" + saltedKey + ", value=" + value + "}";
    }
}
