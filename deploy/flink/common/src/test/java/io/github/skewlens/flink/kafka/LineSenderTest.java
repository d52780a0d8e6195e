package io.github.skewlens.flink.kafka;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import java.nio.charset.StandardCharsets;

import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

import io.github.skewlens.flink.testing.KafkaBroker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LineSenderTest {
    private static LineSender.Config config(String bootstrap, String topic) {
        LineSender.Config c = new LineSender.Config();
        c.bootstrapServers = bootstrap;
        c.topic = topic;
        c.lingerTime = Duration.ofMillis(20);
        return c;
    }

    /** Every run of a job (a new id each submission) is keyed alike: by its name. */
    @Test
    void recordKeyIsTheJobNameElseItsId() {
        assertEquals("orders", LineSender.recordKey("orders", "a1b2"));
        assertEquals("a1b2", LineSender.recordKey("", "a1b2"));
        assertEquals("a1b2", LineSender.recordKey(null, "a1b2"));
        assertEquals(null, LineSender.recordKey(null, ""));
        assertEquals(null, LineSender.recordKey("", null));
    }

    @Test
    void linesReachTheTopicKeyedByJob() {
        String topic = "line-sender-" + UUID.randomUUID();
        KafkaBroker.createTopic(topic, 3, Map.of());
        LineSender.Config c = config(KafkaBroker.bootstrap(), topic);
        c.maxRecordBytes = 1024; // several records per job
        Set<String> want = new HashSet<>();
        try (LineSender s = new LineSender(c)) {
            for (int i = 0; i < 300; i++) {
                String job = "job-" + (i % 3);
                String line = "{\"job\":\"" + job + "\",\"i\":" + i + "}";
                assertTrue(s.offer(job, line));
                want.add(line);
            }
            assertTrue(s.offer(null, "{\"nojob\":1}"));
            want.add("{\"nojob\":1}");
            assertFalse(s.offer("job-0", null));
        }
        try (TopicReader r = new TopicReader(topic)) {
            List<TopicReader.KeyedLine> got = r.readUntil(l -> l.size() >= want.size(), 30_000);
            assertEquals(want.size(), got.size());
            for (TopicReader.KeyedLine l : got) {
                assertTrue(want.contains(l.line()), l.line());
                if (l.line().contains("nojob")) {
                    assertEquals(null, l.key());
                } else {
                    assertTrue(l.line().contains("\"job\":\"" + l.key() + "\""), l.key() + " " + l.line());
                }
            }
            assertTrue(r.records() > 3, "records: " + r.records());
        }
    }

    @Test
    void queueOverflowDropsAndCounts() {
        String topic = "line-sender-" + UUID.randomUUID();
        KafkaBroker.createTopic(topic, 1, Map.of());
        LineSender.Config c = config(KafkaBroker.bootstrap(), topic);
        c.maxQueuedLines = 10;
        int n = 20_000;
        int accepted = 0;
        LineSender s = new LineSender(c);
        for (int i = 0; i < n; i++) {
            if (s.offer("j", "line " + i)) {
                accepted++;
            }
        }
        s.close(Duration.ofSeconds(10));
        assertTrue(s.dropped() > 0, "nothing dropped");
        assertEquals(n - accepted, s.dropped() - 0, "dropped = refused offers (close lost none)");
        assertEquals(accepted, s.sentLines() + s.failed());
        assertEquals(0, s.failed());
        assertFalse(s.offer("j", "after close"));
        try (TopicReader r = new TopicReader(topic)) {
            assertEquals(accepted, r.readUntil(l -> l.size() >= s.sentLines(), 30_000).size());
        }
    }

    @Test
    void unreachableBrokerNeverBlocksOffer() throws Exception {
        LineSender.Config c = config("127.0.0.1:1", "unreachable");
        c.maxQueuedLines = 100;
        c.producer.put("max.block.ms", "300");
        try (LogCapture log = LogCapture.open()) {
            LineSender s = new LineSender(c);
            long worst = 0;
            for (int i = 0; i < 200_000; i++) {
                long t = System.nanoTime();
                s.offer("j", "line " + i);
                worst = Math.max(worst, System.nanoTime() - t);
            }
            assertTrue(worst < 50_000_000L, "an offer took " + worst / 1e6 + " ms");
            assertTrue(s.dropped() > 0);
            assertTrue(log.await(m -> m.contains("WARN") && m.contains("unreachable") && m.contains("does not take lines now"), 10_000),
                    "no warning that Kafka does not take lines: " + log.lines());
            assertTrue(log.await(m -> m.contains("WARN") && m.contains("dropped"), 10_000),
                    "no drop warning: " + log.lines());
            long t = System.nanoTime();
            s.close(Duration.ofSeconds(1));
            assertTrue(System.nanoTime() - t < 3_000_000_000L, "close took " + (System.nanoTime() - t) / 1e6 + " ms");
            assertEquals(0, s.sentLines());
            // Held until close, then dropped: never lost, and nothing is held any more.
            assertEquals(0, s.failed());
            assertEquals(200_000, s.dropped());
            assertEquals(0, s.held());
        }
    }

    /**
     * The outcome of each record: a retriable error (the delivery timeout
     * passed) sends the record again after the backoff, an error Kafka
     * calls final loses it, counted and warned about; either way the lines
     * stop being held.
     */
    @Test
    void retriableFailuresAreSentAgainOthersAreLost() throws Exception {
        MockProducer<String, byte[]> p = new MockProducer<>(false, null, new StringSerializer(), new ByteArraySerializer());
        try (LogCapture log = LogCapture.open()) {
            LineSender s = new LineSender(config("127.0.0.1:1", "mock"), p);
            assertTrue(s.offer("j", "a"));
            await(() -> p.history().size() == 1);
            assertEquals(1, s.held());
            assertTrue(p.errorNext(new TimeoutException("Expiring 1 record(s): 120000 ms has passed")));
            await(() -> p.history().size() == 2);
            assertEquals(1, s.resentRecords());
            assertEquals("a\n", new String(p.history().get(1).value(), StandardCharsets.UTF_8));
            assertEquals(1, s.held(), "held while sent again");
            assertTrue(p.completeNext());
            await(() -> s.sentLines() == 1);
            assertEquals(0, s.held());
            assertTrue(log.any(m -> m.startsWith("WARN") && m.contains("does not take lines now")), log.lines().toString());

            assertTrue(s.offer("j", "b"));
            await(() -> p.history().size() == 3);
            assertTrue(p.errorNext(new RecordTooLargeException("too large")));
            await(() -> s.failed() == 1);
            assertEquals(0, s.held());
            assertEquals(1, s.resentRecords());
            assertTrue(log.any(m -> m.startsWith("WARN") && m.contains("refused lines for good") && m.contains("1 lines lost")),
                    log.lines().toString());
            s.close(Duration.ofSeconds(1));
            assertEquals(0, s.dropped());
        }
    }

    private static void await(java.util.function.BooleanSupplier cond) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 10_000;
        while (!cond.getAsBoolean()) {
            assertTrue(System.currentTimeMillis() < deadline, "timed out");
            Thread.sleep(10);
        }
    }

    @Test
    void acquireSharesOneSenderPerConfiguration() {
        LineSender.Config c = config("127.0.0.1:1", "shared");
        LineSender a = LineSender.acquire(c);
        LineSender b = LineSender.acquire(c.copy());
        c.topic = "other";
        LineSender other = LineSender.acquire(c);
        try {
            assertSame(a, b);
            assertNotSame(a, other);
        } finally {
            LineSender.release(a, Duration.ofMillis(100));
            assertTrue(a.offer("j", "still open: b holds it"));
            LineSender.release(b, Duration.ofMillis(100));
            assertFalse(a.offer("j", "closed"));
            LineSender.release(other, Duration.ofMillis(100));
        }
    }

    @Test
    void invalidConfigurationIsRefused() {
        LineSender.Config c = config("", "t");
        assertThrows(IllegalArgumentException.class, c::validate);
        c = config("h:1", "t");
        c.maxQueuedLines = 0;
        assertThrows(IllegalArgumentException.class, c::validate);
    }
}
