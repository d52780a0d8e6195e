package io.github.skewlens.flink.testing;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.TopicExistsException;

/**
 * The real Kafka broker of {@code deploy/kafka} for the tests of this
 * module: one per test JVM, started on first use by {@link #bootstrap()} and
 * stopped when the JVM exits.
 *
 * <p>When {@code SKEWLENS_KAFKA_BROKERS} is set, that broker is used and
 * nothing is started (the Go tests that drive this module pass theirs).
 * Otherwise {@code deploy/kafka/install.sh} puts the jars into
 * {@code SKEWLENS_KAFKA_HOME} (default {@code ~/.cache/skewlens/kafka}) and
 * {@code start.sh} starts a KRaft broker on a free loopback port in a
 * temporary directory; its {@code KAFKA_WATCH_PID} watcher stops it if this
 * JVM dies without running its shutdown hook.
 *
 * <p>Thread safety: all methods are safe to call from any thread.
 */
public final class KafkaBroker {
    private static String bootstrap;

    private KafkaBroker() {}

    /** Returns the bootstrap servers of a running broker, starting it on the first call. */
    public static synchronized String bootstrap() {
        if (bootstrap != null) {
            return bootstrap;
        }
        String env = System.getenv("SKEWLENS_KAFKA_BROKERS");
        if (env != null && !env.isBlank()) {
            bootstrap = env.trim();
            return bootstrap;
        }
        try {
            bootstrap = start();
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException("kafka broker: " + e.getMessage(), e);
        }
        return bootstrap;
    }

    /** Creates topics (existing ones are fine) and waits for them. */
    public static void createTopic(String name, int partitions, Map<String, String> configs) {
        createTopic(bootstrap(), name, partitions, configs);
    }

    private static void createTopic(String bootstrap, String name, int partitions, Map<String, String> configs) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(p)) {
            NewTopic t = new NewTopic(name, partitions, (short) 1).configs(configs);
            try {
                admin.createTopics(List.of(t)).all().get(60, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw new IllegalStateException("create topic " + name + ": " + e.getCause(), e);
                }
            }
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (true) {
                try {
                    var d = admin.describeTopics(List.of(name)).allTopicNames().get(10, TimeUnit.SECONDS).get(name);
                    if (d.partitions().stream().allMatch(x -> x.leader() != null && !x.leader().isEmpty())) {
                        return;
                    }
                } catch (ExecutionException e) {
                    // not there yet
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("topic " + name + " has no leader after 30 s");
                }
                Thread.sleep(100);
            }
        } catch (InterruptedException | java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("create topic " + name + ": " + e, e);
        }
    }

    /** The repository's deploy directory, found from the working directory (deploy/flink). */
    public static Path deployDir() {
        Path here = Paths.get("").toAbsolutePath();
        for (Path p = here; p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("kafka/start.sh"))) {
                return p;
            }
            if (Files.isRegularFile(p.resolve("deploy/kafka/start.sh"))) {
                return p.resolve("deploy");
            }
        }
        throw new IllegalStateException("deploy/kafka/start.sh not found above " + here);
    }

    private static String start() throws IOException, InterruptedException {
        Own b = Own.create();
        Runtime.getRuntime().addShutdownHook(new Thread(b::close, "kafka-broker-stop"));
        return b.bootstrap();
    }

    /**
     * A broker of its own (not the shared one), for a test that stops it and
     * starts it again on the same port with the same data. Close it; a
     * watcher stops it should this JVM die first.
     *
     * <p>Thread safety: one thread at a time.
     */
    public static final class Own implements AutoCloseable {
        private final Path scripts;
        private final Path dir;
        private final int port;
        private final int cport;

        private Own(Path scripts, Path dir, int port, int cport) {
            this.scripts = scripts;
            this.dir = dir;
            this.port = port;
            this.cport = cport;
        }

        /** Installs Kafka if needed and starts a broker on a free port; returns once it answers. */
        public static Own create() throws IOException, InterruptedException {
            Path scripts = deployDir().resolve("kafka");
            String homeEnv = System.getenv("SKEWLENS_KAFKA_HOME");
            Path home = homeEnv != null && !homeEnv.isBlank()
                    ? Paths.get(homeEnv)
                    : Paths.get(System.getProperty("user.home"), ".cache", "skewlens", "kafka");
            run(List.of("bash", scripts.resolve("install.sh").toString(), home.toString()), Duration.ofMinutes(10));
            Path dir = Files.createTempDirectory("skewlens-flink-kafka-");
            Files.createSymbolicLink(dir.resolve("libs"), home.resolve("libs"));
            Own b = new Own(scripts, dir, freePort(), freePort());
            b.start();
            return b;
        }

        /** The bootstrap servers: the same across stop and start. */
        public String bootstrap() {
            return "127.0.0.1:" + port;
        }

        /** Starts the stopped broker again on its port, with its data; returns once it answers. */
        public void start() throws IOException, InterruptedException {
            run(List.of("bash", scripts.resolve("start.sh").toString(), dir.toString(),
                    Integer.toString(port), Integer.toString(cport)), Duration.ofSeconds(90));
        }

        /** Stops the broker (cleanly, SIGTERM) and waits until it is gone; its data stays. */
        public void stop() throws IOException, InterruptedException {
            run(List.of("bash", scripts.resolve("stop.sh").toString(), dir.toString()), Duration.ofSeconds(60));
        }

        /** Stops the broker if it runs; safe twice. */
        @Override
        public void close() {
            try {
                stop();
            } catch (IOException | InterruptedException e) {
                System.err.println("KafkaBroker: stop: " + e);
            }
        }

        /** Creates a topic on this broker and waits for its leader (see {@link KafkaBroker#createTopic}). */
        public void createTopic(String name, int partitions, Map<String, String> configs) {
            KafkaBroker.createTopic(bootstrap(), name, partitions, configs);
        }
    }

    private static void run(List<String> cmd, Duration timeout) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(new ArrayList<>(cmd)).redirectErrorStream(true);
        pb.environment().put("KAFKA_WATCH_PID", Long.toString(ProcessHandle.current().pid()));
        Path log = Files.createTempFile("skewlens-kafka-cmd-", ".log");
        pb.redirectOutput(log.toFile());
        Process p = pb.start();
        if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            p.destroyForcibly();
            throw new IOException(String.join(" ", cmd) + ": timed out; output:\n" + Files.readString(log));
        }
        if (p.exitValue() != 0) {
            throw new IOException(String.join(" ", cmd) + ": exit " + p.exitValue() + "; output:\n" + Files.readString(log));
        }
        Files.deleteIfExists(log);
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
