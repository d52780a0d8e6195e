package io.github.skewlens.flink.salting;

import java.nio.charset.StandardCharsets;
import java.time.Duration;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The state machines of the two sources, driven directly on unstarted
 * clients (no thread, no network): the ETag poller's answers and failures
 * with a fake clock, and the topic consumer's versions and tombstones.
 */
class PlanClientStateTest {
    static final String JOB = "0123456789abcdef0123456789abcdef";
    static final String TASK = "Partial sums";
    static final long SEC = 1_000_000_000L;

    LogCapture logs;

    @BeforeEach
    void capture() {
        logs = LogCapture.open();
    }

    @AfterEach
    void release() {
        logs.close();
    }

    static SaltingConfig http() {
        SaltingConfig c = SaltingConfig.http("http://127.0.0.1:1", TASK, 4, 128);
        c.unreachableGrace = Duration.ofSeconds(30);
        return c;
    }

    static byte[] plan(long version) {
        return TestPlans.bytes(TestPlans.plan(JOB, TASK, 4, 128, version, "hot", 3));
    }

    static byte[] plan(long version, int p) {
        return TestPlans.bytes(TestPlans.plan(JOB, TASK, p, 128, version, "hot", 3));
    }

    @Test
    void pollerFollowsEtagAnswers() {
        HttpPlanPoller c = new HttpPlanPoller(http(), JOB);
        assertNull(c.current());
        assertNull(c.etag(), "the first poll sends no If-None-Match");

        c.onAnswer(404, null, new byte[0], 0);
        assertNull(c.current());
        assertNull(c.etag());

        c.onAnswer(200, "\"e1\"", plan(1), SEC);
        assertEquals(1, c.appliedVersion());
        assertEquals("\"e1\"", c.etag());
        assertEquals(3, c.lookup("hot").length);
        assertNull(c.lookup("cold"));

        c.onAnswer(304, "\"e1\"", new byte[0], 2 * SEC);
        assertEquals(1, c.appliedVersion(), "304 keeps the plan");
        assertEquals("\"e1\"", c.etag());

        c.onAnswer(200, "\"e2\"", plan(2), 3 * SEC);
        assertEquals(2, c.appliedVersion());
        assertEquals("\"e2\"", c.etag());

        // A lagging server instance answering an older version: ignored.
        c.onAnswer(200, "\"e1\"", plan(1), 4 * SEC);
        assertEquals(2, c.appliedVersion());

        c.onAnswer(404, null, "{\"error\":\"no plan\"}".getBytes(StandardCharsets.UTF_8), 5 * SEC);
        assertNull(c.current(), "404: stop salting");
        assertNull(c.etag());

        // After a retirement any version is accepted.
        c.onAnswer(200, "\"e9\"", plan(1), 6 * SEC);
        assertEquals(1, c.appliedVersion());
    }

    @Test
    void pollerKeepsThePlanThroughShortOutagesAndDropsItAfterTheGrace() {
        HttpPlanPoller c = new HttpPlanPoller(http(), JOB);
        c.onAnswer(200, "\"e1\"", plan(1), 0);
        c.onFailure("ConnectException: Connection refused", 10 * SEC);
        c.onAnswer(503, null, "{\"error\":\"busy\"}".getBytes(StandardCharsets.UTF_8), 20 * SEC);
        c.onFailure("SocketTimeoutException: Read timed out", 30 * SEC);
        assertEquals(1, c.appliedVersion(), "within the grace the plan stays");
        assertEquals("\"e1\"", c.etag());
        assertEquals(1, logs.matching("cannot reach skewlens serve", "HTTP 503: {\"error\":\"busy\"}", "keeping plan v1").size(),
                logs.all());

        c.onFailure("ConnectException: Connection refused", 31 * SEC);
        assertNull(c.current(), "after the grace keys pass through");
        assertNull(c.etag(), "the ETag is forgotten so that the next answer carries the plan");
        assertEquals(1, logs.matching("no answer for more than 30 s", "plan v1", "is dropped").size(), logs.all());

        // Back: 200 with the same plan applies it again (the version was reset).
        c.onAnswer(200, "\"e1\"", plan(1), 40 * SEC);
        assertEquals(1, c.appliedVersion());

        // An answer restarts the grace.
        c.onFailure("x", 60 * SEC);
        assertEquals(1, c.appliedVersion());
        c.onAnswer(304, "\"e1\"", new byte[0], 65 * SEC);
        c.onFailure("x", 90 * SEC);
        assertEquals(1, c.appliedVersion());
    }

    /** A plan of job at 4/128 expiring at expires (RFC 3339, "0001-01-01T00:00:00Z": never), optionally without expires_at. */
    static byte[] expiring(String job, long version, String expires) {
        ObjectNode n = TestPlans.plan(job, TASK, 4, 128, version, "hot", 3);
        if (expires == null) {
            n.remove("expires_at");
        } else {
            n.put("expires_at", expires);
        }
        return TestPlans.bytes(n);
    }

    static final long T0 = java.time.Instant.parse("2026-12-01T12:00:00Z").toEpochMilli();

    /**
     * Issue 32: the server away for longer than the grace must not drop a
     * plan that has not expired. The wall clock is the test's: the plan
     * expires 10 min after T0, the server goes away at T0.
     */
    @Test
    void pollerKeepsThePlanPastTheGraceUntilItExpires() {
        HttpPlanPoller c = new HttpPlanPoller(http(), JOB);
        long[] wall = {T0};
        c.wallClock = () -> wall[0];
        c.onAnswer(200, "\"e1\"", expiring(JOB, 1, "2026-12-01T12:10:00Z"), 0);
        for (int s = 5; s < 600; s += 5) {
            wall[0] = T0 + s * 1000L;
            c.onFailure("ConnectException: Connection refused", s * SEC);
            assertEquals(1, c.appliedVersion(), "dropped " + s + " s into the outage, before its expiry");
        }
        assertTrue(!logs.matching("keeping plan v1", "until it expires at 2026-12-01T12:10:00Z").isEmpty(), logs.all());
        wall[0] = T0 + 600_000;
        c.onFailure("ConnectException: Connection refused", 600 * SEC);
        assertNull(c.current(), "at its expiry the plan goes");
        assertNull(c.etag());
        assertEquals(1, logs.matching("and the plan expired at 2026-12-01T12:10:00Z", "plan v1", "is dropped").size(),
                logs.all());
    }

    /** A resend of the applied version with a later expiry (skewlens republishes confirmed plans) extends it. */
    @Test
    void aResendRefreshesTheExpiry() {
        HttpPlanPoller c = new HttpPlanPoller(http(), JOB);
        long[] wall = {T0};
        c.wallClock = () -> wall[0];
        c.onAnswer(200, "\"e1\"", expiring(JOB, 1, "2026-12-01T12:10:00Z"), 0);
        String[] salts = c.lookup("hot");
        c.onAnswer(200, "\"e1b\"", expiring(JOB, 1, "2026-12-01T12:20:00Z"), SEC);
        assertArrayEquals(salts, c.lookup("hot"));
        wall[0] = T0 + 900_000;
        c.onFailure("refused", 900 * SEC);
        assertEquals(1, c.appliedVersion(), "kept: the resend moved the expiry to 12:20");
        wall[0] = T0 + 1_200_000;
        c.onFailure("refused", 1200 * SEC);
        assertNull(c.current());
    }

    /** Pinned and overridden plans do not expire: kept until the source answers; one without expires_at goes after the grace. */
    @Test
    void plansThatDoNotExpireStayAndUnknownExpiriesGoAfterTheGrace() {
        HttpPlanPoller pinned = new HttpPlanPoller(http(), JOB);
        pinned.wallClock = () -> T0 + 86_400_000L * 365;
        pinned.onAnswer(200, "\"p\"", expiring(JOB, 3, "0001-01-01T00:00:00Z"), 0);
        pinned.onFailure("refused", 3600 * SEC);
        assertEquals(3, pinned.appliedVersion());
        assertEquals(1, logs.matching("keeping plan v3", "until it answers (the plan does not expire)").size(), logs.all());

        HttpPlanPoller unknown = new HttpPlanPoller(http(), JOB);
        unknown.wallClock = () -> T0;
        unknown.onAnswer(200, "\"u\"", expiring(JOB, 4, null), 0);
        unknown.onFailure("refused", 30 * SEC);
        assertEquals(4, unknown.appliedVersion());
        unknown.onFailure("refused", 31 * SEC);
        assertNull(unknown.current());

        // The Kafka consumer shares the rule.
        KafkaPlanConsumer k = new KafkaPlanConsumer(SaltingConfig.kafka("127.0.0.1:1", TASK, 4, 128), JOB);
        long[] wall = {T0};
        k.wallClock = () -> wall[0];
        k.onMessage(expiring(JOB, 2, "2026-12-01T12:05:00Z"));
        k.contact(0);
        wall[0] = T0 + 200_000;
        assertTrue(!k.failure("no answer within 5000 ms", 200 * SEC), "dropped before its expiry");
        assertEquals(2, k.appliedVersion());
        wall[0] = T0 + 300_000;
        assertTrue(k.failure("no answer within 5000 ms", 300 * SEC), "kept past its expiry");
        assertNull(k.current());
    }

    /**
     * Issue 32: a resubmitted job (a new job id, the same name) applies the
     * plan of its job's previous run, and its own plans later start a new
     * version sequence.
     */
    @Test
    void aNewRunAppliesItsJobsPlanThenItsOwn() {
        String old = "ffffffffffffffffffffffffffffffff";
        HttpPlanPoller c = new HttpPlanPoller(http(), JOB, "test"); // TestPlans' job_name
        c.onAnswer(200, "\"o5\"", expiring(old, 5, "0001-01-01T00:00:00Z"), 0);
        assertEquals(5, c.appliedVersion());
        assertEquals(old, c.current().jobId());
        String[] salts = c.lookup("hot");

        // skewlens linked the runs: the plan carried over as v1 of this run.
        c.onAnswer(200, "\"n1\"", expiring(JOB, 1, "0001-01-01T00:00:00Z"), SEC);
        assertEquals(1, c.appliedVersion());
        assertEquals(JOB, c.current().jobId());
        assertArrayEquals(salts, c.lookup("hot"));

        // Within a run versions only grow.
        c.onAnswer(200, "\"n0\"", expiring(JOB, 0, "0001-01-01T00:00:00Z"), 2 * SEC);
        assertEquals(1, c.appliedVersion());

        // Another job's plan under another name is refused.
        ObjectNode stranger = TestPlans.plan(old, TASK, 4, 128, 9, "hot", 3);
        stranger.put("job_name", "other");
        c.onAnswer(200, "\"s\"", TestPlans.bytes(stranger), 3 * SEC);
        assertNull(c.current());
        assertEquals(1, logs.matching("job_name \"other\" is not its name \"test\"").size(), logs.all());

        // Without a name only the job's own plans apply.
        HttpPlanPoller unnamed = new HttpPlanPoller(http(), JOB);
        unnamed.onAnswer(200, "\"o5\"", expiring(old, 5, "0001-01-01T00:00:00Z"), 0);
        assertNull(unnamed.current());
    }

    @Test
    void theUrlCarriesTheJobNameAndParallelismWhenKnown() {
        assertEquals("http://h:1/v1/salting/" + JOB + "/Partial%20sums?job_name=orders%20%26%20co%2Fv2&parallelism=4&max_parallelism=128",
                new HttpPlanPoller(SaltingConfig.http("http://h:1/", TASK, 4, 128), JOB, "orders & co/v2").uri.toString());
        assertEquals("http://h:1/v1/salting/" + JOB + "/Partial%20sums",
                new HttpPlanPoller(SaltingConfig.http("http://h:1", TASK, 4, 128), JOB, "").uri.toString());
    }

    @Test
    void pollerTreatsInvalidPlansAsNoPlanAndKeepsTheirEtag() {
        HttpPlanPoller c = new HttpPlanPoller(http(), JOB);
        c.onAnswer(200, "\"e1\"", plan(1), 0);
        c.onAnswer(200, "\"e2\"", "{\"version\":2}".getBytes(StandardCharsets.UTF_8), SEC);
        assertNull(c.current());
        assertEquals("\"e2\"", c.etag(), "the bad plan is not fetched again until it changes");
        assertEquals(1, logs.matching("ignoring the plan v2", "task \"Partial sums\"", "job_id: missing",
                "keys pass through unchanged").size(), logs.all());
        c.onAnswer(200, "\"e3\"", plan(3), 2 * SEC);
        assertEquals(3, c.appliedVersion());
    }

    @Test
    void parallelismGuardWarnsOncePerVersion() {
        HttpPlanPoller c = new HttpPlanPoller(http(), JOB);
        c.onAnswer(200, "\"e3\"", plan(3, 8), 0);
        c.onAnswer(304, "\"e3\"", new byte[0], SEC);
        c.onAnswer(200, "\"e3b\"", plan(3, 8), 2 * SEC);
        assertNull(c.current());
        assertEquals(1, logs.matching("plan v3 for parallelism 8/128 ignored: the keyed task runs at 4/128").size(), logs.all());
        c.onAnswer(200, "\"e4\"", plan(4, 8), 3 * SEC);
        assertEquals(1, logs.matching("plan v4 for parallelism 8/128 ignored").size(), logs.all());
        c.onAnswer(200, "\"e5\"", plan(5), 4 * SEC);
        assertEquals(5, c.appliedVersion());
    }

    @Test
    void consumerFollowsVersionsAndTombstones() {
        SaltingConfig cfg = SaltingConfig.kafka("127.0.0.1:1", TASK, 4, 128);
        KafkaPlanConsumer c = new KafkaPlanConsumer(cfg, JOB);
        assertTrue(c.isOurs((JOB + "/" + TASK).getBytes(StandardCharsets.UTF_8)));
        assertTrue(!c.isOurs((JOB + "/" + TASK + " ").getBytes(StandardCharsets.UTF_8)));
        assertTrue(!c.isOurs(null));

        c.onMessage(plan(2));
        assertEquals(2, c.appliedVersion());
        String[] v2 = c.lookup("hot");

        // A resend, and an older version with other salts: ignored.
        c.onMessage(plan(2));
        ObjectNode other = TestPlans.plan(JOB, TASK, 4, 128, 1, "other", 2);
        c.onMessage(TestPlans.bytes(other));
        assertEquals(2, c.appliedVersion());
        assertArrayEquals(v2, c.lookup("hot"));
        assertNull(c.lookup("other"));

        c.onMessage(plan(3));
        assertEquals(3, c.appliedVersion());

        c.onMessage(null);
        assertNull(c.current(), "a tombstone retires the plan");

        c.onMessage(plan(1));
        assertEquals(1, c.appliedVersion(), "after a tombstone the next plan may start at any version");

        // Malformed messages: keys pass through, the next good plan applies.
        c.onMessage("not json".getBytes(StandardCharsets.UTF_8));
        assertNull(c.current());
        c.onMessage("[]".getBytes(StandardCharsets.UTF_8));
        c.onMessage(new byte[] {(byte) 0xff, (byte) 0xfe, 0});
        assertNull(c.current());
        c.onMessage(plan(7));
        assertEquals(7, c.appliedVersion());
        assertTrue(logs.matching("not JSON").size() >= 2, logs.all());
        assertEquals(1, logs.matching("not a JSON object but an array").size(), logs.all());

        // A readable but invalid v8, then its resend: one warning.
        ObjectNode bad = TestPlans.plan(JOB, TASK, 4, 128, 8, "hot", 3);
        ((ObjectNode) bad.get("hot_keys").get(0)).remove("salted");
        c.onMessage(TestPlans.bytes(bad));
        c.onMessage(TestPlans.bytes(bad));
        assertNull(c.current());
        assertEquals(1, logs.matching("ignoring the plan v8", "salted: missing").size(), logs.all());
    }

    /**
     * A resubmitted job on the topic: the run follows its own key and its
     * name's lineage key; its own plan wins, the lineage plan applies
     * without one (at the task's parallelism pair only), and a lineage
     * message carrying the run's own plan is left to its own key.
     */
    @Test
    void consumerAppliesItsNamesLineagePlanWithoutOneOfItsOwn() {
        String old = "ffffffffffffffffffffffffffffffff";
        SaltingConfig cfg = SaltingConfig.kafka("127.0.0.1:1", TASK, 4, 128);
        KafkaPlanConsumer c = new KafkaPlanConsumer(cfg, JOB, "test");
        assertEquals("/lineage/test/Partial sums", KafkaPlanConsumer.lineageKey("test", TASK));
        assertEquals("/lineage/team%2Forders%25/a/b", KafkaPlanConsumer.lineageKey("team/orders%", "a/b"),
                "the Go side's key (sinks/planpub TestLineageKey)");
        assertTrue(c.isLineage("/lineage/test/Partial sums".getBytes(StandardCharsets.UTF_8)));
        assertTrue(!c.isLineage((JOB + "/" + TASK).getBytes(StandardCharsets.UTF_8)));
        assertTrue(!new KafkaPlanConsumer(cfg, JOB).isLineage("/lineage/test/Partial sums".getBytes(StandardCharsets.UTF_8)),
                "without a job name there is no lineage key");

        c.onLineageMessage(TestPlans.bytes(TestPlans.plan(old, TASK, 4, 128, 7, "hot", 3)));
        assertEquals(7, c.appliedVersion(), "the newest run's plan, before the run has one");
        assertEquals(old, c.current().jobId());

        // Its resend and its next version of the old run, as for its own key.
        c.onLineageMessage(TestPlans.bytes(TestPlans.plan(old, TASK, 4, 128, 7, "hot", 3)));
        c.onLineageMessage(TestPlans.bytes(TestPlans.plan(old, TASK, 4, 128, 8, "hot", 4)));
        assertEquals(8, c.appliedVersion());

        // Carried over: the run's own v1 replaces the lineage's v8, and
        // the lineage message then carries the run's own plan: ignored.
        c.onMessage(plan(1));
        assertEquals(1, c.appliedVersion());
        assertEquals(JOB, c.current().jobId());
        c.onLineageMessage(plan(1));
        c.onLineageMessage(TestPlans.bytes(TestPlans.plan(old, TASK, 4, 128, 9, "hot", 3)));
        assertEquals(1, c.appliedVersion(), "the run's own plan wins");
        assertEquals(JOB, c.current().jobId());

        // Its own plan retired: the lineage plan applies again, until its tombstone.
        c.onMessage(null);
        assertEquals(9, c.appliedVersion());
        assertEquals(old, c.current().jobId());
        c.onLineageMessage(null);
        assertNull(c.current(), "the name has no plan any more");

        // Another run's plan at another parallelism pair is not applied.
        c.onLineageMessage(TestPlans.bytes(TestPlans.plan(old, TASK, 8, 128, 10, "hot", 3)));
        assertNull(c.current());
        assertEquals(1, logs.matching("plan v10 for parallelism 8/128 ignored: the keyed task runs at 4/128").size(), logs.all());

        // A plan of another job name under the key (it cannot be the name's): refused.
        ObjectNode stranger = TestPlans.plan(old, TASK, 4, 128, 11, "hot", 3);
        stranger.put("job_name", "other");
        c.onLineageMessage(TestPlans.bytes(stranger));
        assertNull(c.current());
        assertEquals(1, logs.matching("ignoring the plan v11", "is not its name").size(), logs.all());
    }

    @Test
    void clientsAreSharedPerConfigurationAndJobAndStopWithTheLastRelease() {
        java.util.function.Supplier<SaltingConfig> cfg = () -> {
            SaltingConfig c = http();
            c.pollInterval = Duration.ofSeconds(60);
            return c;
        };
        PlanClient a = PlanClient.acquire(cfg.get(), JOB);
        PlanClient b = PlanClient.acquire(cfg.get(), JOB);
        assertTrue(a == b, "equal configurations share one client");
        PlanClient other = PlanClient.acquire(cfg.get(), "another-job");
        assertTrue(a != other, "another job gets its own");
        PlanClient.release(other);
        PlanClient.release(a);
        PlanClient c = PlanClient.acquire(cfg.get(), JOB);
        assertTrue(a == c, "one reference is left");
        PlanClient.release(c);
        PlanClient.release(b);
        PlanClient d = PlanClient.acquire(cfg.get(), JOB);
        assertTrue(a != d, "after the last release a new client starts");
        PlanClient.release(d);
        PlanClient.release(null);
    }

    @Test
    void warningsAreRateLimited() {
        HttpPlanPoller c = new HttpPlanPoller(http(), JOB);
        for (int i = 0; i < 50; i++) {
            c.onFailure("refused " + i, i);
        }
        assertEquals(WarnLimiter.PER_MINUTE, logs.matching("cannot reach").size(), logs.all());
    }
}
