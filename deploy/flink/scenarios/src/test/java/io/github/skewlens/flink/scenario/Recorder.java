package io.github.skewlens.flink.scenario;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import io.github.skewlens.flink.testing.KafkaBroker;

/**
 * Records the Flink fixtures of skewlens ({@code make flink-fixtures}): for
 * each scenario, runs {@link ScenarioJob} as a child JVM with every reporter
 * on, and writes under {@code OUT/<scenario>/}:
 *
 * <ul>
 *   <li>{@code prom-filtered.txt.gz}, {@code prom-unfiltered.txt.gz}: a scrape
 *       of each PrometheusReporter every --scrape-interval, each preceded by
 *       {@code # skewlens-scrape-time <epoch ms>};</li>
 *   <li>{@code influx.txt.gz}: the bodies InfluxdbReporter POSTed to /write;</li>
 *   <li>{@code kafka-metrics.jsonl.gz}, {@code key-samples.jsonl.gz}: what
 *       skewlens' Kafka reporter and key sampler wrote during the run;</li>
 *   <li>{@code routing.jsonl.gz}: the keyed subtask of every key;</li>
 *   <li>{@code checkpoints.jsonl.gz}: Flink's REST replies about every
 *       checkpoint (with checkpointing on);</li>
 *   <li>{@code truth.json}: the scenario's ground truth.</li>
 * </ul>
 *
 * <p>Flags: --out DIR (required), --scenarios hot_key,slow_sink,...,
 * --duration 150s (per scenario), --scrape-interval 10s, --report-interval
 * 10s, --kafka-bootstrap HOST:PORT (default: {@link KafkaBroker}, which
 * starts the broker of deploy/kafka), and any other flag is passed to
 * ScenarioJob as is.
 */
public final class Recorder {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private Recorder() {}

    public static void main(String[] args) throws Exception {
        Path out = null;
        List<String> scenarios = List.of("hot_key", "modest_hot_key", "slow_sink", "under_provisioned");
        Duration duration = Duration.ofSeconds(150);
        Duration scrapeInterval = Duration.ofSeconds(10);
        Duration reportInterval = Duration.ofSeconds(10);
        String bootstrap = null;
        List<String> pass = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            String v = i + 1 < args.length ? args[i + 1] : null;
            switch (a) {
                case "--out" -> { out = Paths.get(v); i++; }
                case "--scenarios" -> { scenarios = List.of(v.split(",")); i++; }
                case "--duration" -> { duration = ScenarioOptions.duration(v); i++; }
                case "--scrape-interval" -> { scrapeInterval = ScenarioOptions.duration(v); i++; }
                case "--report-interval" -> { reportInterval = ScenarioOptions.duration(v); i++; }
                case "--kafka-bootstrap" -> { bootstrap = v; i++; }
                default -> {
                    pass.add(a);
                    if (v != null && !v.startsWith("--")) {
                        pass.add(v);
                        i++;
                    }
                }
            }
        }
        if (out == null) {
            System.err.println("Recorder: --out DIR is required");
            System.exit(2);
        }
        if (bootstrap == null) {
            log("starting the Kafka broker of deploy/kafka");
            bootstrap = KafkaBroker.bootstrap();
        }
        int failed = 0;
        for (String s : scenarios) {
            long t0 = System.nanoTime();
            boolean ok = record(s, out.resolve(s), duration, scrapeInterval, reportInterval,
                    bootstrap, pass);
            log(s + ": " + (ok ? "recorded" : "FAILED") + " in "
                    + Duration.ofNanos(System.nanoTime() - t0).toSeconds() + " s");
            if (!ok) {
                failed++;
            }
        }
        System.exit(failed == 0 ? 0 : 1);
    }

    static boolean record(String scenario, Path dir, Duration duration, Duration scrapeInterval,
            Duration reportInterval, String bootstrap, List<String> pass) throws Exception {
        Files.createDirectories(dir);
        for (String f : List.of("prom-filtered.txt.gz", "prom-unfiltered.txt.gz", "influx.txt.gz",
                "kafka-metrics.jsonl.gz", "key-samples.jsonl.gz", "routing.jsonl.gz", "checkpoints.jsonl.gz",
                "truth.json")) {
            Files.deleteIfExists(dir.resolve(f));
        }
        Path work = Files.createTempDirectory("skewlens-scenario-" + scenario + "-");
        ScenarioOptions defaults = new ScenarioOptions();
        createTopics(bootstrap, List.of(defaults.metricsTopic, defaults.samplesTopic));
        Map<TopicPartition, Long> metricsStart = endOffsets(bootstrap, defaults.metricsTopic);
        Map<TopicPartition, Long> samplesStart = endOffsets(bootstrap, defaults.samplesTopic);
        int promPort = freePort();
        int rawPort = freePort();
        List<String> cmd = new ArrayList<>(List.of(
                Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx1g", "-XX:+UseSerialGC",
                "-cp", System.getProperty("java.class.path"),
                ScenarioJob.class.getName(),
                "--scenario", scenario,
                "--duration", duration.toMillis() + "ms",
                "--report-interval", reportInterval.toMillis() + "ms",
                "--prometheus-port", Integer.toString(promPort),
                "--prometheus-unfiltered-port", Integer.toString(rawPort),
                "--out", work.toString()));
        cmd.addAll(List.of("--kafka-bootstrap", bootstrap));
        cmd.addAll(pass);
        int rc;
        long startedAt = System.currentTimeMillis();
        try (Capture.GzFile influxFile = new Capture.GzFile(dir.resolve("influx.txt.gz"));
                Capture.InfluxServer influx = new Capture.InfluxServer(influxFile);
                Capture.GzFile promFile = new Capture.GzFile(dir.resolve("prom-filtered.txt.gz"));
                Capture.GzFile rawFile = new Capture.GzFile(dir.resolve("prom-unfiltered.txt.gz"))) {
            cmd.addAll(List.of("--influx-url", influx.url()));
            log(scenario + ": " + String.join(" ", cmd.subList(5, cmd.size())));
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            Thread pump = new Thread(() -> pump(scenario, p), "pump-" + scenario);
            pump.setDaemon(true);
            pump.start();
            try (Capture.Scraper a = new Capture.Scraper("filtered", promPort, promFile, scrapeInterval);
                    Capture.Scraper b = new Capture.Scraper("unfiltered", rawPort, rawFile, scrapeInterval)) {
                if (!p.waitFor(duration.toMillis() + TimeUnit.MINUTES.toMillis(5), TimeUnit.MILLISECONDS)) {
                    log(scenario + ": ScenarioJob did not stop; killing it");
                    p.destroyForcibly().waitFor();
                }
                rc = p.exitValue();
                log(scenario + ": ScenarioJob exited " + rc + "; scrapes " + a.scrapes + "+" + b.scrapes
                        + " (refused " + a.failures + "+" + b.failures + "), influx writes " + influx.writes);
            }
            pump.join(5000);
        }
        long n = consume(bootstrap, defaults.metricsTopic, metricsStart, dir.resolve("kafka-metrics.jsonl.gz"));
        long m = consume(bootstrap, defaults.samplesTopic, samplesStart, dir.resolve("key-samples.jsonl.gz"));
        log(scenario + ": kafka " + n + " metric records, " + m + " key-sample records");
        Path truthFile = work.resolve("truth.json");
        if (rc != 0 || !Files.isRegularFile(truthFile)) {
            log(scenario + ": no truth (exit " + rc + "); left " + work);
            return false;
        }
        @SuppressWarnings("unchecked")
        Map<String, Object> truth = JSON.readValue(truthFile.toFile(), LinkedHashMap.class);
        Map<String, Object> rec = new LinkedHashMap<>();
        rec.put("recorded_at", Instant.ofEpochMilli(startedAt).toString());
        rec.put("duration_ms", duration.toMillis());
        rec.put("scrape_interval_ms", scrapeInterval.toMillis());
        rec.put("report_interval_ms", reportInterval.toMillis());
        rec.put("prometheus_filtered", Map.of("reporter", "PrometheusReporter", "filterLabelValueCharacters", true));
        rec.put("prometheus_unfiltered", Map.of("reporter", "PrometheusReporter", "filterLabelValueCharacters", false));
        rec.put("influx", Map.of("reporter", "InfluxdbReporter", "db", defaults.influxDb, "interval_ms",
                reportInterval.toMillis()));
        rec.put("java", System.getProperty("java.version"));
        truth.put("recording", rec);
        JSON.writeValue(dir.resolve("truth.json").toFile(), truth);
        try (Capture.GzFile routing = new Capture.GzFile(dir.resolve("routing.jsonl.gz"))) {
            routing.append(Files.readString(work.resolve("routing.jsonl")));
        }
        if (Files.isRegularFile(work.resolve("checkpoints.jsonl"))) {
            try (Capture.GzFile cps = new Capture.GzFile(dir.resolve("checkpoints.jsonl.gz"))) {
                cps.append(Files.readString(work.resolve("checkpoints.jsonl")));
            }
        }
        for (String f : List.of("job.json", "truth.json", "routing.jsonl", "checkpoints.jsonl")) {
            Files.deleteIfExists(work.resolve(f));
        }
        Files.deleteIfExists(work);
        return true;
    }

    private static void pump(String scenario, Process p) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                System.err.println("[" + scenario + "] " + line);
            }
        } catch (IOException e) {
            // the process is gone
        }
    }

    private static KafkaConsumer<byte[], byte[]> consumer(String bootstrap) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** Creates the topics (one partition each) unless they exist, and waits for their leaders. */
    static void createTopics(String bootstrap, List<String> names) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(p)) {
            for (String name : names) {
                try {
                    admin.createTopics(List.of(new NewTopic(name, 1, (short) 1))).all().get(60, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) {
                        throw e;
                    }
                }
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (true) {
                try {
                    boolean ready = admin.describeTopics(names).allTopicNames().get(10, TimeUnit.SECONDS).values()
                            .stream().flatMap(d -> d.partitions().stream())
                            .allMatch(x -> x.leader() != null && !x.leader().isEmpty());
                    if (ready) {
                        return;
                    }
                } catch (ExecutionException e) {
                    // not there yet
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("topics " + names + " have no leader after 30 s");
                }
                Thread.sleep(100);
            }
        }
    }

    static Map<TopicPartition, Long> endOffsets(String bootstrap, String topic) {
        try (KafkaConsumer<byte[], byte[]> c = consumer(bootstrap)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (PartitionInfo pi : c.partitionsFor(topic, Duration.ofSeconds(30))) {
                tps.add(new TopicPartition(topic, pi.partition()));
            }
            return new HashMap<>(c.endOffsets(tps, Duration.ofSeconds(30)));
        }
    }

    /** Copies the records of topic from the start offsets to the current end into a gzip file, one value a line. */
    static long consume(String bootstrap, String topic, Map<TopicPartition, Long> start, Path file)
            throws IOException {
        Map<TopicPartition, Long> end = endOffsets(bootstrap, topic);
        long n = 0;
        try (KafkaConsumer<byte[], byte[]> c = consumer(bootstrap);
                Capture.GzFile out = new Capture.GzFile(file)) {
            List<TopicPartition> tps = new ArrayList<>(end.keySet());
            c.assign(tps);
            Map<TopicPartition, Long> left = new HashMap<>();
            for (TopicPartition tp : tps) {
                long from = start.getOrDefault(tp, 0L);
                c.seek(tp, from);
                if (end.get(tp) > from) {
                    left.put(tp, end.get(tp));
                }
            }
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
            while (!left.isEmpty() && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    Long stop = left.get(new TopicPartition(r.topic(), r.partition()));
                    if (stop == null || r.offset() >= stop) {
                        continue;
                    }
                    if (r.value() != null) {
                        out.append(new String(r.value(), StandardCharsets.UTF_8));
                        n++;
                    }
                    if (r.offset() + 1 >= stop) {
                        left.remove(new TopicPartition(r.topic(), r.partition()));
                    }
                }
            }
            if (!left.isEmpty()) {
                throw new IOException(topic + ": not read to the end within 2 minutes: " + left);
            }
        }
        return n;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    static void log(String msg) {
        System.err.println(Instant.now() + " Recorder: " + msg);
    }
}
