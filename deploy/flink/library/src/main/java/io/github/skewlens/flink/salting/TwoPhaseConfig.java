package io.github.skewlens.flink.salting;

import java.io.Serializable;
import java.time.Duration;
import java.util.Objects;

/**
 * How {@link TwoPhaseAggregation} runs. Defaults are stated once, on each
 * field. Thread safety: a mutable value; do not change it after building
 * the job graph.
 */
public final class TwoPhaseConfig implements Serializable {
    private static final long serialVersionUID = 1L;

    /**
     * The plans and the keyed task they are for; required. Its task name is
     * phase 1's operator name (stable: it is what skewlens sees and what
     * the plans target), and its parallelism and max parallelism are phase
     * 1's.
     */
    public SaltingConfig salting;

    /** How often phase 1 sends its partial accumulators to phase 2 (processing time); default 1 s (at least 1 ms). */
    public Duration flushInterval = Duration.ofSeconds(1);

    /** Called in phase 1 for every record with its original key; default {@link PerRecord#NONE}. */
    public PerRecord perRecord = PerRecord.NONE;

    /** Phase 2's operator name; default null: the task name followed by " (merge)". */
    public String mergeName;

    /** Phase 2's parallelism; default 0: the environment's. */
    public int mergeParallelism;

    /** Use {@link #of}; public for serialization frameworks. */
    public TwoPhaseConfig() {}

    /** A configuration with the given salting and the defaults. */
    public static TwoPhaseConfig of(SaltingConfig salting) {
        TwoPhaseConfig c = new TwoPhaseConfig();
        c.salting = salting;
        return c;
    }

    /** Throws IllegalArgumentException naming the first invalid field. */
    public void validate() {
        if (salting == null) {
            throw new IllegalArgumentException("two-phase: salting config is required");
        }
        salting.validate();
        if (flushInterval == null || flushInterval.toMillis() < 1) {
            throw new IllegalArgumentException("two-phase: flush interval must be >= 1 ms");
        }
        if (perRecord == null) {
            throw new IllegalArgumentException("two-phase: per-record hook must not be null (use PerRecord.NONE)");
        }
        if (mergeName != null && mergeName.isEmpty()) {
            throw new IllegalArgumentException("two-phase: merge name must not be empty");
        }
        if (mergeParallelism < 0) {
            throw new IllegalArgumentException("two-phase: merge parallelism must be >= 0, got " + mergeParallelism);
        }
    }

    String mergeNameOrDefault() {
        return Objects.requireNonNullElse(mergeName, salting.taskName + " (merge)");
    }
}
