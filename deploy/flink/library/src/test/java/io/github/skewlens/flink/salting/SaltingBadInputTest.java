package io.github.skewlens.flink.salting;

import java.time.Duration;
import java.util.UUID;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.github.skewlens.flink.testing.KafkaBroker;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * Bad input never stops the job: with an unreachable broker or service, a
 * malformed plan, or a plan for another parallelism, keys pass through
 * unchanged and a clear warning names the task and the reason.
 */
class SaltingBadInputTest {
    @RegisterExtension
    static final MiniClusterExtension FLINK = new MiniClusterExtension(new MiniClusterResourceConfiguration.Builder()
            .setNumberTaskManagers(1).setNumberSlotsPerTaskManager(TestJob.P).build());

    static final Duration WAIT = Duration.ofSeconds(30);

    /** Runs the test job until it processed n records, checks they kept their keys and the job still runs. */
    static void runUnsalted(String run, JobClient job, long n) throws Exception {
        TestJob.await(() -> TestJob.maxSeq(run) >= n, WAIT, () -> n + " records");
        SaltingAssertions.assertUnsalted(TestJob.range(run, 0, n, WAIT), run);
        assertEquals(JobStatus.RUNNING, job.getJobStatus().get());
    }

    @Test
    void unreachableBroker() throws Exception {
        String run = UUID.randomUUID().toString();
        String task = "Bad broker " + run;
        JobClient job = null;
        try (LogCapture logs = LogCapture.open()) {
            String brokers = "127.0.0.1:" + TestJob.closedPort();
            SaltingConfig cfg = SaltingConfig.kafka(brokers, task, TestJob.P, TestJob.MAX_P);
            cfg.requestTimeout = Duration.ofMillis(300);
            cfg.pollInterval = Duration.ofMillis(200);
            job = TestJob.start(run, task, cfg, 2000);
            TestJob.await(() -> !logs.matching("cannot reach Kafka topic skewlens.salting-plans at " + brokers,
                    "no plan for task \"" + task + "\"", "keys pass through unchanged until it answers").isEmpty(),
                    WAIT, logs::all);
            runUnsalted(run, job, 1000);
        } finally {
            TestJob.cancel(job);
            TestJob.forget(run);
        }
    }

    @Test
    void unreachableService() throws Exception {
        String run = UUID.randomUUID().toString();
        String task = "Bad service " + run;
        JobClient job = null;
        try (LogCapture logs = LogCapture.open()) {
            String url = "http://127.0.0.1:" + TestJob.closedPort();
            SaltingConfig cfg = SaltingConfig.http(url, task, TestJob.P, TestJob.MAX_P);
            cfg.pollInterval = Duration.ofMillis(100);
            job = TestJob.start(run, task, cfg, 2000);
            TestJob.await(() -> !logs.matching("cannot reach skewlens serve at " + url, "Connection refused",
                    "no plan for task \"" + task + "\"", "keys pass through unchanged").isEmpty(), WAIT, logs::all);
            runUnsalted(run, job, 1000);
        } finally {
            TestJob.cancel(job);
            TestJob.forget(run);
        }
    }

    @Test
    void malformedPlansOnTheTopic() throws Exception {
        String run = UUID.randomUUID().toString();
        String task = "Bad plans " + run;
        JobClient job = null;
        try (PlanTopic topic = new PlanTopic(1); LogCapture logs = LogCapture.open()) {
            SaltingConfig cfg = SaltingConfig.kafka(KafkaBroker.bootstrap(), task, TestJob.P, TestJob.MAX_P);
            cfg.topic = topic.name;
            cfg.pollInterval = Duration.ofMillis(200);
            cfg.startupWait = Duration.ofSeconds(20); // records flow once the consumer has read the (empty) topic
            job = TestJob.start(run, task, cfg, 2000);
            String jobId = job.getJobID().toString();
            TestJob.await(() -> TestJob.maxSeq(run) >= 10, WAIT, () -> "10 records");

            ObjectNode oneSalt = TestPlans.plan(jobId, task, TestJob.P, TestJob.MAX_P, 3, TestJob.HOT, 2);
            ((ObjectNode) oneSalt.get("hot_keys").get(0)).withArray("salted").remove(1);
            ((ObjectNode) oneSalt.get("hot_keys").get(0)).remove("buckets");
            ObjectNode noPrefix = TestPlans.plan(jobId, task, TestJob.P, TestJob.MAX_P, 4, TestJob.HOT, 2);
            ((ObjectNode) noPrefix.get("hot_keys").get(0).get("salted").get(0)).put("key", "cold#1");
            String[][] bad = {
                {"this is not JSON", "not JSON"},
                {"[{\"key\":\"hot\"}]", "not a JSON object but an array"},
                {"{\"job_id\":\"" + jobId + "\",\"task_name\":\"" + task + "\",\"version\":\"two\"}",
                    "version: \"two\" is not an integer >= 0"},
                {"{\"job_id\":\"" + jobId + "\",\"task_name\":\"" + task + "\",\"version\":2,\"parallelism\":4,"
                    + "\"max_parallelism\":128,\"hot_keys\":{\"hot\":[\"hot#1\",\"hot#2\"]}}",
                    "hot_keys: not an array but an object"},
                {oneSalt.toString(), "hot key \"hot\": 1 salted key, need at least 2"},
                {noPrefix.toString(), "salted key \"cold#1\" does not start with key + separator \"hot#\""},
            };
            for (String[] b : bad) {
                topic.send(jobId, task, b[0]);
            }
            for (String[] b : bad) {
                TestJob.await(() -> !logs.matching("ignoring the plan", "task \"" + task + "\"", b[1],
                        "keys pass through unchanged").isEmpty(), WAIT, () -> "a warning \"" + b[1] + "\" in\n" + logs.all());
            }
            runUnsalted(run, job, TestJob.maxSeq(run) + 500);

            // The consumer survived every one of them: a good plan still applies.
            ObjectNode good = TestPlans.plan(jobId, task, TestJob.P, TestJob.MAX_P, 5, TestJob.HOT, 3);
            topic.send(jobId, task, TestPlans.bytes(good), 5);
            long first = SaltingKafkaTest.firstWhere(run, 0, true);
            SaltingAssertions.assertSaltedAsPlanned(TestJob.range(run, first, first + 400, WAIT), good, "the good plan");
        } finally {
            TestJob.cancel(job);
            TestJob.forget(run);
        }
    }

    @Test
    void planForAnotherParallelism() throws Exception {
        String run = UUID.randomUUID().toString();
        String task = "Other parallelism " + run;
        JobClient job = null;
        try (PlanServer server = new PlanServer(); LogCapture logs = LogCapture.open()) {
            SaltingConfig cfg = SaltingConfig.http(server.url(), task, TestJob.P, TestJob.MAX_P);
            cfg.pollInterval = Duration.ofMillis(100);
            job = TestJob.start(run, task, cfg, 2000);
            ObjectNode plan = TestPlans.plan(job.getJobID().toString(), task, 8, TestJob.MAX_P, 3, TestJob.HOT, 3);
            server.serve(TestPlans.bytes(plan), "\"v3\"");
            String warning = "plan v3 for parallelism 8/128 ignored: the keyed task runs at 4/128";
            TestJob.await(() -> !logs.matching(warning, task).isEmpty(), WAIT, logs::all);
            // Many polls later (304s), still one warning, and keys unchanged.
            TestJob.await(() -> server.requests.stream().filter(r -> r.status() == 304).count() >= 5, WAIT, () -> "5 polls");
            runUnsalted(run, job, TestJob.maxSeq(run) + 500);
            assertEquals(1, logs.matching(warning, task).size(), logs.all());
            assertFalse(server.requests.isEmpty());
        } finally {
            TestJob.cancel(job);
            TestJob.forget(run);
        }
    }
}
