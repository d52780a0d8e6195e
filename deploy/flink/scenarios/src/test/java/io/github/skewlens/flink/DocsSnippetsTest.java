package io.github.skewlens.flink;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MetricOptions;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.JobVertex;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.KeyedStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.api.config.AggregatePhaseStrategy;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.api.config.OptimizerConfigOptions;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.Test;

import io.github.skewlens.flink.reporter.SkewlensReporter;
import io.github.skewlens.flink.salting.KeyedResult;
import io.github.skewlens.flink.salting.Salted;
import io.github.skewlens.flink.salting.Salting;
import io.github.skewlens.flink.salting.SaltingConfig;
import io.github.skewlens.flink.salting.TwoPhaseAggregation;
import io.github.skewlens.flink.salting.TwoPhaseConfig;
import io.github.skewlens.flink.sampler.KeySampler;
import io.github.skewlens.flink.sampler.SamplingHook;
import io.github.skewlens.flink.sampler.SamplingPassThrough;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The code and configuration of docs/flink.md, as written there: each
 * snippet compiles against this module and Flink 2.3.0, and builds the job
 * graph the document describes (task names, parallelism). Keep the two in
 * step: a change here is a change of the document.
 */
class DocsSnippetsTest {

    // ---- docs/flink.md: the record type of the snippets --------------------------------

    /** An order (a Flink POJO). */
    public static class Order {
        public String customerId;
        public long amount;

        public Order() {}

        public Order(String customerId, long amount) {
            this.customerId = customerId;
            this.amount = amount;
        }
    }

    // ---- docs/flink.md: "Sampling keys in your own keyed function" ---------------------

    public static class CountPerCustomer extends KeyedProcessFunction<String, Order, Long> {
        private final KeySampler.Config sampling;
        private transient KeySampler sampler;

        public CountPerCustomer(KeySampler.Config sampling) {
            this.sampling = sampling;
        }

        @Override
        public void open(OpenContext ctx) {
            sampler = KeySampler.open(getRuntimeContext(), sampling);
        }

        @Override
        public void processElement(Order o, Context ctx, Collector<Long> out) {
            sampler.sample(ctx.getCurrentKey()); // the key as keyBy returned it
            out.collect(o.amount);
        }

        @Override
        public void close() {
            sampler.close();
        }
    }

    // ---- docs/flink.md: "Salting with two-phase aggregation" ---------------------------

    /** Sum of amounts per key: add, merge, result (not a RichFunction). */
    public static class SumAmounts implements AggregateFunction<Order, Long, Long> {
        @Override
        public Long createAccumulator() {
            return 0L;
        }

        @Override
        public Long add(Order o, Long acc) {
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

    // ---- docs/flink.md: "Salting for your own keyed operator" --------------------------

    /** Partial sums per salted key; samples the original key (Salted.key). */
    public static class PartialSums extends KeyedProcessFunction<String, Salted<Order>, Order> {
        private final KeySampler.Config sampling;
        private transient KeySampler sampler;

        public PartialSums(KeySampler.Config sampling) {
            this.sampling = sampling;
        }

        @Override
        public void open(OpenContext ctx) {
            sampler = KeySampler.open(getRuntimeContext(), sampling);
        }

        @Override
        public void processElement(Salted<Order> s, Context ctx, Collector<Order> out) {
            sampler.sample(s.key); // the original key, not s.saltedKey
            out.collect(s.value);
        }

        @Override
        public void close() {
            sampler.close();
        }
    }

    // ---- the snippets' pipelines --------------------------------------------------------

    private static StreamExecutionEnvironment env() {
        return StreamExecutionEnvironment.getExecutionEnvironment();
    }

    private static DataStream<Order> orders(StreamExecutionEnvironment env) {
        return env.fromData(new Order("customer-1", 5), new Order("customer-42", 7)).name("orders");
    }

    private static KeySampler.Config sampling() {
        // docs/flink.md, as written:
        KeySampler.Config sampling = KeySampler.Config.of("kafka-1:9092"); // topic flink-key-samples
        sampling.sampleRate = 0.01;                                      // 1 % of records (the default)
        return sampling;
    }

    private static JobVertex vertex(JobGraph g, String name) {
        for (JobVertex v : g.getVertices()) {
            if (v.getName().equals(name)) {
                return v;
            }
        }
        List<String> names = new java.util.ArrayList<>();
        g.getVertices().forEach(v -> names.add(v.getName()));
        throw new AssertionError("no task " + name + " in " + names);
    }

    @Test
    void samplerInOwnKeyedFunction() {
        StreamExecutionEnvironment env = env();
        KeySampler.Config sampling = sampling();
        sampling.validate();
        assertEquals("flink-key-samples", sampling.sender.topic);

        DataStream<Order> orders = orders(env);
        orders.keyBy(o -> o.customerId)
                .process(new CountPerCustomer(sampling)).name("Count per customer")
                .sinkTo(new DiscardingSink<>());

        JobGraph g = env.getStreamGraph().getJobGraph();
        vertex(g, "Count per customer -> Sink: Writer");
    }

    @Test
    void samplingPassThrough() {
        StreamExecutionEnvironment env = env();
        KeySampler.Config sampling = sampling();
        DataStream<Order> orders = orders(env);

        KeyedStream<Order, String> keyed = SamplingPassThrough.sampleKeys(orders.keyBy(o -> o.customerId), sampling);
        keyed.reduce((a, b) -> new Order(a.customerId, a.amount + b.amount)).name("Sum per customer")
                .sinkTo(new DiscardingSink<>());

        JobGraph g = env.getStreamGraph().getJobGraph();
        // Chained: samples and metrics carry the same task name.
        vertex(g, "skewlens key sampler -> Sum per customer -> Sink: Writer");
    }

    @Test
    void twoPhaseAggregation() {
        StreamExecutionEnvironment env = env();
        KeySampler.Config sampling = sampling();
        DataStream<Order> orders = orders(env);

        SaltingConfig salting = SaltingConfig.http("http://skewlens:8080", "Partial sums", 8, 128);
        TwoPhaseConfig cfg = TwoPhaseConfig.of(salting);
        cfg.perRecord = new SamplingHook(sampling); // samples the original key in phase 1
        SingleOutputStreamOperator<KeyedResult<Long>> sums =
                TwoPhaseAggregation.aggregate(orders, o -> o.customerId, new SumAmounts(), cfg);
        sums.sinkTo(new DiscardingSink<>());

        JobGraph g = env.getStreamGraph().getJobGraph();
        JobVertex p1 = vertex(g, "Partial sums");
        assertEquals(8, p1.getParallelism());
        assertEquals(128, p1.getMaxParallelism());
        vertex(g, "Partial sums (merge) -> Sink: Writer");
        List<String> names = new java.util.ArrayList<>();
        g.getVertices().forEach(v -> names.add(v.getName()));
        assertTrue(names.contains("Source: orders -> Salt keys for Partial sums"),
                "the salting step chains to the source: " + names);
    }

    @Test
    void saltingForOwnOperator() {
        StreamExecutionEnvironment env = env();
        KeySampler.Config sampling = sampling();
        DataStream<Order> orders = orders(env);

        KeyedStream<Salted<Order>, String> keyed = Salting.apply(orders, o -> o.customerId,
                SaltingConfig.kafka("kafka-1:9092", "Partial sums", 8, 128));
        keyed.process(new PartialSums(sampling)).name("Partial sums").setParallelism(8).setMaxParallelism(128)
                .keyBy(o -> o.customerId)
                .reduce((a, b) -> new Order(a.customerId, a.amount + b.amount)).name("Sum per customer")
                .sinkTo(new DiscardingSink<>());

        JobGraph g = env.getStreamGraph().getJobGraph();
        JobVertex p1 = vertex(g, "Partial sums");
        assertEquals(8, p1.getParallelism());
        assertEquals(128, p1.getMaxParallelism());
    }

    /** The reporter options of docs/flink.md, read as the reporter reads them. */
    @Test
    void reporterOptions() {
        Properties p = new Properties();
        p.put("bootstrap.servers", "kafka-1:9092,kafka-2:9092");
        p.put("topic", "flink-metrics");
        p.put("metrics", "taskmanager.job.task.busyTimeMsPerSecond,taskmanager.job.task.accumulate*");
        p.put("queue.size", "20000");
        p.put("max.record.bytes", "262144");
        p.put("producer.security.protocol", "SASL_SSL");
        SkewlensReporter.Config c = SkewlensReporter.Config.from(p);
        c.validate();
        assertEquals("flink-metrics", c.sender.topic);
        assertEquals(List.of("taskmanager.job.task.busyTimeMsPerSecond", "taskmanager.job.task.accumulate*"), c.metrics);
        assertEquals(20000, c.sender.maxQueuedLines);
        assertEquals(262144, c.sender.maxRecordBytes);
        assertEquals(Map.of("security.protocol", "SASL_SSL"), c.sender.producer);

        assertEquals(Duration.ofSeconds(10), MetricOptions.REPORTER_INTERVAL.defaultValue(), "Flink's interval default");
        SkewlensReporter.Config defaults = SkewlensReporter.Config.from(new Properties());
        assertEquals("flink-metrics", defaults.sender.topic);
        assertEquals(20_000, defaults.sender.maxQueuedLines);
        assertEquals(256 * 1024, defaults.sender.maxRecordBytes);
        assertEquals(SkewlensReporter.DEFAULT_METRICS, defaults.metrics);
    }

    /**
     * Local mode of docs/flink.md: the reporter's keys in the job's
     * Configuration reach the environment, and the factory they name is on
     * the classpath (the thin jar's service file), where a MiniCluster in
     * the job's JVM looks for it.
     */
    @Test
    void localMode() throws Exception {
        Configuration conf = new Configuration();
        conf.setString("metrics.reporter.skewlens.factory.class", "io.github.skewlens.flink.reporter.SkewlensReporterFactory");
        conf.setString("metrics.reporter.skewlens.bootstrap.servers", "localhost:9092");
        conf.setString("metrics.reporter.skewlens.interval", "10 s");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);

        assertEquals("localhost:9092", env.getConfiguration().toMap().get("metrics.reporter.skewlens.bootstrap.servers"));
        boolean found = false;
        for (org.apache.flink.metrics.reporter.MetricReporterFactory f
                : java.util.ServiceLoader.load(org.apache.flink.metrics.reporter.MetricReporterFactory.class)) {
            found |= f.getClass().getName().equals(conf.toMap().get("metrics.reporter.skewlens.factory.class"));
        }
        assertTrue(found, "the reporter factory is not on the classpath");
    }

    /**
     * Every Java snippet of docs/flink.md starts with its imports, and
     * each import names a class of this module or of Flink 2.3.0.
     */
    @Test
    void docImportsResolve() throws Exception {
        String doc = java.nio.file.Files.readString(java.nio.file.Path.of("..", "..", "..", "docs", "flink.md"));
        java.util.regex.Matcher blocks = java.util.regex.Pattern.compile("(?s)```java\\n(.*?)```").matcher(doc);
        int snippets = 0;
        int imports = 0;
        while (blocks.find()) {
            snippets++;
            String code = blocks.group(1);
            assertTrue(code.startsWith("import "), "a snippet without imports:\n" + code);
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("(?m)^import ([\\w.]+);$").matcher(code);
            while (m.find()) {
                imports++;
                Class.forName(m.group(1), false, getClass().getClassLoader());
            }
        }
        assertTrue(snippets >= 6 && imports >= 15, snippets + " snippets, " + imports + " imports");
    }

    /** The SQL options of docs/flink.md: the keys exist in Flink 2.3.0 and the values parse. */
    @Test
    void sqlOptions() {
        Map<String, String> m = new HashMap<>();
        m.put("table.exec.mini-batch.enabled", "true");
        m.put("table.exec.mini-batch.allow-latency", "5 s");
        m.put("table.exec.mini-batch.size", "5000");
        m.put("table.optimizer.agg-phase-strategy", "TWO_PHASE");
        m.put("table.optimizer.distinct-agg.split.enabled", "true");
        Configuration c = Configuration.fromMap(m);
        assertEquals(true, c.get(ExecutionConfigOptions.TABLE_EXEC_MINIBATCH_ENABLED));
        assertEquals(Duration.ofSeconds(5), c.get(ExecutionConfigOptions.TABLE_EXEC_MINIBATCH_ALLOW_LATENCY));
        assertEquals(5000L, c.get(ExecutionConfigOptions.TABLE_EXEC_MINIBATCH_SIZE));
        assertEquals(AggregatePhaseStrategy.TWO_PHASE, c.get(OptimizerConfigOptions.TABLE_OPTIMIZER_AGG_PHASE_STRATEGY));
        assertEquals(true, c.get(OptimizerConfigOptions.TABLE_OPTIMIZER_DISTINCT_AGG_SPLIT_ENABLED));
        // The defaults the document states.
        Configuration d = new Configuration();
        assertEquals(false, d.get(ExecutionConfigOptions.TABLE_EXEC_MINIBATCH_ENABLED));
        assertEquals(AggregatePhaseStrategy.AUTO, d.get(OptimizerConfigOptions.TABLE_OPTIMIZER_AGG_PHASE_STRATEGY));
        assertEquals(false, d.get(OptimizerConfigOptions.TABLE_OPTIMIZER_DISTINCT_AGG_SPLIT_ENABLED));
        assertEquals(1024, d.get(OptimizerConfigOptions.TABLE_OPTIMIZER_DISTINCT_AGG_SPLIT_BUCKET_NUM));
    }
}
