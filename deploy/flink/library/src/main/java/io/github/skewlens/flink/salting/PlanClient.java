package io.github.skewlens.flink.salting;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Follows the current salting plan of one keyed task (job id and task
 * name) from one source, {@code skewlens serve} over HTTP or the plans
 * topic, and offers it to the record path.
 *
 * <p><b>Sharing.</b> There is one client (one poller thread, or one Kafka
 * consumer thread) per JVM, configuration and job: {@link #acquire} returns
 * the running one, or starts it, and counts a reference; {@link #release}
 * drops the reference and stops the client with the last one. So all
 * subtasks of a TaskManager share one thread and one connection.
 *
 * <p><b>Lookups never block.</b> The client's thread publishes the
 * applicable plan as an immutable {@link SaltingPlan} through a volatile
 * field; {@link #current()} and the record path read that field and nothing
 * else: no lock, no I/O, no allocation.
 *
 * <p><b>When keys pass through unchanged</b> ({@link #current()} is null):
 * before the first plan; when the source says there is none (HTTP 404, a
 * tombstone on the topic); when the latest plan is invalid (it is logged,
 * rate-limited, with the task and the reason); when the plan was routed for
 * another parallelism pair than the keyed task's (logged once per version);
 * and when the source has not answered for {@link SaltingConfig#unreachableGrace}
 * and the plan's own {@code expires_at} has passed on this JVM's clock (a
 * pinned or overridden plan, which does not expire, stays until the source
 * answers; a plan without a readable expiry goes after the grace).
 * A newer plan replaces the current one; a version at or below the last one
 * handled is a resend and is ignored (a resend of the applied version
 * refreshes its expiry), except after a retirement, after the source was
 * unreachable, or when the plan is of another run of the job (see below),
 * when any version is accepted.
 *
 * <p><b>A resubmitted job.</b> Flink gives each submission a new job id;
 * the client also knows the job's name, and accepts a plan of another run
 * of the same name (the source's lineage answer: skewlens serve's for the
 * asking run, the plans topic's lineage message, see
 * {@link KafkaPlanConsumer}; docs/salting-plans.md):
 * so a new run is salted from its first record, with its job's last plan,
 * before skewlens has seen it report. Plans of its own, later, start a new
 * version sequence.
 *
 * <p>Thread safety: {@link #acquire}, {@link #release}, {@link #current()},
 * {@link #appliedVersion()} and {@link #awaitFirstAnswer} may be called from
 * any thread. The package-private transition methods ({@code onPlan},
 * {@code onRetired}, {@code contact}, {@code failure}) run on the client's
 * own thread only (tests call them on an unstarted client).
 */
public abstract class PlanClient {
    private static final Logger LOG = LoggerFactory.getLogger(PlanClient.class);

    final SaltingConfig cfg;
    final String jobId;
    /** The job's name, or null when unknown: plans of other runs of that name are accepted. */
    final String jobName;
    /** The wall clock (epoch ms) that plan expiries are read on; tests replace it. */
    java.util.function.LongSupplier wallClock = System::currentTimeMillis;
    /** "task X of job J", for log lines. */
    final String what;
    /** "task X of job J from SOURCE", for log lines. */
    final String whatFrom;
    final WarnLimiter warns = new WarnLimiter(LOG);

    /** The applicable plan, or null: keys pass through. Written by the client's thread only. */
    private volatile SaltingPlan current;
    private final CountDownLatch firstAnswer = new CountDownLatch(1);

    // Owned by the client's thread.
    /** The last version handled (applied, refused for its parallelism, or invalid with a readable version); -1: none. */
    private long version = -1;
    /** The job id of the last plan handled (its run): versions are compared within one run only. */
    private String versionJob;
    private long lastContact;
    private boolean unreachable;

    PlanClient(SaltingConfig cfg, String jobId, String jobName) {
        this.cfg = cfg;
        this.jobId = jobId;
        this.jobName = jobName == null || jobName.isEmpty() ? null : jobName;
        this.what = "task " + SaltingPlan.q(cfg.taskName) + " of job " + jobId
                + (this.jobName == null ? "" : " (" + SaltingPlan.q(this.jobName) + ")");
        this.whatFrom = what + " from " + cfg.describe();
        this.lastContact = System.nanoTime();
    }

    /** The plan to apply now, or null when keys pass through unchanged. Never blocks. */
    public final SaltingPlan current() {
        return current;
    }

    /** The version of the plan applied now, or -1. Never blocks. */
    public final long appliedVersion() {
        SaltingPlan p = current;
        return p == null ? -1 : p.version();
    }

    /** The record path's lookup: the salted keys of a hot key (the plan's own array: never modify it), or null. */
    final String[] lookup(String key) {
        SaltingPlan p = current;
        return p == null ? null : p.lookup(key);
    }

    /**
     * Waits up to timeout for the source's first answer (or first failure).
     * Blocks the caller: call it from {@code open()}, never per record.
     * Returns whether the source answered in time.
     */
    public final boolean awaitFirstAnswer(Duration timeout) {
        try {
            return firstAnswer.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Marks the first answer (or failure) of the source; see {@link #awaitFirstAnswer}. */
    final void answered() {
        firstAnswer.countDown();
    }

    // ---- Transitions (the client's thread only) ----

    /** A plan's JSON arrived: parse, validate, apply or refuse it. */
    final void onPlan(byte[] json) {
        SaltingPlan p = parse(json);
        if (p != null) {
            accept(p);
        }
    }

    /**
     * The plan of the job name's newest run arrived (the plans topic's
     * lineage message) while the run has no plan of its own for the task:
     * applied as {@link #onPlan} applies a plan, when it is of another run
     * of the job's name and routed for the task's parallelism pair. A
     * lineage message carrying this run's own plan is ignored: that plan
     * comes under the run's own key, whose tombstone may be on its way.
     */
    final void onLineagePlan(byte[] json) {
        SaltingPlan p = parse(json);
        if (p == null) {
            return;
        }
        if (p.jobId().equals(jobId)) {
            LOG.debug("skewlens salting: the lineage plan v{} for {} is the run's own, ignored", p.version(), what);
            return;
        }
        accept(p);
    }

    /** Parses and validates a plan's JSON; null (logged) when it cannot be applied. */
    private SaltingPlan parse(byte[] json) {
        try {
            return SaltingPlan.parse(json, jobId, jobName, cfg.taskName, cfg.maxPlanBytes);
        } catch (SaltingPlan.InvalidPlanException e) {
            onInvalidPlan(e.getMessage(), e.version);
            return null;
        }
    }

    /**
     * Applies a valid plan, or refuses it: a resend of a version already
     * handled (of the same run), a plan for another parallelism pair.
     */
    private void accept(SaltingPlan p) {
        SaltingPlan cur = current;
        boolean sameRun = p.jobId().equals(versionJob);
        if (sameRun && p.version() <= version) {
            if (cur != null && p.version() == cur.version() && p.jobId().equals(cur.jobId())) {
                // A resend of the applied version (skewlens republishes
                // plans with their times): same keys, a later expiry.
                current = p;
            }
            LOG.debug("skewlens salting: plan v{} for {} ignored: version {} was already handled", p.version(), what, version);
            return;
        }
        version = p.version();
        versionJob = p.jobId();
        if (p.parallelism() != cfg.parallelism || p.maxParallelism() != cfg.maxParallelism) {
            // Its salted keys were routed for another parallelism: here they
            // would land on other subtasks, so the plan would not balance anything.
            current = null;
            // Not rate-limited: each version comes here once.
            LOG.warn("skewlens salting: plan v" + p.version() + " for parallelism " + p.parallelism() + "/"
                    + p.maxParallelism() + " ignored: the keyed task runs at " + cfg.parallelism + "/"
                    + cfg.maxParallelism + " (" + whatFrom + "); keys pass through unchanged");
            return;
        }
        SaltingPlan before = current;
        current = p;
        LOG.info("skewlens salting: applying plan v{}{} for {}: {} hot keys{}", p.version(),
                p.jobId().equals(jobId) ? "" : " of job " + p.jobId() + ", the newest run of " + SaltingPlan.q(p.jobName()),
                whatFrom, p.hotKeys().size(),
                before == null ? "" : " (replaces v" + before.version()
                        + (before.jobId().equals(p.jobId()) ? "" : " of job " + before.jobId()) + ")");
    }

    /** A plan that cannot be applied arrived (reason for the log; version when readable, else -1). */
    final void onInvalidPlan(String reason, long planVersion) {
        // Whose version it is may be unreadable: compared as if of the run last handled.
        if (planVersion >= 0 && planVersion <= version) {
            LOG.debug("skewlens salting: invalid plan v{} for {} ignored: version {} was already handled", planVersion, what, version);
            return;
        }
        // The source's latest plan is this one; an older plan it replaced is
        // not current any more, so keys pass through.
        version = planVersion;
        current = null;
        warns.warn("skewlens salting: ignoring the plan" + (planVersion >= 0 ? " v" + planVersion : "") + " for " + whatFrom
                + ": " + reason + "; keys pass through unchanged");
    }

    /** The source says the task has no plan (HTTP 404, a tombstone): keys pass through, any next version is accepted. */
    final void onRetired(String why) {
        SaltingPlan before = current;
        current = null;
        version = -1;
        versionJob = null;
        if (before != null) {
            LOG.info("skewlens salting: plan v{} for {} retired ({}); keys pass through unchanged", before.version(), whatFrom, why);
        }
    }

    /** The source answered at time now (System.nanoTime()). */
    final void contact(long now) {
        lastContact = now;
        if (unreachable) {
            unreachable = false;
            LOG.info("skewlens salting: {} answers again", cfg.describe());
        }
    }

    /**
     * The source failed to answer at time now (System.nanoTime()). Logs the
     * reason (rate-limited). The plan stays in force for the grace after the
     * last answer, and past it until the plan's own expiry on the wall
     * clock ({@link #wallClock}): a pinned or overridden plan, which does
     * not expire, stays until the source answers; a plan without a readable
     * expiry, and the version of a plan that was not applied, go after the
     * grace. Returns true when this call dropped the plan, so that the
     * source reads it afresh when it answers again.
     */
    final boolean failure(String reason, long now) {
        unreachable = true;
        long silentNanos = now - lastContact;
        SaltingPlan p = current;
        boolean held = p != null || version >= 0;
        boolean pastGrace = silentNanos > cfg.unreachableGrace.toNanos();
        long wall = wallClock.getAsLong();
        boolean expired = p == null || p.expiresAtMillis() == SaltingPlan.UNKNOWN
                || (p.expiresAtMillis() != SaltingPlan.NEVER && wall >= p.expiresAtMillis());
        if (held && pastGrace && expired) {
            current = null;
            version = -1;
            versionJob = null;
            // Not rate-limited: it happens once per outage and is the line that matters.
            String why = p == null || p.expiresAtMillis() == SaltingPlan.UNKNOWN
                    ? "no answer for more than " + human(cfg.unreachableGrace)
                    : "no answer for more than " + human(cfg.unreachableGrace) + " and the plan expired at "
                            + Instant.ofEpochMilli(p.expiresAtMillis());
            LOG.warn("skewlens salting: cannot reach " + cfg.describe() + ": " + reason + "; " + why + ", so "
                    + (p == null ? "the plan" : "plan v" + p.version()) + " for " + what
                    + " is dropped: keys pass through unchanged until it answers");
            return true;
        }
        if (p != null) {
            warns.warn("skewlens salting: cannot reach " + cfg.describe() + ": " + reason + "; keeping plan v"
                    + p.version() + " for " + what + " " + keptUntil(p));
        } else {
            warns.warn("skewlens salting: cannot reach " + cfg.describe() + ": " + reason + "; no plan for " + what
                    + ": keys pass through unchanged until it answers");
        }
        return false;
    }

    /** How long a plan is kept without an answer, for the log line. */
    private String keptUntil(SaltingPlan p) {
        long e = p.expiresAtMillis();
        if (e == SaltingPlan.NEVER) {
            return "until it answers (the plan does not expire)";
        }
        if (e == SaltingPlan.UNKNOWN) {
            return "for up to " + human(cfg.unreachableGrace) + " without an answer";
        }
        return "for at least " + human(cfg.unreachableGrace) + " without an answer, and until it expires at "
                + Instant.ofEpochMilli(e);
    }

    // ---- Lifecycle ----

    /** Starts the client's thread. */
    abstract void start();

    /** Stops the client's thread; waits for it briefly, never for a whole network timeout. */
    abstract void stop();

    private int refs;
    private String identity;

    private static final Map<String, PlanClient> SHARED = new HashMap<>();

    /**
     * Returns the JVM's client for this configuration and job, starting it
     * on first use. Pair every call with one {@link #release}. Validates
     * cfg (IllegalArgumentException). Does not wait for the first answer.
     */
    public static PlanClient acquire(SaltingConfig cfg, String jobId) {
        return acquire(cfg, jobId, null);
    }

    /**
     * As {@link #acquire(SaltingConfig, String)}, for a job with this name
     * (null or empty: unknown), so that a new run of the job is served its
     * job's plan before it has one of its own.
     */
    public static PlanClient acquire(SaltingConfig cfg, String jobId, String jobName) {
        cfg.validate();
        if (jobId == null || jobId.isEmpty() || jobId.contains("/")) {
            throw new IllegalArgumentException("salting: job id must be non-empty without '/', got \"" + jobId + "\"");
        }
        String id = cfg.identity(jobId, jobName);
        synchronized (SHARED) {
            PlanClient c = SHARED.get(id);
            if (c == null) {
                c = switch (cfg.source) {
                    case HTTP -> new HttpPlanPoller(cfg, jobId, jobName);
                    case KAFKA -> new KafkaPlanConsumer(cfg, jobId, jobName);
                };
                c.identity = id;
                c.start();
                SHARED.put(id, c);
            }
            c.refs++;
            return c;
        }
    }

    /** Releases a client from {@link #acquire}; the last release stops it. Null is ignored. */
    public static void release(PlanClient c) {
        if (c == null) {
            return;
        }
        synchronized (SHARED) {
            if (SHARED.get(c.identity) != c || --c.refs > 0) {
                return;
            }
            SHARED.remove(c.identity);
        }
        c.stop();
    }

    /** "30 s", or "500 ms" below a second. */
    static String human(Duration d) {
        return d.toMillis() % 1000 == 0 ? d.toSeconds() + " s" : d.toMillis() + " ms";
    }

    /** Sleeps up to nanos; returns false when interrupted (the client is stopping). */
    static boolean sleep(long nanos) {
        if (nanos <= 0) {
            return true;
        }
        try {
            TimeUnit.NANOSECONDS.sleep(nanos);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
