package io.github.skewlens.flink.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.Test;

import io.github.skewlens.flink.testing.KafkaBroker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A broker restart under a sending {@link LineSender} (issue 32: a 32 s
 * restart lost 112 lines to the old 30 s delivery timeout). A broker of
 * its own is stopped for {@link #OUTAGE} (65 s) while three senders keep
 * offering lines at a reporter's pace, then started again on the same port
 * with the same data:
 *
 * <ul>
 *   <li>default settings (queue.size 20 000): every line arrives, none is
 *       dropped or lost (a stopping broker takes the topic out of the
 *       producer's metadata, so sends fail after max.block.ms, retriably,
 *       and the sender sends them again);</li>
 *   <li>a user's delivery.timeout.ms of 15 s, shorter than the outage: the
 *       producer gives records up, the sender sends them again, and every
 *       line still arrives;</li>
 *   <li>a queue of 300 lines: lines beyond it are dropped, counted and
 *       warned about with the count, and every line it accepted arrives.</li>
 * </ul>
 *
 * It takes about 90 s: the outage is the point.
 */
class LineSenderOutageTest {
    private static final Duration OUTAGE = Duration.ofSeconds(65);

    /** Offers numbered lines to one sender; remembers which it accepted. */
    private static final class Feed {
        final String name;
        final LineSender sender;
        final Set<String> accepted = new HashSet<>();
        long offered;

        Feed(String name, LineSender sender) {
            this.name = name;
            this.sender = sender;
        }

        synchronized void offer(int n) {
            for (int i = 0; i < n; i++) {
                String line = "{\"feed\":\"" + name + "\",\"i\":" + offered++ + "}";
                if (sender.offer("job-" + name, line)) {
                    accepted.add(line);
                }
            }
        }

        synchronized Set<String> accepted() {
            return new HashSet<>(accepted);
        }

        synchronized long offered() {
            return offered;
        }
    }

    @Test
    void brokerRestartLosesNothingWhileTheQueueHasRoom() throws Exception {
        try (KafkaBroker.Own broker = KafkaBroker.Own.create(); LogCapture log = LogCapture.open()) {
            broker.createTopic("outage", 1, Map.of());
            Feed plain = new Feed("plain", new LineSender(config(broker, "plain")));
            LineSender.Config shortTimeout = config(broker, "short");
            shortTimeout.producer.put("delivery.timeout.ms", "15000");
            shortTimeout.producer.put("request.timeout.ms", "5000");
            Feed resend = new Feed("short", new LineSender(shortTimeout));
            LineSender.Config tiny = config(broker, "tiny");
            tiny.maxQueuedLines = 300;
            Feed small = new Feed("tiny", new LineSender(tiny));
            List<Feed> feeds = List.of(plain, resend, small);

            // A reporter's pace: 20 lines every 100 ms to each sender (about
            // 13 000 lines over the outage, within the default queue).
            AtomicBoolean stop = new AtomicBoolean();
            Thread feeder = new Thread(() -> {
                while (!stop.get()) {
                    for (Feed f : feeds) {
                        f.offer(20);
                    }
                    try {
                        Thread.sleep(100);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "feeder");
            feeder.start();
            try {
                await("lines reach the broker before the outage",
                        () -> feeds.stream().allMatch(f -> f.sender.sentLines() > 0), 30_000);
                broker.stop();
                long down = System.nanoTime();
                // The outage lasts OUTAGE; meanwhile the events it must cause happen.
                await("the short-timeout sender's producer gives records up and they are queued again",
                        () -> resend.sender.resentRecords() > 0, OUTAGE.toMillis());
                await("the tiny queue drops", () -> small.sender.dropped() > 0, OUTAGE.toMillis());
                long heldPeak = 0;
                while (System.nanoTime() - down < OUTAGE.toNanos()) {
                    heldPeak = Math.max(heldPeak, plain.sender.held());
                    Thread.sleep(200);
                }
                assertEquals(0, plain.sender.dropped(), "default queue dropped during the outage");
                broker.start();
                System.out.printf("LineSenderOutageTest: broker away %d s; default sender held up to %d lines%n",
                        (System.nanoTime() - down) / 1_000_000_000L, heldPeak);
                await("the held lines are acknowledged after the restart",
                        () -> feeds.stream().allMatch(f -> f.sender.held() < 400), 120_000);
            } finally {
                stop.set(true);
                feeder.join();
            }
            for (Feed f : feeds) {
                f.sender.close(Duration.ofSeconds(30));
            }

            for (Feed f : List.of(plain, resend)) {
                assertEquals(0, f.sender.dropped(), f.name + ": dropped");
                assertEquals(0, f.sender.failed(), f.name + ": lost");
                assertEquals(f.offered(), f.accepted().size(), f.name + ": refused offers");
            }
            assertTrue(resend.sender.resentRecords() > 0, "nothing was sent again");
            assertEquals(0, small.sender.failed(), "tiny: lost");
            assertTrue(small.sender.dropped() > 0, "tiny: nothing dropped");
            assertEquals(small.offered(), small.accepted().size() + small.sender.dropped(),
                    "tiny: every line is accepted or counted as dropped");
            String dropWarn = "dropped ";
            assertTrue(log.any(m -> m.startsWith("WARN") && m.contains(dropWarn) && m.contains("topic outage")
                    && m.contains("queue.size")), "no drop warning with the count: " + log.lines());
            assertTrue(log.any(m -> m.startsWith("WARN") && m.contains("does not take lines now")),
                    "no warning that Kafka did not take lines: " + log.lines());
            assertTrue(log.lines().stream().noneMatch(m -> m.contains("lost so far")), "lines reported lost: " + log.lines());

            // Every accepted line is on the topic (a retry may write one twice).
            try (TopicReader r = new TopicReader(broker.bootstrap(), "outage")) {
                Set<String> want = new HashSet<>();
                feeds.forEach(f -> want.addAll(f.accepted()));
                Set<String> got = new HashSet<>();
                r.readUntil(ls -> {
                    for (TopicReader.KeyedLine l : ls) {
                        got.add(l.line());
                    }
                    return got.containsAll(want);
                }, 60_000);
                for (Feed f : feeds) {
                    List<String> missing = new ArrayList<>(f.accepted());
                    missing.removeAll(got);
                    assertTrue(missing.isEmpty(), f.name + ": " + missing.size() + " of " + f.accepted().size()
                            + " accepted lines missing, e.g. " + missing.subList(0, Math.min(3, missing.size())));
                }
            }
        }
    }

    private static LineSender.Config config(KafkaBroker.Own broker, String client) {
        LineSender.Config c = new LineSender.Config();
        c.bootstrapServers = broker.bootstrap();
        c.topic = "outage";
        c.clientId = "outage-" + client;
        return c;
    }

    private static void await(String what, BooleanSupplier cond, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("timed out after " + timeoutMs + " ms waiting until " + what);
            }
            Thread.sleep(50);
        }
    }
}
