package io.github.skewlens.flink.salting;

import java.util.Map;
import java.util.TreeMap;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Phase 1 of TwoPhaseAggregation in Flink's operator test harness: its
 * timers (an interval flush, the end-of-input flush, none left for a key
 * without partials) and the timestamps of what each flush emits.
 */
class PartialAggregateFunctionTest {
    private static final long FLUSH = 1_000;

    private static KeyedOneInputStreamOperatorTestHarness<String, Salted<Long>, TwoPhaseAggregation.Partial<Long>> harness(
            OneInputStreamOperator<Salted<Long>, TwoPhaseAggregation.Partial<Long>> op) throws Exception {
        var h = new KeyedOneInputStreamOperatorTestHarness<>(op, new SaltedKeySelector<>(), Types.STRING, 128, 1, 0);
        h.setup(PartialAggregateJmh.partialSerializer());
        return h;
    }

    private static OneInputStreamOperator<Salted<Long>, TwoPhaseAggregation.Partial<Long>> function() {
        return new KeyedProcessOperator<>(
                new PartialAggregateFunction<>(new PartialAggregateJmh.Sum(), Types.LONG, FLUSH, PerRecord.NONE));
    }

    private static Salted<Long> rec(String key, String salted, long v) {
        return new Salted<>(key, salted, v);
    }

    /** The partials emitted so far (original key → sum) and, per key, whether it carried Long.MAX_VALUE; clears the output. */
    private static Map<String, Long> drain(KeyedOneInputStreamOperatorTestHarness<String, Salted<Long>,
            TwoPhaseAggregation.Partial<Long>> h, Map<String, Boolean> stamped) {
        Map<String, Long> got = new TreeMap<>();
        for (StreamRecord<? extends TwoPhaseAggregation.Partial<Long>> r : h.extractOutputStreamRecords()) {
            got.merge(r.getValue().key, r.getValue().acc, Long::sum);
            if (stamped != null) {
                stamped.put(r.getValue().key, r.hasTimestamp() && r.getTimestamp() == Long.MAX_VALUE);
            }
        }
        h.getOutput().clear();
        return got;
    }

    @Test
    void flushesEachIntervalThenAtTheEndOfInput() throws Exception {
        try (var h = harness(function())) {
            h.open();
            h.setProcessingTime(10);
            h.processElement(rec("a", "a", 1), 5);
            h.processElement(rec("a", "a", 2), 6);
            h.processElement(rec("hot", "hot#1", 3), 7);
            h.processElement(rec("hot", "hot#2", 4), 8);
            // A data key equal to another key's salted key keeps its own sum.
            h.processElement(rec("hot#1", "hot#1", 10), 9);
            assertEquals(3, h.numProcessingTimeTimers(), "one flush timer per salted key");
            assertEquals(3, h.numEventTimeTimers(), "one end-of-input timer per salted key");

            Map<String, Boolean> stamped = new TreeMap<>();
            h.setProcessingTime(FLUSH);
            assertEquals(Map.of("a", 3L, "hot", 7L, "hot#1", 10L), drain(h, stamped));
            assertFalse(stamped.containsValue(true), "interval flushes carry no timestamp: " + stamped);
            assertEquals(0, h.numEventTimeTimers(), "no timer is left for keys without partials");
            assertEquals(0, h.numProcessingTimeTimers());

            h.processElement(rec("a", "a", 5), 20);
            h.processWatermark(Long.MAX_VALUE);
            assertEquals(Map.of("a", 5L), drain(h, stamped));
            assertTrue(stamped.get("a"), "the end-of-input flush carries the timer's timestamp");
        }
    }
}
