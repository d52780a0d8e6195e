package io.github.skewlens.flink.salting;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * JMH microbenchmark of phase 1 of {@link TwoPhaseAggregation} (the
 * salting operator), per record, on the heap state backend: each
 * invocation processes a batch of {@value #BATCH} records of {@code keys}
 * distinct salted keys (uniformly drawn), then advances processing time
 * by one flush interval so that every key's timer fires and its partial
 * goes out. {@code keys=100} is a few busy keys (200 records per key and
 * flush), {@code keys=20000} the worst case for timers (about one record
 * per key and flush). {@code impl} is the operator: {@code public}, the
 * one TwoPhaseAggregation builds, or {@code internal}, the baseline it
 * replaced ({@link InternalPartialAggregateOperator}). docs/flink.md
 * ("Salting operator cost") has the figures. Run by hand:
 *
 * <pre>
 * cd deploy/flink &amp;&amp; mvn -B -q -DskipTests test-compile dependency:build-classpath -pl library -am \
 *     -Dmdep.outputFile=target/test-classpath.txt -Dmdep.includeScope=test &amp;&amp; \
 *   cd library &amp;&amp; java -cp target/test-classes:target/classes:$(cat target/test-classpath.txt) \
 *     org.openjdk.jmh.Main PartialAggregateJmh
 * </pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 2)
@Measurement(iterations = 10, time = 2)
@Fork(2)
public class PartialAggregateJmh {
    static final int BATCH = 20_000;
    static final long FLUSH_MILLIS = 1_000;

    @Param({"100", "20000"})
    public int keys;

    @Param({"internal", "public"})
    public String impl;

    private Workload w;

    /** Sums longs; not a RichFunction, as TwoPhaseAggregation requires. */
    static final class Sum implements AggregateFunction<Long, Long, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long createAccumulator() {
            return 0L;
        }

        @Override
        public Long add(Long v, Long acc) {
            return acc + v;
        }

        @Override
        public Long getResult(Long acc) {
            return acc;
        }

        @Override
        public Long merge(Long a, Long b) {
            return a + b;
        }
    }

    /**
     * The phase-1 operator: {@code public} as TwoPhaseAggregation builds it
     * (its function in Flink's KeyedProcessOperator, as
     * {@code KeyedStream.process} wraps it), {@code internal} the operator
     * on Flink's internal timer API that it replaced.
     */
    static OneInputStreamOperator<Salted<Long>, TwoPhaseAggregation.Partial<Long>> phaseOne(String impl) {
        return switch (impl) {
            case "public" -> new KeyedProcessOperator<>(
                    new PartialAggregateFunction<>(new Sum(), Types.LONG, FLUSH_MILLIS, PerRecord.NONE));
            case "internal" -> new InternalPartialAggregateOperator<>(new Sum(), Types.LONG, FLUSH_MILLIS, PerRecord.NONE);
            default -> throw new IllegalArgumentException(impl);
        };
    }

    /**
     * The partials' serializer as the job has it (TwoPhaseAggregation's
     * type information), for the harness, which copies what an operator
     * emits: without it the harness extracts a type from the object and
     * copies the accumulator with Kryo.
     */
    static TypeSerializer<TwoPhaseAggregation.Partial<Long>> partialSerializer() {
        return TwoPhaseAggregation.Partial.typeInfo(Types.LONG).createSerializer(new SerializerConfigImpl());
    }

    @Setup(Level.Trial)
    public void setup() throws Exception {
        w = new Workload(impl, keys);
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        w.close();
    }

    /** One flush interval: the batch, then the timers fire. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int batch() throws Exception {
        return w.batch();
    }

    /** The workload: {@value #BATCH} records of keys keys, then a flush, on one operator. */
    static final class Workload implements AutoCloseable {
        private final StreamRecord<Salted<Long>>[] records;
        private final KeyedOneInputStreamOperatorTestHarness<String, Salted<Long>, TwoPhaseAggregation.Partial<Long>> harness;
        private long now;

        @SuppressWarnings("unchecked")
        Workload(String impl, int keys) throws Exception {
            SplittableRandom rnd = new SplittableRandom(42);
            String[] names = new String[keys];
            for (int k = 0; k < keys; k++) {
                names[k] = "customer-" + k;
            }
            // Built once, as the network stack hands a task records it has
            // already deserialized: neither operator pays for them, and
            // neither is spared them by escape analysis (the function's
            // context holds the record, so a record made per call would
            // be allocated for it and not for the old operator).
            records = new StreamRecord[BATCH];
            for (int i = 0; i < BATCH; i++) {
                String k = names[rnd.nextInt(keys)];
                records[i] = new StreamRecord<>(new Salted<>(k, k, 1L), 0L);
            }
            harness = new KeyedOneInputStreamOperatorTestHarness<>(phaseOne(impl), new SaltedKeySelector<>(), Types.STRING,
                    128, 1, 0);
            harness.setup(partialSerializer());
            harness.open();
        }

        /** Processes the batch, fires the timers; returns the partials flushed. */
        int batch() throws Exception {
            for (StreamRecord<Salted<Long>> r : records) {
                harness.processElement(r);
            }
            now += FLUSH_MILLIS;
            harness.setProcessingTime(now);
            int n = harness.getOutput().size();
            harness.getOutput().clear();
            return n;
        }

        @Override
        public void close() throws Exception {
            harness.close();
        }
    }

    /**
     * The same comparison, paired, for a machine shared with other work
     * (where JMH's runs, one implementation after the other, meet
     * different loads): both operators in one JVM, warmed up, then rounds
     * of {@code batches} batches each in ABBA order, timed by wall clock
     * and by the thread's CPU time. Prints the median ns/record of each
     * and the median of the rounds' public/internal ratios.
     *
     * <pre>
     * java -cp ... io.github.skewlens.flink.salting.PartialAggregateJmh [keys=100,20000] [rounds=40] [batches=20]
     * </pre>
     */
    public static void main(String[] args) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (String arg : args) {
            String[] kv = arg.split("=", 2);
            a.put(kv[0], kv.length > 1 ? kv[1] : "");
        }
        int rounds = Integer.parseInt(a.getOrDefault("rounds", "40"));
        int batches = Integer.parseInt(a.getOrDefault("batches", "20"));
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        for (String ks : a.getOrDefault("keys", "100,20000").split(",")) {
            int keys = Integer.parseInt(ks);
            try (Workload in = new Workload("internal", keys); Workload pub = new Workload("public", keys)) {
                for (int i = 0; i < 200; i++) {
                    in.batch();
                    pub.batch();
                }
                double[][] wall = new double[2][rounds];
                double[][] cpu = new double[2][rounds];
                for (int r = 0; r < rounds; r++) {
                    Workload[] order = r % 2 == 0 ? new Workload[] {in, pub} : new Workload[] {pub, in};
                    for (Workload w : order) {
                        int idx = w == in ? 0 : 1;
                        long c0 = mx.getCurrentThreadCpuTime();
                        long t0 = System.nanoTime();
                        for (int b = 0; b < batches; b++) {
                            w.batch();
                        }
                        wall[idx][r] = (System.nanoTime() - t0) / (double) (batches * BATCH);
                        cpu[idx][r] = (mx.getCurrentThreadCpuTime() - c0) / (double) (batches * BATCH);
                    }
                }
                double[] wallRatio = new double[rounds];
                double[] cpuRatio = new double[rounds];
                for (int r = 0; r < rounds; r++) {
                    wallRatio[r] = wall[1][r] / wall[0][r];
                    cpuRatio[r] = cpu[1][r] / cpu[0][r];
                }
                System.out.printf(Locale.ROOT,
                        "keys=%d  wall ns/record: internal %.1f, public %.1f (ratio %.3f)  cpu ns/record: internal %.1f, public %.1f (ratio %.3f)%n",
                        keys, median(wall[0]), median(wall[1]), median(wallRatio), median(cpu[0]), median(cpu[1]), median(cpuRatio));
            }
        }
    }

    private static double median(double[] v) {
        double[] c = v.clone();
        Arrays.sort(c);
        return c.length % 2 == 1 ? c[c.length / 2] : (c[c.length / 2 - 1] + c[c.length / 2]) / 2;
    }
}
