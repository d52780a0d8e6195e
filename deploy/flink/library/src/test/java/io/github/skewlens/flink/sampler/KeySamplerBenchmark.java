package io.github.skewlens.flink.sampler;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

import io.github.skewlens.flink.testing.KafkaBroker;

/**
 * The key sampler's cost per record in a real job: the same MiniCluster job
 * (a source of N longs → keyBy → a KeyedProcessFunction with trivial work,
 * parallelism 1) run with and without {@link KeySampler}, alternating
 * (ABBA), samples going to the real broker. Prints ns/record of each run
 * (the job's net runtime over N), the medians and their difference. Not a
 * unit test: run it by hand (README.md, "The key sampler's cost"):
 *
 * <pre>
 * cd deploy/flink &amp;&amp; mvn -B -q -DskipTests test-compile dependency:build-classpath -pl library -am \
 *     -Dmdep.outputFile=target/test-classpath.txt -Dmdep.includeScope=test &amp;&amp; \
 *   cd library &amp;&amp; java -Xmx2g -cp target/test-classes:target/classes:$(cat target/test-classpath.txt) \
 *     [-Dproducer.compression.type=lz4] \
 *     io.github.skewlens.flink.sampler.KeySamplerBenchmark [records=20000000] [pairs=3] [rate=0.01]
 * </pre>
 */
public final class KeySamplerBenchmark {
    static final AtomicLong SENT = new AtomicLong();
    static final AtomicLong DROPPED = new AtomicLong();
    static final AtomicLong SINK = new AtomicLong();

    /** Trivial keyed work, optionally sampling the key first. */
    static final class Work extends KeyedProcessFunction<Long, Long, Long> {
        private final KeySampler.Config config;
        private transient KeySampler sampler;
        private transient long sum;

        Work(KeySampler.Config config) {
            this.config = config;
        }

        @Override
        public void open(OpenContext c) {
            if (config != null) {
                sampler = KeySampler.open(getRuntimeContext(), config);
            }
        }

        @Override
        public void processElement(Long v, Context ctx, Collector<Long> out) {
            if (sampler != null) {
                sampler.sample(ctx.getCurrentKey());
            }
            sum += v;
        }

        @Override
        public void close() {
            SINK.addAndGet(sum);
            if (sampler != null) {
                SENT.addAndGet(sampler.sent());
                DROPPED.addAndGet(sampler.dropped());
                sampler.close();
            }
        }
    }

    static double run(long records, KeySampler.Config cfg) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1,
                Configuration.fromMap(Map.of()));
        env.fromSequence(1, records)
                .keyBy(v -> v % 100_000)
                .process(new Work(cfg))
                .sinkTo(new DiscardingSink<>());
        JobExecutionResult r = env.execute(cfg == null ? "baseline" : "sampled");
        return r.getNetRuntime() * 1e6 / records;
    }

    static double median(List<Double> xs) {
        double[] a = xs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return a.length % 2 == 1 ? a[a.length / 2] : (a[a.length / 2 - 1] + a[a.length / 2]) / 2;
    }

    public static void main(String[] args) throws Exception {
        long records = args.length > 0 ? Long.parseLong(args[0]) : 20_000_000L;
        int pairs = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        double rate = args.length > 2 ? Double.parseDouble(args[2]) : 0.01;
        String topic = "bench-key-samples";
        KafkaBroker.createTopic(topic, 1, Map.of());
        KeySampler.Config cfg = KeySampler.Config.of(KafkaBroker.bootstrap());
        cfg.sender.topic = topic;
        cfg.sampleRate = rate;
        // -Dproducer.X=Y passes producer settings (e.g. -Dproducer.compression.type=lz4).
        System.getProperties().stringPropertyNames().stream().filter(k -> k.startsWith("producer."))
                .forEach(k -> cfg.sender.producer.put(k.substring(9), System.getProperty(k)));

        System.out.printf("records %d, rate %s, %d pairs (ABBA), parallelism 1, %d cores, producer %s%n",
                records, rate, pairs, Runtime.getRuntime().availableProcessors(), cfg.sender.producer);
        run(Math.min(records, 2_000_000), null); // warm-up: JIT, class loading
        run(Math.min(records, 2_000_000), cfg);
        List<Double> base = new ArrayList<>();
        List<Double> sampled = new ArrayList<>();
        for (int i = 0; i < pairs; i++) {
            boolean baseFirst = i % 2 == 0;
            for (int j = 0; j < 2; j++) {
                boolean b = (j == 0) == baseFirst;
                SENT.set(0);
                DROPPED.set(0);
                double ns = run(records, b ? null : cfg);
                (b ? base : sampled).add(ns);
                System.out.printf("  %-8s %6.1f ns/record%s%n", b ? "baseline" : "sampled", ns,
                        b ? "" : String.format(" (%d samples sent, %d dropped)", SENT.get(), DROPPED.get()));
            }
        }
        double mb = median(base);
        double ms = median(sampled);
        System.out.printf("median: baseline %.1f ns/record, sampled %.1f ns/record, difference %+.1f ns/record (%+.1f%%)%n",
                mb, ms, ms - mb, (ms - mb) / mb * 100);
        System.out.println("baseline runs " + Arrays.toString(base.toArray()) + ", sampled runs " + sampled);
        System.exit(0);
    }
}
