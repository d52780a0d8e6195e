package io.github.skewlens.flink.scenario;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * What the job's own code saw, collected in static maps: the MiniCluster
 * runs the tasks in the JVM of {@link ScenarioJob} (the job has no jars,
 * so its classes come from the application class loader and these statics
 * are shared). One scenario per JVM: {@link #reset} clears them.
 */
final class Truth {
    private Truth() {}

    /** key -> (keyed subtask -> records of the key it processed). */
    static final Map<String, Map<Integer, AtomicLong>> ROUTING = new ConcurrentHashMap<>();
    /** The task name as the keyed subtasks saw it in their TaskInfo. */
    static volatile String keyedTaskName;
    static volatile String sinkTaskName;
    static volatile AtomicLongArray keyedRecords = new AtomicLongArray(0);
    static volatile AtomicLongArray sinkRecords = new AtomicLongArray(0);

    static void reset(int parallelism) {
        ROUTING.clear();
        keyedTaskName = null;
        sinkTaskName = null;
        keyedRecords = new AtomicLongArray(parallelism);
        sinkRecords = new AtomicLongArray(parallelism);
    }

    /** Counts one record of key on a keyed subtask (its original key, when salted). */
    static void route(String key, int subtask) {
        ROUTING.computeIfAbsent(key, k -> new ConcurrentHashMap<>())
                .computeIfAbsent(subtask, s -> new AtomicLong()).incrementAndGet();
        keyedRecords.incrementAndGet(subtask);
    }

    /** A snapshot of ROUTING, sorted by key and subtask. */
    static TreeMap<String, TreeMap<Integer, Long>> routing() {
        TreeMap<String, TreeMap<Integer, Long>> m = new TreeMap<>();
        for (Map.Entry<String, Map<Integer, AtomicLong>> e : ROUTING.entrySet()) {
            TreeMap<Integer, Long> per = new TreeMap<>();
            e.getValue().forEach((s, n) -> per.put(s, n.get()));
            m.put(e.getKey(), per);
        }
        return m;
    }
}
