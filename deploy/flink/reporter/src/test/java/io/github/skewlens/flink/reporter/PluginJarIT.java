package io.github.skewlens.flink.reporter;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.core.plugin.DefaultPluginManager;
import org.apache.flink.core.plugin.DirectoryBasedPluginFinder;
import org.apache.flink.core.plugin.PluginManager;
import org.apache.flink.core.plugin.PluginUtils;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.streaming.util.TestStreamEnvironment;
import org.apache.flink.util.Collector;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.impl.Log4jContextFactory;
import org.junit.jupiter.api.Test;

import io.github.skewlens.flink.kafka.TopicReader;
import io.github.skewlens.flink.testing.KafkaBroker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The plugin jar (target/skewlens-flink-reporter-VERSION-plugin.jar) as Flink uses
 * it: in {@code plugins/skewlens/}, found through {@code FLINK_PLUGINS_DIR}
 * by {@link PluginUtils#createPluginManagerFromRootFolder} (what Flink's
 * JobManager and TaskManager entry points call), in a JVM whose classpath
 * has Flink but neither this module's classes nor kafka-clients nor
 * Jackson nor a compression codec. A MiniCluster there runs a short job with the reporter
 * configured as in a Flink configuration file, and the job's task metrics
 * are read back from the real broker. Runs in {@code mvn verify}, after
 * {@code package} built the jar.
 */
class PluginJarIT {
    static final String FACTORY = "io.github.skewlens.flink.reporter.SkewlensReporterFactory";
    static final String SHADED = "io/github/skewlens/flink/shaded/";

    static Path pluginJar() {
        String p = System.getProperty("skewlens.pluginJar");
        assertTrue(p != null && Files.isRegularFile(Paths.get(p)),
                "the plugin jar " + p + " is missing: run `mvn verify` (it is built in `package`)");
        return Paths.get(p);
    }

    /** The plugin jar's size bound (issue 22: the reporter alone, lean). */
    static final long MAX_BYTES = 8L << 20;

    @Test
    void jarBundlesRelocatedKafkaOnly() throws IOException {
        long size = Files.size(pluginJar());
        System.err.printf("plugin jar: %.1f MB%n", size / 1048576.0);
        assertTrue(size <= MAX_BYTES, "the plugin jar is " + size + " bytes, more than " + MAX_BYTES);
        Map<String, Integer> top = new HashMap<>();
        List<String> bad = new ArrayList<>();
        String services;
        try (JarFile jar = new JarFile(pluginJar().toFile())) {
            for (Iterator<JarEntry> it = jar.entries().asIterator(); it.hasNext(); ) {
                String n = it.next().getName();
                String path = n.replaceFirst("^META-INF/versions/\\d+/", "");
                if (path.startsWith("org/apache/kafka/") || path.startsWith("com/fasterxml/")
                        || path.startsWith(SHADED + "com/fasterxml/") || path.startsWith("com/github/luben/")
                        || path.startsWith("net/jpountz/") || path.startsWith("org/xerial/")
                        || path.startsWith("io/github/skewlens/flink/salting/") || path.startsWith("io/github/skewlens/flink/sampler/")
                        || path.startsWith("org/apache/flink/") || path.startsWith("org/slf4j/")
                        || path.startsWith("org/apache/logging/") || path.endsWith("module-info.class")) {
                    bad.add(n);
                }
                if (n.endsWith(".class")) {
                    String[] c = path.split("/");
                    int depth = path.startsWith(SHADED) ? 8 : 3;
                    top.merge(String.join(".", List.of(c).subList(0, Math.min(depth, c.length - 1))), 1, Integer::sum);
                }
            }
            for (String c : List.of("io/github/skewlens/flink/reporter/SkewlensReporterFactory.class",
                    "io/github/skewlens/flink/kafka/LineSender.class",
                    SHADED + "org/apache/kafka/clients/producer/KafkaProducer.class")) {
                assertTrue(jar.getEntry(c) != null, c + " is not in the plugin jar");
            }
            services = read(jar, "META-INF/services/org.apache.flink.metrics.reporter.MetricReporterFactory");
            assertTrue(jar.getEntry("META-INF/services/io.github.skewlens.flink.shaded.org.apache.kafka"
                    + ".common.config.provider.ConfigProvider") != null, "Kafka's services file was not relocated");
            assertEquals("true", jar.getManifest().getMainAttributes().getValue("Multi-Release"));
        }
        System.err.println("plugin jar classes by top-level package: " + top);
        assertTrue(bad.isEmpty(), "unrelocated or unwanted entries: " + bad.subList(0, Math.min(10, bad.size())));
        assertEquals(FACTORY, services.strip());
    }

    private static String read(JarFile jar, String name) throws IOException {
        JarEntry e = jar.getJarEntry(name);
        assertTrue(e != null, name + " is not in the plugin jar");
        try (InputStream in = jar.getInputStream(e)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @Test
    void flinkLoadsTheReporterFromPluginsAndItSendsTaskMetrics() throws Exception {
        long t0 = System.nanoTime();
        Path plugins = pluginsDir();

        String topic = "plugin-jar-" + UUID.randomUUID();
        KafkaBroker.createTopic(topic, 2, Map.of());
        long t1 = System.nanoTime();

        // Flink's JVM: the test classpath without skewlens' modules and
        // without what the plugin bundles (its main class is in
        // test-classes; the test jar of skewlens-flink-common, test
        // utilities only, stays for its log4j2-test.properties).
        List<String> cp = new ArrayList<>();
        String full = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        for (String e : full.split(File.pathSeparator)) {
            String f = Paths.get(e).getFileName().toString();
            boolean ours = e.endsWith("target" + File.separator + "classes")
                    || f.startsWith("skewlens-flink-") && !f.endsWith("-tests.jar");
            boolean bundled = f.startsWith("kafka-clients-") || f.startsWith("jackson-") || f.startsWith("zstd-jni-")
                    || f.startsWith("lz4-java-") || f.startsWith("snappy-java-");
            if (!e.isEmpty() && !ours && !bundled) {
                cp.add(e);
            }
        }
        Path log = Paths.get("target", "it-plugin-cluster.log").toAbsolutePath();
        ProcessBuilder pb = new ProcessBuilder(Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx512m", "-XX:TieredStopAtLevel=1", "-cp", String.join(File.pathSeparator, cp), FlinkProcess.class.getName(),
                KafkaBroker.bootstrap(), topic)
                .redirectErrorStream(true).redirectOutput(log.toFile());
        pb.environment().put("FLINK_PLUGINS_DIR", plugins.toString());
        Process p = pb.start();
        try {
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                fail("the Flink JVM did not finish in 60 s:\n" + tail(log));
            }
        } finally {
            p.destroyForcibly();
        }
        long t2 = System.nanoTime();
        String out = Files.readString(log);
        assertEquals(0, p.exitValue(), "the Flink JVM failed:\n" + tail(log));
        Matcher m = Pattern.compile("(?m)^job_id=([0-9a-f]{32})$").matcher(out);
        assertTrue(m.find(), "no job id:\n" + tail(log));
        String jobId = m.group(1);
        // Every run of a job is keyed by its name (LineSender.recordKey).
        String jobName = "skewlens plugin jar";
        assertTrue(out.contains("factory loaded from " + plugins.resolve("skewlens")), "factory not from the plugin:\n" + tail(log));
        assertTrue(out.contains("skewlens reporter: sending"), "reporter not opened:\n" + tail(log));
        assertTrue(!out.contains(" ERROR "), "errors in the Flink JVM:\n" + tail(log));

        List<TopicReader.KeyedLine> lines;
        String busy = "\"name\":\"taskmanager.job.task.busyTimeMsPerSecond\"";
        String acc = "\"name\":\"taskmanager.job.task.accumulateBusyTimeMs\"";
        String sent = "\"name\":\"skewlens.reporter.sentLines\"";
        try (TopicReader r = new TopicReader(topic)) {
            lines = r.readUntil(l -> l.stream().anyMatch(x -> x.line().contains(busy) && jobName.equals(x.key()))
                    && l.stream().anyMatch(x -> x.line().contains(acc) && jobName.equals(x.key()))
                    && l.stream().anyMatch(x -> x.line().contains(sent) && jobName.equals(x.key())), 15_000);
        }
        assertTrue(lines.stream().anyMatch(x -> x.line().contains(busy) && x.line().contains("\"task_name\":\"Count per key")
                        && x.line().contains("\"job_id\":\"" + jobId + "\"") && jobName.equals(x.key())),
                "no busyTimeMsPerSecond of the job's keyed task keyed by its job name in " + lines.size() + " lines");
        assertTrue(lines.stream().anyMatch(x -> x.line().contains(acc)), "no accumulateBusyTimeMs");
        // The reporter's own lines go with a job's, not to a partition of
        // their own that skewlens would skip entirely (issue 21).
        assertTrue(lines.stream().anyMatch(x -> x.line().contains(sent) && jobName.equals(x.key())),
                "no skewlens.reporter.sentLines keyed by the job's name");
        System.err.printf("plugin jar in a Flink JVM: %d lines of job %s; broker and topic %.1f s, Flink JVM %.1f s,"
                + " reading %.1f s%n", lines.size(), jobId, (t1 - t0) / 1e9, (t2 - t1) / 1e9, (System.nanoTime() - t2) / 1e9);
    }

    /**
     * Class names in producer.* values are looked up in the plugin, where
     * Kafka's classes carry the shaded prefix: a SASL login module named
     * as in Kafka's documentation is not found, and the reporter reports
     * nothing (one ERROR line); with the prefix the producer starts.
     */
    @Test
    void producerClassNamesTakeTheShadedPrefix() throws Exception {
        PluginManager pm = new DefaultPluginManager(new DirectoryBasedPluginFinder(pluginsDir()).findPlugins(),
                CoreOptions.getPluginParentFirstLoaderPatterns(new Configuration()));
        MetricReporterFactory factory = null;
        for (Iterator<MetricReporterFactory> it = pm.load(MetricReporterFactory.class); it.hasNext(); ) {
            MetricReporterFactory f = it.next();
            if (f.getClass().getName().equals(FACTORY)) {
                factory = f;
            }
        }
        assertTrue(factory != null && factory.getClass() != SkewlensReporterFactory.class,
                "no factory from the plugin: " + factory);
        String module = "org.apache.kafka.common.security.plain.PlainLoginModule";
        System.err.println("PluginJarIT: the next ERROR line (\"Failed to construct kafka producer\") is expected");
        assertEquals(false, opens(factory, module), module);
        assertEquals(true, opens(factory, "io.github.skewlens.flink.shaded." + module), "shaded " + module);
    }

    /** Whether the plugin's reporter starts its producer with SASL/PLAIN through this login module. */
    private static boolean opens(MetricReporterFactory f, String loginModule) throws Exception {
        MetricConfig c = new MetricConfig();
        c.setProperty("bootstrap.servers", "127.0.0.1:1");
        c.setProperty("producer.security.protocol", "SASL_PLAINTEXT");
        c.setProperty("producer.sasl.mechanism", "PLAIN");
        c.setProperty("producer.sasl.jaas.config", loginModule + " required username=\"u\" password=\"p\";");
        MetricReporter r = f.createMetricReporter(c);
        quietShadedKafka();
        r.open(c);
        try {
            // SkewlensReporter#sender() of the plugin's copy of the class.
            Method sender = r.getClass().getDeclaredMethod("sender");
            sender.setAccessible(true);
            return sender.invoke(r) != null;
        } finally {
            r.close();
        }
    }

    /**
     * The test logging configuration logs io.github.skewlens at INFO, and
     * the plugin's Kafka client logs under io.github.skewlens.flink.shaded,
     * in a logger context of its own (log4j's contexts follow the class
     * loader): WARN there, in every context.
     */
    private static void quietShadedKafka() {
        String name = "io.github.skewlens.flink.shaded";
        for (LoggerContext ctx : ((Log4jContextFactory) LogManager.getFactory()).getSelector().getLoggerContexts()) {
            if (ctx.getConfiguration().getLoggers().get(name) == null) {
                ctx.getConfiguration().addLogger(name, new LoggerConfig(name, Level.WARN, true));
                ctx.updateLoggers();
            }
        }
    }

    /** target/it-plugins, holding skewlens/ with the plugin jar, as Flink's plugins/ would. */
    private static synchronized Path pluginsDir() throws IOException {
        Path plugins = Paths.get("target", "it-plugins").toAbsolutePath();
        Path jar = plugins.resolve("skewlens").resolve(pluginJar().getFileName());
        if (!Files.isRegularFile(jar) || Files.size(jar) != Files.size(pluginJar())
                || Files.getLastModifiedTime(jar).compareTo(Files.getLastModifiedTime(pluginJar())) < 0) {
            deleteTree(plugins);
            Files.createDirectories(jar.getParent());
            Files.copy(pluginJar(), jar, StandardCopyOption.COPY_ATTRIBUTES);
        }
        return plugins;
    }

    private static String tail(Path log) throws IOException {
        List<String> l = Files.readAllLines(log);
        return String.join("\n", l.subList(Math.max(0, l.size() - 60), l.size()));
    }

    private static void deleteTree(Path p) throws IOException {
        if (Files.exists(p)) {
            try (Stream<Path> s = Files.walk(p)) {
                for (Path x : s.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(x);
                }
            }
        }
    }

    /** Sleeps now and then, so that the keyed task is busy and the job lives for a few reports. */
    static final class SlowCount extends KeyedProcessFunction<Long, Long, Long> {
        @Override
        public void processElement(Long v, Context ctx, Collector<Long> out) throws Exception {
            if (v % 2 == 0) {
                Thread.sleep(1);
            }
            out.collect(v);
        }
    }

    /**
     * The Flink JVM: args bootstrap servers and topic; FLINK_PLUGINS_DIR
     * set. Prints {@code job_id=<id>} and exits 0 after a job of a few seconds.
     */
    public static final class FlinkProcess {
        /** Classes the Flink JVM must not have on its classpath: Flink finds them only in the plugin. */
        static final List<String> NOT_ON_CLASSPATH = List.of(FACTORY,
                "org.apache.kafka.clients.producer.KafkaProducer", "com.fasterxml.jackson.databind.ObjectMapper",
                "com.github.luben.zstd.Zstd");

        public static void main(String[] args) throws Exception {
            for (String c : NOT_ON_CLASSPATH) {
                try {
                    Class.forName(c, false, FlinkProcess.class.getClassLoader());
                    throw new IllegalStateException(c + " is on the Flink JVM's classpath");
                } catch (ClassNotFoundException expected) {
                    // only in the plugin
                }
            }
            Map<String, String> conf = new HashMap<>();
            // As in a Flink configuration file.
            conf.put("metrics.reporter.skewlens.factory.class", FACTORY);
            conf.put("metrics.reporter.skewlens.interval", "1 s");
            conf.put("metrics.reporter.skewlens.bootstrap.servers", args[0]);
            conf.put("metrics.reporter.skewlens.topic", args[1]);
            // The one codec the plugin supports besides none: gzip, in the JDK.
            conf.put("metrics.reporter.skewlens.producer.compression.type", "gzip");
            Configuration config = Configuration.fromMap(conf);
            PluginManager plugins = PluginUtils.createPluginManagerFromRootFolder(config);
            for (Iterator<MetricReporterFactory> it = plugins.load(MetricReporterFactory.class); it.hasNext(); ) {
                MetricReporterFactory f = it.next();
                if (f.getClass().getName().equals(FACTORY)) {
                    Path jar = Paths.get(f.getClass().getProtectionDomain().getCodeSource().getLocation().toURI());
                    System.out.println("factory loaded from " + jar.getParent() + " by " + f.getClass().getClassLoader());
                }
            }
            MiniClusterConfiguration mc = new MiniClusterConfiguration.Builder()
                    .setConfiguration(config)
                    .setNumTaskManagers(1)
                    .setNumSlotsPerTaskManager(2)
                    .setPluginManager(plugins)
                    .build();
            try (MiniCluster cluster = new MiniCluster(mc)) {
                cluster.start();
                StreamExecutionEnvironment env = new TestStreamEnvironment(cluster, 2);
                env.fromSequence(1, 4_000).name("numbers")
                        .keyBy(v -> v % 16)
                        .process(new SlowCount()).name("Count per key")
                        .sinkTo(new DiscardingSink<>()).name("discard");
                JobExecutionResult res = env.execute("skewlens plugin jar");
                System.out.println("job_id=" + res.getJobID());
            } // closing the cluster closes the reporter, which sends what it holds
            System.exit(0);
        }
    }
}
