package io.github.skewlens.flink.scenario;

import java.util.concurrent.locks.LockSupport;

/**
 * A per-record cost made of sleep: each record owes some time, the owed
 * time accumulates and is slept off in steps of at least 1 ms with
 * {@link LockSupport#parkNanos}. The time actually slept is subtracted, so an
 * oversleep is credited to the next records and the long-run rate is exact.
 * Never spins: CI has 2 cores and a spinning subtask would steal them from
 * the others.
 *
 * <p>Flink counts the time its task thread spends in here as busy time, as it
 * would count a blocking call to a database.
 *
 * <p>Not thread safe: one per subtask, used by its task thread.
 */
final class Cost {
    private static final long MIN_PARK_NANOS = 1_000_000L;
    private long nanosPerRecord;
    private long owed;

    Cost(double msPerRecord) {
        set(msPerRecord);
    }

    /** Changes the cost of the next records (a sink that slows down); the time owed so far stays owed. */
    void set(double msPerRecord) {
        this.nanosPerRecord = Math.round(msPerRecord * 1_000_000.0);
    }

    /** Charges one record's cost, sleeping if 1 ms or more is owed. */
    void charge() {
        if (nanosPerRecord == 0) {
            return;
        }
        owed += nanosPerRecord;
        if (owed < MIN_PARK_NANOS) {
            return;
        }
        // A cancelled task is interrupted: parkNanos then returns at once,
        // and looping on it would spin. Drop the debt instead.
        if (Thread.currentThread().isInterrupted()) {
            owed = 0;
            return;
        }
        long start = System.nanoTime();
        LockSupport.parkNanos(owed);
        owed -= System.nanoTime() - start;
        // Never carry more than one step of credit: a long pause (GC, a
        // descheduled thread) is not paid back with records for free.
        if (owed < -MIN_PARK_NANOS) {
            owed = -MIN_PARK_NANOS;
        }
    }
}
