package io.github.skewlens.flink.scenario;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * What the job's own code saw, collected in static maps: the MiniCluster
 * runs the tasks in the JVM of {@link ScenarioJob} (the job has no jars,
 * so its classes come from the application class loader and these statics
 * are shared). One scenario per JVM: {@link #reset} clears them.
 */
final class Truth {
    private Truth() {}

    /** key -> the keyed subtask that processed it (first seen). */
    static final Map<String, Integer> ROUTING = new ConcurrentHashMap<>();
    /** The task name as the keyed subtasks saw it in their TaskInfo. */
    static volatile String keyedTaskName;
    static volatile String sinkTaskName;
    static volatile AtomicLongArray keyedRecords = new AtomicLongArray(0);
    static volatile AtomicLongArray sinkRecords = new AtomicLongArray(0);
    /** key -> subtask pairs seen on more than one subtask (must stay empty). */
    static final Map<String, String> CONFLICTS = new ConcurrentHashMap<>();

    static void reset(int parallelism) {
        ROUTING.clear();
        CONFLICTS.clear();
        keyedTaskName = null;
        sinkTaskName = null;
        keyedRecords = new AtomicLongArray(parallelism);
        sinkRecords = new AtomicLongArray(parallelism);
    }

    static void route(String key, int subtask) {
        Integer prev = ROUTING.putIfAbsent(key, subtask);
        if (prev != null && prev != subtask) {
            CONFLICTS.put(key, prev + "," + subtask);
        }
    }
}
