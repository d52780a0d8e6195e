package io.github.skewlens.flink.salting;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Checks shared by the salting integration tests. */
final class SaltingAssertions {
    private SaltingAssertions() {}

    /** Every row keeps its key. */
    static void assertUnsalted(List<TestJob.Row> rows, String what) {
        assertTrue(!rows.isEmpty(), what + ": no rows");
        for (TestJob.Row r : rows) {
            assertEquals(r.key(), r.saltedKey(), what + ": row " + r + " was salted");
        }
    }

    /**
     * Rows processed under the plan: the hot key is salted into exactly the
     * plan's salted keys, round-robin (one salter instance: counts differ by
     * at most one), each processed by the subtask the plan lists and Flink's
     * key-group assignment computes; other keys are unchanged.
     */
    static void assertSaltedAsPlanned(List<TestJob.Row> rows, ObjectNode plan, String what) {
        List<String> listed = TestPlans.saltedKeys(plan, TestJob.HOT);
        Map<String, Integer> counts = new HashMap<>();
        Set<Integer> hotSubtasks = new HashSet<>();
        for (TestJob.Row r : rows) {
            if (!r.key().equals(TestJob.HOT)) {
                assertEquals(r.key(), r.saltedKey(), what + ": a cold key was salted: " + r);
                continue;
            }
            assertTrue(listed.contains(r.saltedKey()), what + ": " + r + " not salted into " + listed);
            int flink = KeyGroupRangeAssignment.assignKeyToParallelOperator(r.saltedKey(), TestJob.MAX_P, TestJob.P);
            assertEquals(TestPlans.listedSubtask(plan, r.saltedKey()), flink, what + ": the plan lists another subtask");
            assertEquals(flink, r.subtask(), what + ": " + r + " processed on another subtask than Flink routes it to");
            counts.merge(r.saltedKey(), 1, Integer::sum);
            hotSubtasks.add(r.subtask());
        }
        assertEquals(new HashSet<>(listed), counts.keySet(), what + ": salted keys used");
        assertEquals(listed.size(), hotSubtasks.size(), what + ": the hot key's records spread over distinct subtasks");
        int min = counts.values().stream().min(Integer::compare).orElseThrow();
        int max = counts.values().stream().max(Integer::compare).orElseThrow();
        assertTrue(max - min <= 1, what + ": round robin uneven: " + counts);
    }
}
