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

    /**
     * A short checkpoint_timeout run: checkpoints every second with a 2 s
     * timeout, and a sink subtask that goes from 2 ms a record (it keeps up)
     * to 12 ms (about 12 s per checkpoint once its queue is full). The truth
     * has every checkpoint as Flink's REST API reported it: the first ones
     * complete in well under the timeout, later ones expire.
     */
    @Test
    @SuppressWarnings("unchecked")
    void checkpointRunRecordsEveryCheckpoint(@TempDir Path out) throws Exception {
        ScenarioOptions o = ScenarioOptions.parse(new String[] {
            "--scenario", "checkpoint_timeout", "--duration", "20s", "--checkpoint-interval", "1s",
            "--checkpoint-timeout", "2s", "--sink-steps", "0s=2,8s=12", "--out", out.toString()});
        assertEquals(0, ScenarioJob.run(o, new CountDownLatch(1)));

        Map<String, Object> truth = new ObjectMapper().readValue(out.resolve("truth.json").toFile(), Map.class);
        assertEquals(2000, ((Number) truth.get("checkpoint_timeout_ms")).intValue());
        assertEquals(2, ((List<?>) truth.get("sink_steps")).size());
        List<Map<String, Object>> cps = (List<Map<String, Object>>) truth.get("checkpoints");
        assertTrue(cps.size() >= 5, "checkpoints: " + cps);
        assertEquals("COMPLETED", cps.get(0).get("status"), cps.get(0).toString());
        long prev = 0;
        int timedOut = 0;
        for (Map<String, Object> c : cps) {
            long id = ((Number) c.get("id")).longValue();
            assertTrue(id > prev, "ids " + cps);
            prev = id;
            assertTrue(((Number) c.get("trigger_timestamp")).longValue() >= ((Number) truth.get("started_at_ms")).longValue());
            if (Boolean.TRUE.equals(c.get("timed_out"))) {
                timedOut++;
                assertEquals("FAILED", c.get("status"));
                assertEquals(CheckpointLog.EXPIRED, c.get("failure_message"));
                assertTrue(((Number) c.get("end_to_end_duration")).longValue() >= 2000, c.toString());
            }
            if ("COMPLETED".equals(c.get("status"))) {
                Map<String, List<Number>> delay = (Map<String, List<Number>>) c.get("start_delay_ms");
                assertEquals(4, delay.get("sink: Writer").size(), c.toString());
            }
        }
        assertTrue(timedOut > 0, "no checkpoint timed out: " + cps);
        Map<String, Object> first = (Map<String, Object>) truth.get("first_timed_out_checkpoint");
        assertNotNull(first);
        // Flink's raw replies: one line per checkpoint.
        assertEquals(cps.size(), Files.readAllLines(out.resolve("checkpoints.jsonl")).size());
    }
}
