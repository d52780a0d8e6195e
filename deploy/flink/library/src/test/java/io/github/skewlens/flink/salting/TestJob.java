package io.github.skewlens.flink.salting;

import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

/**
 * The job of the salting integration tests: an endless, rate-limited
 * sequence of events (every even one of key "hot", the others spread over
 * k1..k19), salted with a configuration, keyed by the salted key into a
 * task at parallelism 4 / max parallelism 128 that records, per record,
 * its sequence number, keys and the subtask that processed it.
 */
final class TestJob {
    static final int P = 4;
    static final int MAX_P = 128;
    static final String HOT = "hot";

    /** One processed record. */
    record Row(long seq, String key, String saltedKey, int subtask) {}

    private static final Map<String, ConcurrentLinkedQueue<Row>> ROWS = new ConcurrentHashMap<>();

    /** An event of the test source. A Flink POJO. */
    public static class Event {
        public long seq;
        public String key;

        public Event() {}

        Event(long seq) {
            this.seq = seq;
            this.key = seq % 2 == 0 ? HOT : "k" + (seq % 20);
        }
    }

    /** The keyed task: records where each record went. */
    static final class RecordRows extends KeyedProcessFunction<String, Salted<Event>, String> {
        private static final long serialVersionUID = 1L;
        private final String run;

        RecordRows(String run) {
            this.run = run;
        }

        @Override
        public void processElement(Salted<Event> s, Context ctx, Collector<String> out) {
            // JobClient.cancel() completes when the cancellation is accepted,
            // not when the tasks stopped: records may still arrive after the
            // test forgot the run.
            ConcurrentLinkedQueue<Row> rows = ROWS.get(run);
            if (rows != null) {
                rows.add(new Row(s.value.seq, s.key, s.saltedKey, getRuntimeContext().getTaskInfo().getIndexOfThisSubtask()));
            }
        }
    }

    private TestJob() {}

    /** Starts the job (source and salting at parallelism 1, so the salter sees records in sequence order). */
    static JobClient start(String run, String task, SaltingConfig cfg, double perSecond) throws Exception {
        ROWS.put(run, new ConcurrentLinkedQueue<>());
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(P);
        DataGeneratorSource<Event> src = new DataGeneratorSource<>(Event::new, Long.MAX_VALUE,
                RateLimiterStrategy.perSecond(perSecond), Types.POJO(Event.class));
        DataStream<Event> events = env.fromSource(src, WatermarkStrategy.noWatermarks(), "events").setParallelism(1);
        Salting.apply(events, e -> e.key, cfg)
                .process(new RecordRows(run), Types.STRING).name(task).setParallelism(P).setMaxParallelism(MAX_P)
                .sinkTo(new DiscardingSink<>()).setParallelism(P);
        return env.executeAsync("salting-test-" + run);
    }

    /** The rows recorded so far, by sequence number. */
    static List<Row> rows(String run) {
        List<Row> l = new ArrayList<>(ROWS.get(run));
        l.sort(Comparator.comparingLong(Row::seq));
        return l;
    }

    /** Rows with seq in [from, to], once all of them arrived (fails after the timeout). */
    static List<Row> range(String run, long from, long to, Duration timeout) throws InterruptedException {
        await(() -> rows(run).stream().filter(r -> r.seq >= from && r.seq <= to).count() == to - from + 1, timeout,
                () -> "rows " + from + ".." + to + " of " + run);
        return rows(run).stream().filter(r -> r.seq >= from && r.seq <= to).toList();
    }

    static long maxSeq(String run) {
        return ROWS.get(run).stream().mapToLong(Row::seq).max().orElse(-1);
    }

    static void await(BooleanSupplier cond, Duration timeout, Supplier<String> what) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout.toSeconds() + " s waiting for " + what.get());
            }
            Thread.sleep(20);
        }
    }

    static void cancel(JobClient job) throws Exception {
        if (job != null) {
            job.cancel().get(30, TimeUnit.SECONDS);
        }
    }

    static void forget(String run) {
        ROWS.remove(run);
    }

    /** A loopback port nothing listens on. */
    static int closedPort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
