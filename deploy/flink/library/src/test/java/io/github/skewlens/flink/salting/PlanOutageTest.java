package io.github.skewlens.flink.salting;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

import io.github.skewlens.flink.testing.KafkaBroker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 32: the plan source away for longer than the grace. Running
 * clients (their own threads, real network) with a 1 s grace standing in
 * for the default 30 s: the plan stays in force through the outage until
 * its own expires_at, then goes. Both sources: skewlens serve (the
 * {@link PlanServer} stand-in, stopped) and the plans topic (a broker of
 * its own, stopped).
 */
class PlanOutageTest {
    static final String JOB = "0123456789abcdef0123456789abcdef";
    static final String TASK = "Partial sums";

    @Test
    void httpPlanStaysWhileTheServerIsAwayUntilItExpires() throws Exception {
        try (PlanServer server = new PlanServer(); LogCapture logs = LogCapture.open()) {
            SaltingConfig cfg = SaltingConfig.http(server.url(), TASK, 4, 128);
            cfg.pollInterval = Duration.ofMillis(100);
            cfg.requestTimeout = Duration.ofMillis(300);
            cfg.unreachableGrace = Duration.ofSeconds(1);
            long expires = System.currentTimeMillis() + 6_000;
            server.serve(plan(expires), "\"v1\"");
            PlanClient c = PlanClient.acquire(cfg, JOB);
            try {
                awaitApplied(c);
                server.stop();
                long stopped = System.currentTimeMillis();
                long dropped = awaitDropped(c, 30_000);
                assertDroppedAtExpiry(stopped, dropped, expires, cfg.unreachableGrace);
                // The client logs the drop just after it dropped the plan.
                assertTrue(logs.await(5_000, "cannot reach skewlens serve", "and the plan expired at " + Instant.ofEpochMilli(expires),
                        "is dropped"), logs.all());
            } finally {
                PlanClient.release(c);
            }
        }
    }

    @Test
    void kafkaPlanStaysWhileTheBrokerIsAwayUntilItExpires() throws Exception {
        try (KafkaBroker.Own broker = KafkaBroker.Own.create(); LogCapture logs = LogCapture.open()) {
            String topic = "skewlens.salting-plans";
            broker.createTopic(topic, 1, Map.of("cleanup.policy", "compact"));
            // Long enough for the broker's clean stop (a few seconds) and a few graces after it.
            long expires = System.currentTimeMillis() + 25_000;
            Properties p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
            p.put(ProducerConfig.ACKS_CONFIG, "all");
            p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            try (KafkaProducer<String, byte[]> producer = new KafkaProducer<>(p)) {
                producer.send(new ProducerRecord<>(topic, JOB + "/" + TASK, plan(expires))).get(30, TimeUnit.SECONDS);
            }
            SaltingConfig cfg = SaltingConfig.kafka(broker.bootstrap(), TASK, 4, 128);
            cfg.topic = topic;
            cfg.pollInterval = Duration.ofMillis(200);
            cfg.requestTimeout = Duration.ofMillis(500);
            cfg.unreachableGrace = Duration.ofSeconds(1);
            PlanClient c = PlanClient.acquire(cfg, JOB);
            try {
                awaitApplied(c);
                broker.stop();
                long stopped = System.currentTimeMillis();
                assertTrue(stopped + 3 * cfg.unreachableGrace.toMillis() < expires,
                        "the broker took too long to stop for the test to tell grace from expiry");
                long dropped = awaitDropped(c, 60_000);
                assertDroppedAtExpiry(stopped, dropped, expires, cfg.unreachableGrace);
                assertTrue(logs.await(5_000, "cannot reach Kafka topic " + topic, "and the plan expired at "
                        + Instant.ofEpochMilli(expires), "is dropped"), logs.all());
            } finally {
                PlanClient.release(c);
            }
        }
    }

    /**
     * Issue 32: a resubmitted job (a new job id, the same name) asks with
     * its name and parallelism pair, and is answered with its job's plan at
     * its first poll, before the subtask's open() returns.
     */
    @Test
    void aNewRunGetsItsJobsPlanAtItsFirstPoll() throws Exception {
        String oldRun = "ffffffffffffffffffffffffffffffff";
        try (PlanServer server = new PlanServer()) {
            ObjectNode plan = TestPlans.plan(oldRun, TASK, 4, 128, 7, "hot", 3); // job_name "test"
            server.serveLineage(TestPlans.bytes(plan), "\"old-v7\"", "job_name=test&parallelism=4&max_parallelism=128");
            SaltingConfig cfg = SaltingConfig.http(server.url(), TASK, 4, 128);
            cfg.pollInterval = Duration.ofSeconds(60); // one poll in this test
            PlanClient c = PlanClient.acquire(cfg, JOB, "test");
            try {
                assertTrue(c.awaitFirstAnswer(Duration.ofSeconds(10)), "no first answer");
                assertTrue(c.appliedVersion() == 7 && oldRun.equals(c.current().jobId()),
                        "after the first poll: " + c.current() + "; requests " + server.requests);
                assertTrue(server.requests.size() == 1 && server.requests.get(0).status() == 200, server.requests.toString());
                assertTrue(server.requests.get(0).rawPath().equals("/v1/salting/" + JOB + "/Partial%20sums"), server.requests.toString());
            } finally {
                PlanClient.release(c);
            }
        }
    }

    /**
     * Issue 32 on the plans topic (the shared test broker): a new run of
     * the job (a new job id, the same name and parallelism pair) applies
     * the plan skewlens publishes under the name's lineage key at its first
     * read of the topic, before open() would return; a run of the name at
     * another parallelism pair does not, nor does a run without a name.
     * The run's own plan, when skewlens carries it over, replaces it.
     */
    @Test
    void aNewRunGetsItsJobsPlanAtItsFirstReadOfTheTopic() throws Exception {
        String oldRun = "ffffffffffffffffffffffffffffffff";
        String rescaled = "0123456789abcdef0123456789abcde8";
        String nameless = "0123456789abcdef0123456789abcde0";
        try (PlanTopic topic = new PlanTopic(2); LogCapture logs = LogCapture.open()) {
            ObjectNode plan = TestPlans.plan(oldRun, TASK, 4, 128, 7, "hot", 3); // job_name "test"
            topic.send(oldRun, TASK, TestPlans.bytes(plan), 7);
            topic.sendLineage("test", TASK, TestPlans.bytes(plan), oldRun, 7);
            topic.sendLineage("another job", TASK, TestPlans.bytes(TestPlans.plan(oldRun, TASK, 4, 128, 3, "cold", 2)), oldRun, 3);

            long start = System.nanoTime();
            PlanClient c = PlanClient.acquire(kafka(topic, 4), JOB, "test");
            PlanClient other = PlanClient.acquire(kafka(topic, 8), rescaled, "test");
            PlanClient anonymous = PlanClient.acquire(kafka(topic, 4), nameless, null);
            try {
                assertTrue(c.awaitFirstAnswer(Duration.ofSeconds(30)), "no first read of the topic");
                long firstRead = System.nanoTime() - start;
                assertTrue(c.appliedVersion() == 7 && oldRun.equals(c.current().jobId()),
                        "after the first read: " + c.current() + "\n" + logs.all());
                System.out.printf("PlanOutageTest: a new run applied its job's plan v7 (job %s) at its first read of the topic, %d ms after its client started%n",
                        oldRun, firstRead / 1_000_000);

                assertTrue(other.awaitFirstAnswer(Duration.ofSeconds(30)) && anonymous.awaitFirstAnswer(Duration.ofSeconds(30)));
                assertNull(other.current(), "a run at 8/128 applied the plan for 4/128");
                assertEquals(1, logs.matching("plan v7 for parallelism 4/128 ignored: the keyed task runs at 8/128").size(), logs.all());
                assertNull(anonymous.current(), "a run without a name applied another run's plan");

                // Carried over: the run's own v1 replaces the lineage's v7.
                ObjectNode own = TestPlans.plan(JOB, TASK, 4, 128, 1, "hot", 3);
                topic.send(JOB, TASK, TestPlans.bytes(own), 1);
                topic.sendLineage("test", TASK, TestPlans.bytes(own), JOB, 1);
                long deadline = System.currentTimeMillis() + 30_000;
                while (!(c.appliedVersion() == 1 && JOB.equals(c.current().jobId()))) {
                    assertTrue(System.currentTimeMillis() < deadline, "the run's own plan was not applied: " + c.current());
                    Thread.sleep(20);
                }
            } finally {
                PlanClient.release(c);
                PlanClient.release(other);
                PlanClient.release(anonymous);
            }
        }
    }

    static SaltingConfig kafka(PlanTopic topic, int parallelism) {
        SaltingConfig cfg = SaltingConfig.kafka(KafkaBroker.bootstrap(), TASK, parallelism, 128);
        cfg.topic = topic.name;
        cfg.pollInterval = Duration.ofMillis(200);
        return cfg;
    }

    static byte[] plan(long expiresAtMillis) {
        ObjectNode n = TestPlans.plan(JOB, TASK, 4, 128, 1, "hot", 3);
        n.put("expires_at", Instant.ofEpochMilli(expiresAtMillis).toString());
        return n.toString().getBytes(StandardCharsets.UTF_8);
    }

    static void awaitApplied(PlanClient c) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 30_000;
        while (c.appliedVersion() != 1) {
            assertTrue(System.currentTimeMillis() < deadline, "the plan was not applied within 30 s");
            Thread.sleep(20);
        }
    }

    /** Watches the plan until it goes; returns when (wall clock, ms). */
    static long awaitDropped(PlanClient c, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (c.current() != null) {
            assertTrue(System.currentTimeMillis() < deadline, "the plan was still in force after " + timeoutMs + " ms");
            Thread.sleep(20);
        }
        return System.currentTimeMillis();
    }

    static void assertDroppedAtExpiry(long stopped, long dropped, long expires, Duration grace) {
        System.out.printf("PlanOutageTest: source away at %s, plan expiring at %s dropped at %s (%d ms after the source went away, grace %d ms)%n",
                Instant.ofEpochMilli(stopped), Instant.ofEpochMilli(expires), Instant.ofEpochMilli(dropped),
                dropped - stopped, grace.toMillis());
        assertTrue(dropped >= expires, "dropped " + (expires - dropped) + " ms before its expiry");
        assertTrue(dropped - stopped > 2 * grace.toMillis(), "the outage outlasted the grace: " + (dropped - stopped) + " ms");
        // The next failed poll after the expiry drops it: within a request timeout and an interval or so.
        assertTrue(dropped - expires < 3_000, "dropped " + (dropped - expires) + " ms after its expiry");
    }
}
