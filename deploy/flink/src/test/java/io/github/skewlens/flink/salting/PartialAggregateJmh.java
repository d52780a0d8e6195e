package io.github.skewlens.flink.salting;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
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
 * per key and flush). Run by hand:
 *
 * <pre>
 * cd deploy/flink &amp;&amp; mvn -B -q test-compile dependency:build-classpath \
 *     -Dmdep.outputFile=target/test-classpath.txt -Dmdep.includeScope=test &amp;&amp; \
 *   java -cp target/test-classes:target/classes:$(cat target/test-classpath.txt) \
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

    private Salted<Long>[] records;
    private KeyedOneInputStreamOperatorTestHarness<String, Salted<Long>, TwoPhaseAggregation.Partial<Long>> harness;
    private long now;

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

    /** The phase-1 operator as TwoPhaseAggregation builds it. */
    static OneInputStreamOperator<Salted<Long>, TwoPhaseAggregation.Partial<Long>> phaseOne() {
        return new PartialAggregateOperator<>(new Sum(), Types.LONG, FLUSH_MILLIS, PerRecord.NONE);
    }

    @Setup(Level.Trial)
    @SuppressWarnings("unchecked")
    public void setup() throws Exception {
        SplittableRandom rnd = new SplittableRandom(42);
        String[] names = new String[keys];
        for (int k = 0; k < keys; k++) {
            names[k] = "customer-" + k;
        }
        records = new Salted[BATCH];
        for (int i = 0; i < BATCH; i++) {
            String k = names[rnd.nextInt(keys)];
            records[i] = new Salted<>(k, k, 1L);
        }
        harness = new KeyedOneInputStreamOperatorTestHarness<>(phaseOne(), new SaltedKeySelector<>(), Types.STRING, 128, 1, 0);
        harness.open();
    }

    @TearDown(Level.Trial)
    public void tearDown() throws Exception {
        harness.close();
    }

    /** One flush interval: the batch, then the timers fire. */
    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int batch() throws Exception {
        for (Salted<Long> r : records) {
            harness.processElement(r, 0L);
        }
        now += FLUSH_MILLIS;
        harness.setProcessingTime(now);
        int n = harness.getOutput().size();
        harness.getOutput().clear();
        return n;
    }
}
