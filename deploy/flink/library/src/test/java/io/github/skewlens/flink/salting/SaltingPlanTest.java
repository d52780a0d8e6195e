package io.github.skewlens.flink.salting;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Plan validation, table-driven: each case is a change to a valid plan and the reason expected. */
class SaltingPlanTest {
    static final String JOB = "a1b2c3d4e5f60718293a4b5c6d7e8f90";
    static final String TASK = "Window(TumblingEventTimeWindows(60000)) -> Sink";

    static ObjectNode valid() {
        return TestPlans.plan(JOB, TASK, 8, 128, 3, "customer-42", 3);
    }

    static ObjectNode hot(ObjectNode p) {
        return (ObjectNode) p.get("hot_keys").get(0);
    }

    static ObjectNode salted(ObjectNode p, int i) {
        return (ObjectNode) hot(p).get("salted").get(i);
    }

    @Test
    void parsesAValidPlan() throws Exception {
        ObjectNode p = valid();
        SaltingPlan plan = SaltingPlan.parse(TestPlans.bytes(p), JOB, TASK, 1 << 20);
        assertEquals(3, plan.version());
        assertEquals(8, plan.parallelism());
        assertEquals(128, plan.maxParallelism());
        assertEquals("#", plan.separator());
        assertEquals("engine", plan.source());
        assertEquals(TestPlans.saltedKeys(p, "customer-42"), plan.saltedKeys("customer-42"));
        assertEquals(List.of(), plan.saltedKeys("customer-7"));
    }

    @Test
    void readsTheDocsExampleWithGoEscapes() throws Exception {
        // Go escapes '>' as \u003e; the example's salted keys are routed for 8/128.
        String json = """
                {"job_id":"a1b2c3d4e5f60718293a4b5c6d7e8f90","job_name":"orders",
                 "task_name":"Window(TumblingEventTimeWindows(60000)) -\\u003e Sink",
                 "parallelism":8,"max_parallelism":128,"version":1,
                 "generated_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z",
                 "expires_at":"0001-01-01T00:00:00Z","separator":"#","source":"override","pinned":true,
                 "max_over_mean_before":3.52,"max_over_mean_after":1.21,"hot_keys":[]}""";
        SaltingPlan plan = SaltingPlan.parse(json.getBytes(StandardCharsets.UTF_8), JOB, TASK, 1 << 20);
        assertEquals(TASK, plan.taskName());
        assertTrue(plan.hotKeys().isEmpty());
    }

    @Test
    void separatorDefaultsToHashAndOtherSeparatorsWork() throws Exception {
        ObjectNode p = valid();
        p.remove("separator");
        assertEquals("#", SaltingPlan.parse(TestPlans.bytes(p), JOB, TASK, 1 << 20).separator());
        ObjectNode q = valid();
        q.put("separator", "~");
        var e = assertThrows(SaltingPlan.InvalidPlanException.class,
                () -> SaltingPlan.parse(TestPlans.bytes(q), JOB, TASK, 1 << 20));
        assertTrue(e.getMessage().contains("does not start with key + separator \"customer-42~\""), e.getMessage());
    }

    static Stream<Arguments> invalid() {
        return Stream.of(
                bad("not JSON", null, "not JSON"),
                bad("truncated", p -> {}, "not JSON", 20),
                bad("an array", null, "not a JSON object but an array", "[1,2]"),
                bad("a string", null, "not a JSON object but a string", "\"plan\""),
                bad("trailing bytes", null, "not JSON", valid().toString() + " {}"),
                bad("duplicate field", null, "not JSON", "{\"version\":1,\"version\":2}"),
                bad("no job_id", p -> p.remove("job_id"), "job_id: missing"),
                bad("job_id a number", p -> p.put("job_id", 7), "job_id: not a string but a number (7)"),
                bad("another job", p -> p.put("job_id", "ffff"), "job_id \"ffff\" is not this job's"),
                bad("another task", p -> p.put("task_name", "Sink"), "task_name \"Sink\" is not this task's"),
                bad("no version", p -> p.remove("version"), "version: missing"),
                bad("version a string", p -> p.put("version", "one"), "version: \"one\" is not an integer >= 0"),
                bad("version negative", p -> p.put("version", -1), "version: -1 is not an integer >= 0"),
                bad("version fractional", p -> p.put("version", 1.5), "version: 1.5 is not an integer >= 0"),
                bad("no parallelism", p -> p.remove("parallelism"), "parallelism: missing"),
                bad("parallelism a string", p -> p.put("parallelism", "8"), "parallelism: not an integer but a string"),
                bad("parallelism 0", p -> p.put("parallelism", 0), "parallelism 0/128 is not a pair Flink accepts"),
                bad("parallelism above max", p -> p.put("parallelism", 256), "parallelism 256/128 is not a pair"),
                bad("max parallelism too big", p -> p.put("max_parallelism", 65536), "8/65536 is not a pair"),
                bad("empty separator", p -> p.put("separator", ""), "separator: a string (\"\") is not a non-empty string"),
                bad("no hot_keys", p -> p.remove("hot_keys"), "hot_keys: missing"),
                bad("hot_keys a string", p -> p.put("hot_keys", "x"), "hot_keys: not an array but a string"),
                bad("hot_keys an object", p -> p.putObject("hot_keys"), "hot_keys: not an array but an object"),
                bad("hot key a number", p -> p.withArray("hot_keys").insert(0, 5), "hot key 0: not an object but a number"),
                bad("hot key without key", p -> hot(p).remove("key"), "hot key 0: key: missing"),
                bad("hot key twice", p -> p.withArray("hot_keys").add(hot(p).deepCopy()), "hot key \"customer-42\": listed twice"),
                bad("hot key on another subtask", p -> hot(p).put("subtask", (hot(p).get("subtask").asInt() + 1) % 8),
                        "but Flink routes the key to"),
                bad("no salted", p -> hot(p).remove("salted"), "hot key \"customer-42\": salted: missing"),
                bad("salted an object", p -> hot(p).putObject("salted"), "salted: not an array but an object"),
                bad("one salted key", p -> {
                    hot(p).withArray("salted").remove(2);
                    hot(p).withArray("salted").remove(1);
                    hot(p).remove("buckets");
                }, "hot key \"customer-42\": 1 salted key, need at least 2"),
                bad("no salted keys", p -> {
                    hot(p).withArray("salted").removeAll();
                    hot(p).remove("buckets");
                }, "0 salted keys, need at least 2"),
                bad("buckets differ", p -> hot(p).put("buckets", 4), "buckets 4 but 3 salted keys"),
                bad("salted key a string", p -> hot(p).withArray("salted").set(0, "customer-42#0"),
                        "salted key 0: not an object but a string"),
                bad("salted key without key", p -> salted(p, 1).remove("key"), "salted key 1: key: missing"),
                bad("salted key without prefix", p -> salted(p, 0).put("key", "customer-43#0"),
                        "salted key \"customer-43#0\" does not start with key + separator \"customer-42#\""),
                bad("salted key without salt", p -> salted(p, 0).put("key", "customer-42#"), "followed by a salt"),
                bad("salted key twice", p -> salted(p, 1).put("key", salted(p, 0).get("key").asText()), "listed twice"),
                bad("salted key routed elsewhere", p -> salted(p, 0).put("subtask", (salted(p, 0).get("subtask").asInt() + 1) % 8),
                        "but Flink routes it to key group"),
                bad("wrong key group", p -> salted(p, 0).put("key_group", (salted(p, 0).get("key_group").asInt() + 1) % 128),
                        "but Flink routes it to key group"),
                bad("no key_group", p -> salted(p, 2).remove("key_group"), "key_group: missing"),
                bad("subtask a string", p -> salted(p, 2).put("subtask", "1"), "subtask: not an integer but a string"),
                bad("more salts than subtasks", p -> {
                    ObjectNode q = TestPlans.plan(JOB, TASK, 2, 128, 3, "customer-42", 2);
                    ((ObjectNode) q.get("hot_keys").get(0)).withArray("salted").add(salted(p, 0).deepCopy());
                    p.removeAll();
                    p.setAll(q);
                    hot(p).remove("buckets");
                }, "3 salted keys, more than the parallelism 2"));
    }

    private static Arguments bad(String name, Consumer<ObjectNode> change, String reason) {
        return bad(name, change, reason, -1);
    }

    private static Arguments bad(String name, Consumer<ObjectNode> change, String reason, int truncate) {
        String json;
        if (change == null) {
            json = "{not json";
        } else {
            ObjectNode p = valid();
            change.accept(p);
            json = p.toString();
            if (truncate > 0) {
                json = json.substring(0, truncate);
            }
        }
        return Arguments.of(name, json, reason);
    }

    private static Arguments bad(String name, Consumer<ObjectNode> ignored, String reason, String json) {
        return Arguments.of(name, json, reason);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalid")
    void refusesInvalidPlans(String name, String json, String reason) {
        var e = assertThrows(SaltingPlan.InvalidPlanException.class,
                () -> SaltingPlan.parse(json.getBytes(StandardCharsets.UTF_8), JOB, TASK, 1 << 20));
        assertTrue(e.getMessage().contains(reason), () -> name + ": got \"" + e.getMessage() + "\", want \"" + reason + "\"");
    }

    @Test
    void refusesOversizedPlansAndEmptyBodies() {
        byte[] big = TestPlans.bytes(valid());
        var e = assertThrows(SaltingPlan.InvalidPlanException.class, () -> SaltingPlan.parse(big, JOB, TASK, 100));
        assertTrue(e.getMessage().contains("bytes, more than the limit of 100"), e.getMessage());
        var empty = assertThrows(SaltingPlan.InvalidPlanException.class, () -> SaltingPlan.parse(new byte[0], JOB, TASK, 100));
        assertTrue(empty.getMessage().contains("empty"), empty.getMessage());
        assertThrows(SaltingPlan.InvalidPlanException.class, () -> SaltingPlan.parse(null, JOB, TASK, 100));
    }

    @Test
    void invalidPlansCarryTheirVersionWhenReadable() {
        ObjectNode p = valid();
        hot(p).remove("salted");
        var e = assertThrows(SaltingPlan.InvalidPlanException.class,
                () -> SaltingPlan.parse(TestPlans.bytes(p), JOB, TASK, 1 << 20));
        assertEquals(3, e.version);
        var n = assertThrows(SaltingPlan.InvalidPlanException.class,
                () -> SaltingPlan.parse("nope".getBytes(StandardCharsets.UTF_8), JOB, TASK, 1 << 20));
        assertEquals(-1, n.version);
    }

    @Test
    void longKeysAreShortenedInMessages() {
        String key = "k".repeat(1000);
        ObjectNode p = TestPlans.plan(JOB, TASK, 8, 128, 1, key, 2);
        salted(p, 0).put("key", "x");
        var e = assertThrows(SaltingPlan.InvalidPlanException.class,
                () -> SaltingPlan.parse(TestPlans.bytes(p), JOB, TASK, 1 << 20));
        assertTrue(e.getMessage().length() < 400, e.getMessage());
    }
}
