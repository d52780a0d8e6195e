package io.github.skewlens.example;

import io.github.skewlens.flink.salting.KeyedResult;
import io.github.skewlens.flink.salting.SaltingConfig;
import io.github.skewlens.flink.salting.TwoPhaseAggregation;
import io.github.skewlens.flink.salting.TwoPhaseConfig;
import io.github.skewlens.flink.sampler.KeySampler;
import io.github.skewlens.flink.sampler.SamplingHook;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

/**
 * Orders summed per customer, with one hot customer: the job a Flink user
 * writes, packaged as docs/flink.md says, for skewlens to diagnose and fix.
 *
 * <p>Arguments ({@code --name value}; defaults in brackets):
 * <ul>
 *   <li>{@code --brokers}: Kafka bootstrap servers for the key samples
 *       (required);</li>
 *   <li>{@code --salting-url}: skewlens' salting API (required);</li>
 *   <li>{@code --parallelism} [4] and {@code --max-parallelism} [128] of the
 *       summing task, "Partial sums";</li>
 *   <li>{@code --rate}: orders per second [2000]; {@code --hot-share}: the
 *       share of orders of customer-42 [0.5];</li>
 *   <li>{@code --cost-ms}: work per order in the summing task, in ms, slept
 *       [0.9]: at the defaults the subtask of customer-42 is saturated and
 *       its peers are not;</li>
 *   <li>{@code --sample-rate}: the key sampler's rate [0.05], and
 *       {@code --samples-topic} its topic [flink-key-samples];</li>
 *   <li>{@code --job-name} [hotkey-job];</li>
 *   <li>{@code --checkpoint-interval}: ms between checkpoints [0: none,
 *       checkpointing off]; the first one comes a whole interval after
 *       the start (the minimum pause is the interval too), so a long one
 *       keeps the job before its first checkpoint;</li>
 *   <li>{@code --report-to}: Kafka bootstrap servers for skewlens'
 *       reporter when the job runs from {@code main()} (local mode), and
 *       {@code --report-topic} its topic [flink-metrics]; on a cluster
 *       the cluster's configuration decides [none].</li>
 * </ul>
 */
public final class HotKeyJob {
    /** The summing task's name: the task the salting plans target. */
    public static final String TASK = "Partial sums";

    private HotKeyJob() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> a = parse(args);
        String brokers = a.get("brokers");
        String saltingUrl = a.get("salting-url");
        if (brokers == null || saltingUrl == null) {
            throw new IllegalArgumentException("--brokers and --salting-url are required");
        }
        int parallelism = Integer.parseInt(a.getOrDefault("parallelism", "4"));
        int maxParallelism = Integer.parseInt(a.getOrDefault("max-parallelism", "128"));
        double rate = Double.parseDouble(a.getOrDefault("rate", "2000"));
        double hotShare = Double.parseDouble(a.getOrDefault("hot-share", "0.5"));
        double costMs = Double.parseDouble(a.getOrDefault("cost-ms", "0.9"));

        // Run from main() or an IDE, Flink starts a MiniCluster in this JVM:
        // the reporter then comes from the classpath (the provided
        // skewlens-flink-reporter dependency, which this jar does not
        // bundle) and its keys from this Configuration. On a cluster they
        // are ignored: its config.yaml and plugins/ decide.
        Configuration conf = new Configuration();
        if (a.containsKey("report-to")) {
            conf.setString("metrics.reporter.skewlens.factory.class",
                    "io.github.skewlens.flink.reporter.SkewlensReporterFactory");
            conf.setString("metrics.reporter.skewlens.bootstrap.servers", a.get("report-to"));
            conf.setString("metrics.reporter.skewlens.topic", a.getOrDefault("report-topic", "flink-metrics"));
            conf.setString("metrics.reporter.skewlens.interval", "5 s");
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setMaxParallelism(maxParallelism);
        long checkpointMs = Long.parseLong(a.getOrDefault("checkpoint-interval", "0"));
        if (checkpointMs > 0) {
            env.enableCheckpointing(checkpointMs);
            // Flink draws the first checkpoint's delay between the minimum
            // pause and the interval: without this it may come at once.
            env.getCheckpointConfig().setMinPauseBetweenCheckpoints(checkpointMs);
        }
        DataGeneratorSource<Order> source = new DataGeneratorSource<>(new Orders(hotShare), Long.MAX_VALUE,
                RateLimiterStrategy.perSecond(rate), TypeInformation.of(Order.class));
        DataStream<Order> orders = env.fromSource(source, WatermarkStrategy.noWatermarks(), "Orders")
                .setParallelism(1);

        KeySampler.Config sampling = KeySampler.Config.of(brokers);
        sampling.sampleRate = Double.parseDouble(a.getOrDefault("sample-rate", "0.05"));
        sampling.sender.topic = a.getOrDefault("samples-topic", sampling.sender.topic);
        SaltingConfig salting = SaltingConfig.http(saltingUrl, TASK, parallelism, maxParallelism);
        salting.pollInterval = Duration.ofSeconds(2);
        TwoPhaseConfig cfg = TwoPhaseConfig.of(salting);
        cfg.perRecord = new SamplingHook(sampling);
        DataStream<KeyedResult<Long>> sums =
                TwoPhaseAggregation.aggregate(orders, o -> o.customerId, new SumAmounts(costMs), Types.LONG, Types.LONG, cfg);
        sums.sinkTo(new DiscardingSink<>()).name("Discard");
        env.execute(a.getOrDefault("job-name", "hotkey-job"));
    }

    static Map<String, String> parse(String[] args) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                throw new IllegalArgumentException("want --name value pairs, got " + args[i]);
            }
            m.put(args[i].substring(2), args[++i]);
        }
        return m;
    }

    /** An order of a customer. */
    public static class Order {
        public String customerId;
        public long amount;

        public Order() {}

        public Order(String customerId, long amount) {
            this.customerId = customerId;
            this.amount = amount;
        }
    }

    /** Orders of customer-42 with the hot share, of customer-0..999 otherwise (deterministic). */
    static final class Orders implements GeneratorFunction<Long, Order> {
        private final double hotShare;

        Orders(double hotShare) {
            this.hotShare = hotShare;
        }

        @Override
        public Order map(Long i) {
            long h = i * 0x9E3779B97F4A7C15L;
            double u = (h >>> 11) * 0x1.0p-53;
            String customer = u < hotShare ? "customer-42" : "customer-" + Math.floorMod(h, 1000L);
            return new Order(customer, 1);
        }
    }

    /** Sums amounts, with a per-order cost slept in steps of at least 1 ms (never spun). */
    static final class SumAmounts implements AggregateFunction<Order, Long, Long> {
        private final long nanosPerOrder;
        private transient long owed;

        SumAmounts(double costMs) {
            this.nanosPerOrder = Math.round(costMs * 1_000_000.0);
        }

        @Override
        public Long createAccumulator() {
            return 0L;
        }

        @Override
        public Long add(Order o, Long acc) {
            owed += nanosPerOrder;
            if (owed >= 1_000_000L && !Thread.currentThread().isInterrupted()) {
                long start = System.nanoTime();
                LockSupport.parkNanos(owed);
                owed -= System.nanoTime() - start;
            }
            return acc + o.amount;
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
}
