package io.github.skewlens.flink.salting;

import org.slf4j.Logger;

/**
 * Rate-limits the WARN lines of one plan client: at most
 * {@value #PER_MINUTE} a minute, so that a topic full of bad messages or a
 * service that stays down cannot flood the TaskManager log, while the first
 * warnings of each kind still appear at once. The first line after a
 * suppressed stretch says how many were left out.
 *
 * <p>Thread safety: {@link #warn} may be called from any thread (it is
 * synchronized; it runs only on the client's own thread and on rare
 * events, never on the record path).
 */
final class WarnLimiter {
    static final int PER_MINUTE = 10;
    private static final long MINUTE_NANOS = 60_000_000_000L;

    private final Logger log;
    private long windowStart = Long.MIN_VALUE;
    private int inWindow;
    private long suppressed;

    WarnLimiter(Logger log) {
        this.log = log;
    }

    /** Logs msg at WARN unless {@value #PER_MINUTE} lines were logged in the current minute. */
    synchronized void warn(String msg) {
        long now = System.nanoTime();
        if (windowStart == Long.MIN_VALUE || now - windowStart >= MINUTE_NANOS) {
            windowStart = now;
            inWindow = 0;
        }
        if (inWindow >= PER_MINUTE) {
            suppressed++;
            return;
        }
        inWindow++;
        if (suppressed > 0) {
            log.warn("{} ({} similar warnings suppressed before this one)", msg, suppressed);
            suppressed = 0;
        } else {
            log.warn(msg);
        }
    }
}
