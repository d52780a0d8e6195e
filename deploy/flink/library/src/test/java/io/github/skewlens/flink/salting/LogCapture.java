package io.github.skewlens.flink.salting;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;

/** Captures the WARN (and above) lines of skewlens' loggers while open. */
final class LogCapture extends AbstractAppender implements AutoCloseable {
    private static final String LOGGER = "io.github.skewlens";
    private final List<String> lines = new CopyOnWriteArrayList<>();

    private LogCapture() {
        super("salting-test-capture-" + System.nanoTime(), null, null, true, Property.EMPTY_ARRAY);
    }

    static LogCapture open() {
        LogCapture c = new LogCapture();
        c.start();
        LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
        ctx.getConfiguration().getLoggerConfig(LOGGER).addAppender(c, Level.WARN, null);
        ctx.updateLoggers();
        return c;
    }

    @Override
    public void append(LogEvent e) {
        lines.add(e.getLevel() + " " + e.getMessage().getFormattedMessage());
    }

    /** The captured lines that contain every one of the parts. */
    List<String> matching(String... parts) {
        return lines.stream().filter(l -> {
            for (String p : parts) {
                if (!l.contains(p)) {
                    return false;
                }
            }
            return true;
        }).collect(Collectors.toList());
    }

    /**
     * Waits up to timeoutMs for a captured line that contains every one of
     * the parts (a client thread logs after it changed the state a test
     * saw), and returns whether one came.
     */
    boolean await(long timeoutMs, String... parts) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (matching(parts).isEmpty()) {
            if (System.currentTimeMillis() >= deadline) {
                return false;
            }
            Thread.sleep(10);
        }
        return true;
    }

    String all() {
        return String.join("\n", lines);
    }

    @Override
    public void close() {
        LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
        ctx.getConfiguration().getLoggerConfig(LOGGER).removeAppender(getName());
        ctx.updateLoggers();
        stop();
    }
}
