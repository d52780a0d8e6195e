package io.github.skewlens.flink.salting;

import java.util.Map;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;

/**
 * An updated result of {@link TwoPhaseAggregation} for one original key. A
 * Flink POJO (public fields, public no-arg constructor); not thread-safe,
 * like any record.
 */
public class KeyedResult<R> {
    /** The original key. */
    public String key;
    /** The aggregate over every record of the key so far. */
    public R result;

    /** For Flink's POJO serializer. */
    public KeyedResult() {}

    public KeyedResult(String key, R result) {
        this.key = key;
        this.result = result;
    }

    /** Flink type information of KeyedResult with results of resultType. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public static <R> TypeInformation<KeyedResult<R>> typeInfo(TypeInformation<R> resultType) {
        return (TypeInformation) Types.POJO(KeyedResult.class, Map.of("key", Types.STRING, "result", resultType));
    }

    @Override
    public String toString() {
        return key + "=" + result;
    }
}
