package io.github.skewlens.flink.scenario;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A short hot_key run of {@link ScenarioJob} in this JVM, no reporters: it
 * starts, stops at --duration, and its truth files agree with Flink's key
 * routing and with the skew it was asked for.
 */
class ScenarioJobTest {
    @Test
    void hotKeyRunWritesTruth(@TempDir Path out) throws Exception {
        ScenarioOptions o = ScenarioOptions.parse(new String[] {
            "--scenario", "hot_key", "--duration", "12s", "--checkpoint-interval", "0", "--out", out.toString()});
        int rc = ScenarioJob.run(o, new CountDownLatch(1));
        assertEquals(0, rc);

        @SuppressWarnings("unchecked")
        Map<String, Object> truth = new ObjectMapper().readValue(out.resolve("truth.json").toFile(), Map.class);
        int want = KeyGroupRangeAssignment.assignKeyToParallelOperator("customer-42", 128, 4);
        assertEquals(want, truth.get("hot_key_subtask"));
        assertEquals(want, truth.get("hot_key_subtask_computed"));
        assertEquals("KeyedProcess -> enrich", truth.get("keyed_task_name"));
        assertEquals("sink: Writer", truth.get("sink_task_name"));
        assertEquals(0, truth.get("keys_on_several_subtasks"));
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> tasks = (List<Map<String, Object>>) truth.get("tasks");
        assertEquals(List.of("Source: gen", "KeyedProcess -> enrich", "sink: Writer"),
                tasks.stream().map(t -> t.get("task_name")).toList());
        assertNotNull(truth.get("ready_at_ms"));

        // The hot subtask did far more records than any other (sleep-bound at 1 ms each).
        @SuppressWarnings("unchecked")
        List<Number> keyed = (List<Number>) truth.get("keyed_records");
        long hot = keyed.get(want).longValue();
        for (int i = 0; i < keyed.size(); i++) {
            if (i != want) {
                assertTrue(hot > 2 * keyed.get(i).longValue(), "keyed records " + keyed);
            }
        }
        // Every routed key went where Flink's routing says.
        List<String> lines = Files.readAllLines(out.resolve("routing.jsonl"));
        assertTrue(lines.size() > 900, "routing lines: " + lines.size());
        ObjectMapper m = new ObjectMapper();
        for (String l : lines) {
            @SuppressWarnings("unchecked")
            Map<String, Object> r = m.readValue(l, Map.class);
            assertEquals(KeyGroupRangeAssignment.assignKeyToParallelOperator(r.get("key"), 128, 4), r.get("subtask"), l);
            assertEquals("KeyedProcess -> enrich", r.get("task_name"));
        }
    }
}
