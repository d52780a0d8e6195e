package io.github.skewlens.flink.kafka;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.Predicate;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.Property;

/**
 * Collects WARN and ERROR log lines of every logger while open, for tests
 * that assert a warning was logged. Thread-safe.
 */
public final class LogCapture extends AbstractAppender implements AutoCloseable {
    private final List<String> lines = new ArrayList<>();

    private LogCapture() {
        super("capture-" + UUID.randomUUID(), null, null, true, Property.EMPTY_ARRAY);
    }

    /** Starts capturing (attached to the root logger, which every logger reaches). */
    public static LogCapture open() {
        LogCapture c = new LogCapture();
        c.start();
        LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
        Configuration cfg = ctx.getConfiguration();
        cfg.getRootLogger().addAppender(c, Level.WARN, null);
        ctx.updateLoggers();
        return c;
    }

    @Override
    public void append(LogEvent e) {
        String s = e.getLevel() + " " + e.getLoggerName() + " " + e.getMessage().getFormattedMessage();
        synchronized (lines) {
            lines.add(s);
        }
    }

    /** The lines so far. */
    public List<String> lines() {
        synchronized (lines) {
            return new ArrayList<>(lines);
        }
    }

    /** Whether a line matching p was logged. */
    public boolean any(Predicate<String> p) {
        return lines().stream().anyMatch(p);
    }

    /** Waits up to timeoutMs for a matching line. */
    public boolean await(Predicate<String> p, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            if (any(p)) {
                return true;
            }
            Thread.sleep(50);
        }
        return any(p);
    }

    @Override
    public void close() {
        LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
        ctx.getConfiguration().getRootLogger().removeAppender(getName());
        ctx.updateLoggers();
        stop();
    }
}
