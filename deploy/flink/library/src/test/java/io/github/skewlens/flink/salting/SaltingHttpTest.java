package io.github.skewlens.flink.salting;

import java.time.Duration;
import java.util.List;
import java.util.UUID;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Plans from skewlens serve (a JDK HttpServer standing in) into a running job. */
class SaltingHttpTest {
    @RegisterExtension
    static final MiniClusterExtension FLINK = new MiniClusterExtension(new MiniClusterResourceConfiguration.Builder()
            .setNumberTaskManagers(1).setNumberSlotsPerTaskManager(TestJob.P).build());

    /** A '/' and spaces: the task name must travel as one percent-encoded segment. */
    static final String TASK = "Count per key/v2 -> record";
    static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void picksUpAPlanWithoutRestartFollowsEtagsAndDropsItWhenTheServiceIsGone() throws Exception {
        String run = UUID.randomUUID().toString();
        JobClient job = null;
        try (PlanServer server = new PlanServer(); LogCapture logs = LogCapture.open()) {
            SaltingConfig cfg = SaltingConfig.http(server.url() + "/", TASK, TestJob.P, TestJob.MAX_P);
            cfg.pollInterval = Duration.ofMillis(100);
            cfg.requestTimeout = Duration.ofMillis(500);
            cfg.unreachableGrace = Duration.ofSeconds(1);
            cfg.bearerToken = "t0ken";
            job = TestJob.start(run, TASK, cfg, 2000);
            String jobId = job.getJobID().toString();

            // No plan (404): keys pass through.
            TestJob.await(() -> TestJob.maxSeq(run) >= 400, WAIT, () -> "400 records");
            SaltingAssertions.assertUnsalted(TestJob.range(run, 0, 400, WAIT), "before the plan");
            String path = "/v1/salting/" + jobId + "/Count%20per%20key%2Fv2%20-%3E%20record";
            assertTrue(server.requests.stream().allMatch(r -> r.rawPath().equals(path)), server.requests.toString());
            assertTrue(server.requests.stream().allMatch(r -> "Bearer t0ken".equals(r.authorization())));
            assertTrue(server.requests.stream().anyMatch(r -> r.status() == 404));

            // The plan arrives while the job runs.
            ObjectNode plan = TestPlans.plan(jobId, TASK, TestJob.P, TestJob.MAX_P, 1, TestJob.HOT, 3);
            server.serve(TestPlans.bytes(plan), "\"plan-v1\"");
            long first = SaltingKafkaTest.firstWhere(run, -1, true); // only the hot key is in the plan
            SaltingAssertions.assertUnsalted(TestJob.range(run, 0, first - 1, WAIT), "before the switch");
            List<TestJob.Row> after = TestJob.range(run, first, first + 1200, WAIT);
            SaltingAssertions.assertSaltedAsPlanned(after, plan, "after the switch");

            // ETag polling: later polls send the tag and get 304.
            TestJob.await(() -> server.requests.stream().anyMatch(r -> r.status() == 304), WAIT, () -> "a 304");
            assertTrue(server.requests.stream().filter(r -> r.status() == 304)
                    .allMatch(r -> "\"plan-v1\"".equals(r.ifNoneMatch())));
            assertEquals(1, server.requests.stream().filter(r -> r.status() == 200).count(), "the plan is fetched once");

            // The service goes away: after the grace, keys pass through again.
            server.stop();
            long stopped = TestJob.maxSeq(run);
            long back = SaltingKafkaTest.firstWhere(run, stopped, false);
            SaltingAssertions.assertUnsalted(TestJob.range(run, back, back + 400, WAIT), "after the grace");
            assertFalse(logs.matching("cannot reach skewlens serve at " + server.url(), "plan v1", "is dropped").isEmpty(),
                    logs.all());
        } finally {
            TestJob.cancel(job);
            TestJob.forget(run);
        }
    }
}
