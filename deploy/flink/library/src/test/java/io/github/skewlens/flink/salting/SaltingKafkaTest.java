package io.github.skewlens.flink.salting;

import java.time.Duration;
import java.util.UUID;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.github.skewlens.flink.testing.KafkaBroker;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Plans from the compacted topic (the real broker) into a running job, and a tombstone back out. */
class SaltingKafkaTest {
    @RegisterExtension
    static final MiniClusterExtension FLINK = new MiniClusterExtension(new MiniClusterResourceConfiguration.Builder()
            .setNumberTaskManagers(1).setNumberSlotsPerTaskManager(TestJob.P).build());

    static final String TASK = "Window(TumblingEventTimeWindows(60000)) -> Sink";
    static final Duration WAIT = Duration.ofSeconds(30);

    @Test
    void appliesPlansFromTheTopicAndPassesKeysThroughAfterATombstone() throws Exception {
        String run = UUID.randomUUID().toString();
        JobClient job = null;
        // Two partitions: the consumer must assign every one of them.
        try (PlanTopic topic = new PlanTopic(2); LogCapture logs = LogCapture.open()) {
            SaltingConfig cfg = SaltingConfig.kafka(KafkaBroker.bootstrap(), TASK, TestJob.P, TestJob.MAX_P);
            cfg.topic = topic.name;
            cfg.pollInterval = Duration.ofMillis(200);
            // Plans of other jobs and tasks share the topic and are skipped unread.
            topic.send("ffffffffffffffffffffffffffffffff", TASK, "not even JSON");
            job = TestJob.start(run, TASK, cfg, 2000);
            String jobId = job.getJobID().toString();
            topic.send(jobId, "Another task", "{}");

            TestJob.await(() -> TestJob.maxSeq(run) >= 300, WAIT, () -> "300 records");
            SaltingAssertions.assertUnsalted(TestJob.range(run, 0, 300, WAIT), "before the plan");

            ObjectNode plan = TestPlans.plan(jobId, TASK, TestJob.P, TestJob.MAX_P, 4, TestJob.HOT, 3);
            topic.send(jobId, TASK, TestPlans.bytes(plan), 4);
            long first = firstWhere(run, 0, true);
            SaltingAssertions.assertUnsalted(TestJob.range(run, 0, first - 1, WAIT), "before the plan arrived");
            SaltingAssertions.assertSaltedAsPlanned(TestJob.range(run, first, first + 1000, WAIT), plan, "under plan v4");

            // A resend (a producer retry writes the same version twice) changes nothing.
            topic.send(jobId, TASK, TestPlans.bytes(plan), 4);

            // Retired: keys pass through again.
            topic.retire(jobId, TASK);
            long back = firstWhere(run, first + 1000, false);
            SaltingAssertions.assertUnsalted(TestJob.range(run, back, back + 400, WAIT), "after the tombstone");

            // After a tombstone the next plan may start at any version, even a lower one.
            ObjectNode again = TestPlans.plan(jobId, TASK, TestJob.P, TestJob.MAX_P, 1, TestJob.HOT, 2);
            topic.send(jobId, TASK, TestPlans.bytes(again), 1);
            long salted = firstWhere(run, back + 400, true);
            SaltingAssertions.assertSaltedAsPlanned(TestJob.range(run, salted, salted + 400, WAIT), again, "under plan v1");

            assertEquals("", String.join("\n", logs.matching("salting")), "no warnings: other tasks' messages are not read");
        } finally {
            TestJob.cancel(job);
            TestJob.forget(run);
        }
    }

    /**
     * The first hot record after seq that is salted (or, with salted false,
     * unsalted). Records of one run reach the four keyed subtasks at
     * different times, so once one such record is seen, every record up to
     * it is awaited before the first is picked: an earlier one may still be
     * on its way to a slower subtask.
     */
    static long firstWhere(String run, long after, boolean salted) throws InterruptedException {
        java.util.function.Predicate<TestJob.Row> match = r -> r.seq() > after && r.key().equals(TestJob.HOT)
                && r.key().equals(r.saltedKey()) != salted;
        TestJob.await(() -> TestJob.rows(run).stream().anyMatch(match), WAIT,
                () -> (salted ? "a salted" : "an unsalted") + " hot record");
        long seen = TestJob.rows(run).stream().filter(match).mapToLong(TestJob.Row::seq).min().orElseThrow();
        return TestJob.range(run, after + 1, seen, WAIT).stream().filter(match).mapToLong(TestJob.Row::seq)
                .min().orElseThrow();
    }
}
