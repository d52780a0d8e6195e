package io.github.skewlens.flink.salting;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.RichAggregateFunction;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Two-phase aggregation: same results with and without a plan; with one, the hot key is spread. */
class TwoPhaseAggregationTest {
    @RegisterExtension
    static final MiniClusterExtension FLINK = new MiniClusterExtension(new MiniClusterResourceConfiguration.Builder()
            .setNumberTaskManagers(1).setNumberSlotsPerTaskManager(TestJob.P).build());

    static final String TASK = "Partial count and sum";
    static final String JOB = "two-phase-test-job";
    static final long N = 8000;

    /** Count and sum of the sequence numbers per key. */
    public static final class CountSum implements AggregateFunction<TestJob.Event, CountSum.Acc, String> {
        private static final long serialVersionUID = 1L;

        /** A Flink POJO. */
        public static class Acc {
            public long count;
            public long sum;
        }

        @Override
        public Acc createAccumulator() {
            return new Acc();
        }

        @Override
        public Acc add(TestJob.Event e, Acc a) {
            a.count++;
            a.sum += e.seq;
            return a;
        }

        @Override
        public String getResult(Acc a) {
            return "count=" + a.count + " sum=" + a.sum;
        }

        @Override
        public Acc merge(Acc a, Acc b) {
            a.count += b.count;
            a.sum += b.sum;
            return a;
        }
    }

    /** Per run, original key -> subtask -> records, as the phase-1 hook saw them. */
    static final Map<String, Map<String, Map<Integer, AtomicLong>>> SEEN = new ConcurrentHashMap<>();

    /** The hook: records the original key and the phase-1 subtask of every record. */
    static final class Seen implements PerRecord {
        private static final long serialVersionUID = 1L;
        private final String run;
        private transient int subtask;
        private transient Map<String, Map<Integer, AtomicLong>> seen;

        Seen(String run) {
            this.run = run;
        }

        @Override
        public void open(RuntimeContext ctx) {
            subtask = ctx.getTaskInfo().getIndexOfThisSubtask();
            seen = SEEN.get(run);
            assertEquals(TASK, ctx.getTaskInfo().getTaskName(), "the hook runs in the task the plans target");
            assertEquals(TestJob.P, ctx.getTaskInfo().getNumberOfParallelSubtasks());
            assertEquals(TestJob.MAX_P, ctx.getTaskInfo().getMaxNumberOfParallelSubtasks());
        }

        @Override
        public void onRecord(String originalKey) {
            seen.computeIfAbsent(originalKey, k -> new ConcurrentHashMap<>())
                    .computeIfAbsent(subtask, k -> new AtomicLong()).incrementAndGet();
        }
    }

    record Outcome(Map<String, String> results, Map<String, Integer> updates, Map<String, Map<Integer, AtomicLong>> seen) {}

    static Outcome run(PlanServer server, double perSecond) throws Exception {
        String run = UUID.randomUUID().toString();
        return run(server, perSecond, run, new Seen(run));
    }

    @SuppressWarnings("try") // the iterator's close may throw InterruptedException; the test method passes it on
    static Outcome run(PlanServer server, double perSecond, String run, PerRecord hook) throws Exception {
        SEEN.put(run, new ConcurrentHashMap<>());
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(TestJob.P);
        DataGeneratorSource<TestJob.Event> src = new DataGeneratorSource<>(TestJob.Event::new, N,
                perSecond > 0 ? RateLimiterStrategy.perSecond(perSecond) : RateLimiterStrategy.noOp(),
                Types.POJO(TestJob.Event.class));
        DataStream<TestJob.Event> events = env.fromSource(src, WatermarkStrategy.noWatermarks(), "events");

        SaltingConfig salting = SaltingConfig.http(server.url(), TASK, TestJob.P, TestJob.MAX_P);
        salting.jobId = JOB;
        salting.pollInterval = Duration.ofMillis(100);
        TwoPhaseConfig cfg = TwoPhaseConfig.of(salting);
        cfg.flushInterval = Duration.ofMillis(100);
        cfg.perRecord = hook;

        Map<String, String> results = new TreeMap<>();
        Map<String, Integer> updates = new HashMap<>();
        try (CloseableIterator<KeyedResult<String>> it =
                TwoPhaseAggregation.aggregate(events, e -> e.key, new CountSum(), cfg).executeAndCollect("two-phase " + run)) {
            while (it.hasNext()) {
                KeyedResult<String> r = it.next();
                results.put(r.key, r.result); // phase 2 emits in order per key: the last one is final
                updates.merge(r.key, 1, Integer::sum);
            }
        }
        return new Outcome(results, updates, SEEN.remove(run));
    }

    static Map<String, String> expected() {
        Map<String, long[]> m = new HashMap<>();
        for (long s = 0; s < N; s++) {
            long[] a = m.computeIfAbsent(new TestJob.Event(s).key, k -> new long[2]);
            a[0]++;
            a[1] += s;
        }
        return m.entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey,
                e -> "count=" + e.getValue()[0] + " sum=" + e.getValue()[1], (a, b) -> a, TreeMap::new));
    }

    @Test
    void resultsPerKeyAreTheSameWithAndWithoutAPlanAndTheHotKeyIsSpread() throws Exception {
        try (PlanServer server = new PlanServer()) {
            // Without a plan: one phase in effect, the hot key on its own subtask.
            Outcome plain = run(server, 0);
            assertEquals(expected(), plain.results(), "without a plan");
            int home = TestPlans.subtask(TestJob.HOT, TestJob.P, TestJob.MAX_P);
            assertEquals(Set.of(home), plain.seen().get(TestJob.HOT).keySet());

            // With a plan (paced over ~2 s with 100 ms flushes, so partials arrive in many updates).
            ObjectNode plan = TestPlans.plan(JOB, TASK, TestJob.P, TestJob.MAX_P, 1, TestJob.HOT, 3);
            server.serve(TestPlans.bytes(plan), "\"p1\"");
            Outcome salted = run(server, 4000);
            assertEquals(expected(), salted.results(), "with a plan");
            assertTrue(salted.updates().get(TestJob.HOT) > 3, "timer flushes: " + salted.updates());

            Map<Integer, AtomicLong> hot = salted.seen().get(TestJob.HOT);
            Set<Integer> planned = TestPlans.saltedKeys(plan, TestJob.HOT).stream()
                    .map(k -> TestPlans.listedSubtask(plan, k)).collect(Collectors.toSet());
            assertEquals(planned, hot.keySet(), "the hot key's records are processed on the plan's subtasks");
            long min = hot.values().stream().mapToLong(AtomicLong::get).min().orElseThrow();
            long max = hot.values().stream().mapToLong(AtomicLong::get).max().orElseThrow();
            assertTrue(max - min <= TestJob.P, "evenly, round-robin per salter instance: " + hot);
            long total = salted.seen().values().stream().flatMap(m -> m.values().stream()).mapToLong(AtomicLong::get).sum();
            assertEquals(N, total, "the hook sees every record once");
            // Cold keys are not salted: each on one subtask.
            salted.seen().forEach((k, m) -> {
                if (!k.equals(TestJob.HOT)) {
                    assertEquals(Set.of(TestPlans.subtask(k, TestJob.P, TestJob.MAX_P)), m.keySet(), k);
                }
            });
        }
    }

    /** A hook that fails on every record. */
    static final class Failing implements PerRecord {
        private static final long serialVersionUID = 1L;

        @Override
        public void onRecord(String originalKey) {
            throw new IllegalStateException("sampler broke on " + originalKey);
        }
    }

    @Test
    void aFailingHookNeverFailsTheJob() throws Exception {
        try (PlanServer server = new PlanServer(); LogCapture logs = LogCapture.open()) {
            Outcome o = run(server, 0, UUID.randomUUID().toString(), new Failing());
            assertEquals(expected(), o.results());
            assertTrue(!logs.matching("the per-record hook of " + TASK, "failed", "sampler broke on").isEmpty(), logs.all());
        }
    }

    @Test
    void refusesRichAggregateFunctionsAndBadConfigs() {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        DataStream<TestJob.Event> events = env.fromData(new TestJob.Event(1));
        TwoPhaseConfig cfg = TwoPhaseConfig.of(SaltingConfig.http("http://h:1", TASK, 4, 128));
        RichAggregateFunction<TestJob.Event, CountSum.Acc, String> rich = new RichAggregateFunction<>() {
            final CountSum plain = new CountSum();

            @Override public CountSum.Acc createAccumulator() { return plain.createAccumulator(); }
            @Override public CountSum.Acc add(TestJob.Event v, CountSum.Acc a) { return plain.add(v, a); }
            @Override public String getResult(CountSum.Acc a) { return plain.getResult(a); }
            @Override public CountSum.Acc merge(CountSum.Acc a, CountSum.Acc b) { return plain.merge(a, b); }
        };
        var r = assertThrows(IllegalArgumentException.class, () -> TwoPhaseAggregation.aggregate(events, x -> x.key, rich,
                Types.POJO(CountSum.Acc.class), Types.STRING, cfg));
        assertTrue(r.getMessage().contains("must not be a RichFunction"), r.getMessage());
        cfg.flushInterval = Duration.ZERO;
        var e = assertThrows(IllegalArgumentException.class,
                () -> TwoPhaseAggregation.aggregate(events, x -> x.key, new CountSum(), cfg));
        assertTrue(e.getMessage().contains("flush interval"), e.getMessage());
        TwoPhaseConfig bad = TwoPhaseConfig.of(SaltingConfig.http("ftp://h", TASK, 4, 128));
        assertThrows(IllegalArgumentException.class, () -> TwoPhaseAggregation.aggregate(events, x -> x.key, new CountSum(), bad));
        TwoPhaseConfig maxP = TwoPhaseConfig.of(SaltingConfig.http("http://h:1", TASK, 4, 2));
        assertThrows(IllegalArgumentException.class, () -> TwoPhaseAggregation.aggregate(events, x -> x.key, new CountSum(), maxP));
    }
}
