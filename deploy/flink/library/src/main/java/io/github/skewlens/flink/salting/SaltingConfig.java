package io.github.skewlens.flink.salting;

import java.io.Serializable;
import java.net.URI;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * Where a job reads the salting plan of one keyed task, and what that task
 * runs at. Defaults are stated once, on each field.
 *
 * <p>Build one with {@link #http} or {@link #kafka}, change fields as
 * needed, and hand it to {@link Salting}. It is serialized with the job
 * graph; {@link #validate()} runs when the job graph is built, so a bad
 * configuration fails in the client, never in a Flink task.
 *
 * <p>Thread safety: a configuration is a mutable value; do not change it
 * after handing it to {@link Salting}.
 */
public final class SaltingConfig implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Where plans come from. */
    public enum Source {
        /** {@code GET {baseUrl}/v1/salting/{job_id}/{task_name}} of {@code skewlens serve}, polled with ETags. */
        HTTP,
        /** The compacted plans topic that {@code skewlens run} publishes, read from the beginning. */
        KAFKA
    }

    /** The source; set by {@link #http} or {@link #kafka}. */
    public Source source;

    /**
     * The name of the keyed task the plans are for, exactly as skewlens sees
     * it in Flink's metrics (the operator name of the keyed operator, or of
     * its chain); required.
     */
    public String taskName;

    /** The keyed operator's parallelism; required (at least 1). */
    public int parallelism;

    /** The keyed operator's max parallelism; required (parallelism to 32768). */
    public int maxParallelism;

    /**
     * The Flink job id the plans are for; default null: the id of the
     * running job (what skewlens sees in the job's metrics).
     */
    public String jobId;

    /**
     * The Flink job name the plans are for; default null: the name of the
     * running job. With it, a new run of the job (a new job id) is served
     * the plans of the job's newest run until it has its own (see
     * docs/salting-plans.md, "A resubmitted job"); empty: not sent, no such
     * plans.
     */
    public String jobName;

    /** HTTP: the base URL of {@code skewlens serve}, e.g. {@code http://skewlens:8080}; required for HTTP. */
    public String baseUrl;

    /** HTTP: a bearer token sent with every poll; default null (none; plan reads need no token). */
    public String bearerToken;

    /** HTTP: time between polls; default 5 s (at least 50 ms). */
    public Duration pollInterval = Duration.ofSeconds(5);

    /** Kafka: bootstrap servers; required for Kafka. */
    public String bootstrapServers;

    /** Kafka: the plans topic; default {@code skewlens.salting-plans}. */
    public String topic = "skewlens.salting-plans";

    /**
     * Kafka: extra consumer settings (for example security); they win over
     * the client's own. {@code group.id} is refused: the client reads every
     * partition from the beginning without a group.
     */
    public Map<String, String> consumer = new HashMap<>();

    /**
     * Bound of one network call: an HTTP poll (connect and read each), or a
     * Kafka metadata or offsets request; default 5 s (at least 100 ms).
     */
    public Duration requestTimeout = Duration.ofSeconds(5);

    /**
     * How long the source may be unreachable before the plan may be
     * dropped; default 30 s (at least 0). Past it the plan stays in force
     * until its own {@code expires_at}, read on this JVM's clock: what
     * skewlens would do without a confirming finding, and the source that
     * retires plans is away. A pinned or overridden plan (it does not
     * expire) stays until the source answers; a plan without a readable
     * {@code expires_at} goes after the grace.
     *
     * <p>Why a grace as well: {@code expires_at} is skewlens' event time
     * (window ends, from the reporters' clocks), which lags the wall clock
     * by skewlens' delay; a plan read from a skewlens catching up may look
     * expired already. Dropping a plan re-keys the hot keys (and applying
     * it again re-keys them back), so one failed poll, a restart of
     * {@code skewlens serve} or a broker failover must not do it. Thirty
     * seconds is six polls at the default interval.
     */
    public Duration unreachableGrace = Duration.ofSeconds(30);

    /**
     * How long a subtask's {@code open()} waits for the source's first
     * answer (HTTP: the first poll; Kafka: reading the topic up to its end),
     * so that a (re)started job does not send hot keys unsalted and re-key
     * them a moment later; default 5 s (0: do not wait). The wait is once
     * per shared client, never on the record path.
     */
    public Duration startupWait = Duration.ofSeconds(5);

    /** Plans larger than this (bytes of JSON) are ignored; default 1 MiB (at least 1 KiB). */
    public int maxPlanBytes = 1 << 20;

    /** Use {@link #http} or {@link #kafka}; public for serialization frameworks. */
    public SaltingConfig() {}

    /**
     * Plans from {@code skewlens serve} at baseUrl, for the keyed task
     * taskName that runs at parallelism / maxParallelism.
     */
    public static SaltingConfig http(String baseUrl, String taskName, int parallelism, int maxParallelism) {
        SaltingConfig c = new SaltingConfig();
        c.source = Source.HTTP;
        c.baseUrl = baseUrl;
        c.taskName = taskName;
        c.parallelism = parallelism;
        c.maxParallelism = maxParallelism;
        return c;
    }

    /**
     * Plans from the plans topic of the Kafka cluster at bootstrapServers,
     * for the keyed task taskName that runs at parallelism / maxParallelism.
     */
    public static SaltingConfig kafka(String bootstrapServers, String taskName, int parallelism, int maxParallelism) {
        SaltingConfig c = new SaltingConfig();
        c.source = Source.KAFKA;
        c.bootstrapServers = bootstrapServers;
        c.taskName = taskName;
        c.parallelism = parallelism;
        c.maxParallelism = maxParallelism;
        return c;
    }

    /** Throws IllegalArgumentException naming the first invalid field. */
    public void validate() {
        if (source == null) {
            throw new IllegalArgumentException("salting: source is required (use SaltingConfig.http or .kafka)");
        }
        if (taskName == null || taskName.isEmpty()) {
            throw new IllegalArgumentException("salting: task name is required");
        }
        if (parallelism < 1) {
            throw new IllegalArgumentException("salting: parallelism must be >= 1, got " + parallelism);
        }
        if (maxParallelism < parallelism || maxParallelism > SaltingPlan.MAX_MAX_PARALLELISM) {
            throw new IllegalArgumentException("salting: max parallelism must be in [parallelism, "
                    + SaltingPlan.MAX_MAX_PARALLELISM + "], got " + parallelism + "/" + maxParallelism);
        }
        if (jobId != null && (jobId.isEmpty() || jobId.contains("/"))) {
            throw new IllegalArgumentException("salting: job id must be non-empty without '/', got \"" + jobId + "\"");
        }
        if (jobName != null && jobName.length() > 1024) {
            throw new IllegalArgumentException("salting: job name must be at most 1024 characters");
        }
        if (requestTimeout == null || requestTimeout.toMillis() < 100) {
            throw new IllegalArgumentException("salting: request timeout must be >= 100 ms");
        }
        if (unreachableGrace == null || unreachableGrace.isNegative()) {
            throw new IllegalArgumentException("salting: unreachable grace must be >= 0");
        }
        if (startupWait == null || startupWait.isNegative()) {
            throw new IllegalArgumentException("salting: startup wait must be >= 0");
        }
        if (maxPlanBytes < 1024) {
            throw new IllegalArgumentException("salting: max plan bytes must be >= 1024, got " + maxPlanBytes);
        }
        switch (source) {
            case HTTP -> {
                if (baseUrl == null || baseUrl.isBlank()) {
                    throw new IllegalArgumentException("salting: base URL is required for the HTTP source");
                }
                URI u;
                try {
                    u = URI.create(baseUrl.trim());
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("salting: base URL " + baseUrl + ": " + e.getMessage(), e);
                }
                if (!"http".equalsIgnoreCase(u.getScheme()) && !"https".equalsIgnoreCase(u.getScheme())
                        || u.getHost() == null) {
                    throw new IllegalArgumentException("salting: base URL must be http(s)://host[:port][/path], got " + baseUrl);
                }
                if (u.getRawQuery() != null || u.getRawFragment() != null) {
                    throw new IllegalArgumentException("salting: base URL must not have a query or fragment, got " + baseUrl);
                }
                if (pollInterval == null || pollInterval.toMillis() < 50) {
                    throw new IllegalArgumentException("salting: poll interval must be >= 50 ms");
                }
                if (bearerToken != null && (bearerToken.isBlank() || bearerToken.chars().anyMatch(ch -> ch < 0x21 || ch > 0x7e))) {
                    throw new IllegalArgumentException("salting: bearer token must be printable ASCII without spaces");
                }
            }
            case KAFKA -> {
                if (bootstrapServers == null || bootstrapServers.isBlank()) {
                    throw new IllegalArgumentException("salting: bootstrap servers are required for the Kafka source");
                }
                if (topic == null || topic.isBlank()) {
                    throw new IllegalArgumentException("salting: topic is required for the Kafka source");
                }
                if (consumer == null) {
                    throw new IllegalArgumentException("salting: consumer settings must not be null");
                }
                if (consumer.containsKey("group.id")) {
                    throw new IllegalArgumentException("salting: group.id is not allowed: plans are read without a group");
                }
            }
        }
    }

    /**
     * The identity of a shared client: equal configurations (for one job)
     * share one poller or consumer per JVM. It holds the token: never log it.
     */
    String identity(String runningJobId, String runningJobName) {
        String common = taskName + "|" + parallelism + "/" + maxParallelism + "|" + runningJobId + "|"
                + (runningJobName == null ? "" : runningJobName) + "|"
                + requestTimeout + "|" + unreachableGrace + "|" + maxPlanBytes;
        return switch (source) {
            case HTTP -> "http|" + baseUrl + "|" + (bearerToken == null ? "" : bearerToken)
                    + "|" + pollInterval + "|" + common;
            case KAFKA -> "kafka|" + bootstrapServers + "|" + topic + "|" + new TreeMap<>(consumer) + "|" + common;
        };
    }

    /** A short description for log lines (no secrets). */
    String describe() {
        return switch (source) {
            case HTTP -> "skewlens serve at " + baseUrl;
            case KAFKA -> "Kafka topic " + topic + " at " + bootstrapServers;
        };
    }
}
