package io.github.skewlens.flink.salting;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;

/** Builds plans as skewlens publishes them, routed with Flink's own key-group assignment. */
final class TestPlans {
    static final ObjectMapper JSON = new ObjectMapper();

    private TestPlans() {}

    /**
     * The first n salted keys key#i whose subtasks differ from each other
     * and (when there are enough subtasks) from the key's own subtask, as the
     * engine picks them.
     */
    static List<String> salts(String key, int n, int p, int maxP) {
        int home = KeyGroupRangeAssignment.assignKeyToParallelOperator(key, maxP, p);
        Set<Integer> used = new HashSet<>();
        if (n < p) {
            used.add(home);
        }
        List<String> out = new ArrayList<>();
        for (int i = 0; out.size() < n; i++) {
            String s = key + "#" + i;
            if (used.add(KeyGroupRangeAssignment.assignKeyToParallelOperator(s, maxP, p))) {
                out.add(s);
            }
        }
        return out;
    }

    static int subtask(String key, int p, int maxP) {
        return KeyGroupRangeAssignment.assignKeyToParallelOperator(key, maxP, p);
    }

    /** A plan for job/task at p/maxP with the given hot keys and their salted keys. */
    static ObjectNode plan(String job, String task, int p, int maxP, long version, Map<String, List<String>> hot) {
        ObjectNode n = JSON.createObjectNode();
        n.put("job_id", job);
        n.put("job_name", "test");
        n.put("task_name", task);
        n.put("parallelism", p);
        n.put("max_parallelism", maxP);
        n.put("version", version);
        n.put("generated_at", "2026-01-01T00:00:00Z");
        n.put("updated_at", "2026-01-01T00:00:00Z");
        n.put("expires_at", "2026-01-01T00:10:00Z");
        n.put("separator", "#");
        n.put("source", "engine");
        n.put("max_over_mean_before", 2.0);
        n.put("max_over_mean_after", 1.1);
        ArrayNode keys = n.putArray("hot_keys");
        for (Map.Entry<String, List<String>> e : hot.entrySet()) {
            ObjectNode k = keys.addObject();
            k.put("key", e.getKey());
            k.put("share", 0.5);
            k.put("subtask", subtask(e.getKey(), p, maxP));
            k.put("buckets", e.getValue().size());
            ArrayNode salted = k.putArray("salted");
            for (String s : e.getValue()) {
                ObjectNode t = salted.addObject();
                t.put("key", s);
                int kg = KeyGroupRangeAssignment.assignToKeyGroup(s, maxP);
                t.put("key_group", kg);
                t.put("subtask", KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup(maxP, p, kg));
            }
            k.put("predicted_load_before", 2.0);
            k.put("predicted_load_after", 0.7);
            k.put("last_hot_at", "2026-01-01T00:00:00Z");
        }
        return n;
    }

    /** One hot key with n salted keys. */
    static ObjectNode plan(String job, String task, int p, int maxP, long version, String hotKey, int n) {
        Map<String, List<String>> hot = new LinkedHashMap<>();
        hot.put(hotKey, salts(hotKey, n, p, maxP));
        return plan(job, task, p, maxP, version, hot);
    }

    static byte[] bytes(ObjectNode n) {
        return n.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** The salted keys listed in a plan for a key. */
    static List<String> saltedKeys(ObjectNode plan, String key) {
        List<String> out = new ArrayList<>();
        plan.get("hot_keys").forEach(k -> {
            if (k.get("key").asText().equals(key)) {
                k.get("salted").forEach(s -> out.add(s.get("key").asText()));
            }
        });
        return out;
    }

    /** The subtask a plan lists for a salted key. */
    static int listedSubtask(ObjectNode plan, String saltedKey) {
        for (var k : plan.get("hot_keys")) {
            for (var s : k.get("salted")) {
                if (s.get("key").asText().equals(saltedKey)) {
                    return s.get("subtask").asInt();
                }
            }
        }
        throw new AssertionError("salted key " + saltedKey + " not in the plan");
    }
}
