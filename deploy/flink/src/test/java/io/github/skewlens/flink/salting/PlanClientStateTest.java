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
