package io.github.skewlens.flink.sampler;

import java.util.concurrent.TimeUnit;

import org.apache.flink.metrics.SimpleCounter;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

import io.github.skewlens.flink.kafka.LineSender;
import io.github.skewlens.flink.kafka.NullSenders;

/**
 * JMH microbenchmark of {@link KeySampler#sample(String)} per record, at a
 * few rates, against the same loop without it ({@code baseline}). Sampled
 * lines go through a real {@link LineSender} (queue and thread) to a
 * producer that acknowledges at once, so no broker takes CPU. Run by hand:
 *
 * <pre>
 * cd deploy/flink &amp;&amp; mvn -B -q -DskipTests test-compile dependency:build-classpath -pl library -am \
 *     -Dmdep.outputFile=target/test-classpath.txt -Dmdep.includeScope=test &amp;&amp; \
 *   cd library &amp;&amp; java -cp target/test-classes:target/classes:$(cat target/test-classpath.txt) \
 *     org.openjdk.jmh.Main KeySamplerJmh
 * </pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class KeySamplerJmh {
    @Param({"0.01", "0.001", "1.0E-9"})
    public double rate;

    private String[] keys;
    private int i;
    private LineSender sender;
    private KeySampler sampler;

    @Setup(Level.Trial)
    public void setup() {
        keys = new String[4096];
        for (int k = 0; k < keys.length; k++) {
            keys[k] = "user-" + (k * 7919L % 1_000_003);
        }
        LineSender.Config c = new LineSender.Config();
        c.bootstrapServers = "unused:1";
        c.topic = "bench";
        sender = NullSenders.start(c);
        sampler = new KeySampler(sender, "8e1f2d3c4b5a69788796a5b4c3d2e1f0",
                ",\"job_id\":\"8e1f2d3c4b5a69788796a5b4c3d2e1f0\",\"job_name\":\"bench\",\"task_name\":\"Keyed -> Sink\","
                        + "\"task_id\":\"cbc357ccb763df2852fee8c4fc7d55f2\",\"key\":",
                ",\"weight\":1,\"sample_rate\":" + rate + ",\"parallelism\":4,\"max_parallelism\":128,\"subtask_index\":2}",
                c.maxRecordBytes, rate, new SimpleCounter(), new SimpleCounter(), 42);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        sender.close();
        if (sampler.dropped() > 0) {
            System.out.println("dropped " + sampler.dropped() + " of " + (sampler.sent() + sampler.dropped()));
        }
    }

    @Benchmark
    public void baseline(Blackhole bh) {
        bh.consume(keys[i++ & 4095]);
    }

    @Benchmark
    public void sample(Blackhole bh) {
        String k = keys[i++ & 4095];
        sampler.sample(k);
        bh.consume(k);
    }
}
