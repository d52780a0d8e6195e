package io.github.skewlens.flink.scenario;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.Deflater;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

/** The capture ends of {@link Recorder}: gzip files, an InfluxDB stand-in, a Prometheus scraper. */
final class Capture {
    private Capture() {}

    /** A gzip file written by several threads, whole chunks at a time. */
    static final class GzFile implements AutoCloseable {
        private final OutputStream out;
        private final AtomicLong lines = new AtomicLong();

        GzFile(Path path) throws IOException {
            Files.createDirectories(path.getParent());
            out = new GZIPOutputStream(Files.newOutputStream(path), 1 << 16) {
                {
                    def.setLevel(Deflater.BEST_COMPRESSION);
                }
            };
        }

        /** Appends text, with a newline at its end if it has none. */
        synchronized void append(String text) throws IOException {
            if (text.isEmpty()) {
                return;
            }
            byte[] b = text.getBytes(StandardCharsets.UTF_8);
            out.write(b);
            if (b[b.length - 1] != '\n') {
                out.write('\n');
            }
            lines.addAndGet(text.chars().filter(c -> c == '\n').count() + (b[b.length - 1] != '\n' ? 1 : 0));
        }

        long lines() {
            return lines.get();
        }

        @Override
        public synchronized void close() throws IOException {
            out.close();
        }
    }

    /**
     * Stands in for InfluxDB: answers {@code /ping} and {@code /query}, and
     * keeps the body of every {@code POST /write} (the line protocol that
     * Flink's InfluxdbReporter sends) with a 204, as InfluxDB 1.x does.
     */
    static final class InfluxServer implements AutoCloseable {
        private final HttpServer server;
        private final ExecutorService pool = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "influx-capture");
            t.setDaemon(true);
            return t;
        });
        private final GzFile file;
        final AtomicLong writes = new AtomicLong();

        InfluxServer(GzFile file) throws IOException {
            this.file = file;
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
            server.createContext("/", this::handle);
            server.setExecutor(pool);
            server.start();
        }

        String url() {
            return "http://127.0.0.1:" + server.getAddress().getPort();
        }

        private void handle(HttpExchange ex) throws IOException {
            try (ex) {
                InputStream in = ex.getRequestBody();
                if ("gzip".equalsIgnoreCase(ex.getRequestHeaders().getFirst("Content-Encoding"))) {
                    in = new GZIPInputStream(in);
                }
                byte[] body = in.readAllBytes();
                ex.getResponseHeaders().add("X-Influxdb-Version", "1.8.10");
                String path = ex.getRequestURI().getPath();
                if (path.endsWith("/write")) {
                    file.append(new String(body, StandardCharsets.UTF_8));
                    writes.incrementAndGet();
                    ex.sendResponseHeaders(204, -1);
                } else if (path.endsWith("/query")) {
                    byte[] r = "{\"results\":[{\"statement_id\":0}]}".getBytes(StandardCharsets.UTF_8);
                    ex.getResponseHeaders().add("Content-Type", "application/json");
                    ex.sendResponseHeaders(200, r.length);
                    ex.getResponseBody().write(r);
                } else {
                    ex.sendResponseHeaders(204, -1);
                }
            }
        }

        @Override
        public void close() {
            server.stop(1);
            pool.shutdownNow();
        }
    }

    /**
     * Scrapes a Prometheus endpoint at a fixed rate, as Prometheus would, and
     * appends each scrape preceded by {@code # skewlens-scrape-time <epoch ms>}
     * (the time the scrape started; Flink's PrometheusReporter writes no
     * timestamps, so this comment is the only time a scrape has).
     * Refused connections (before the reporter is up, after it is gone) are
     * skipped.
     */
    static final class Scraper implements AutoCloseable {
        private final HttpClient client = HttpClient.newBuilder()
                .connectTimeout(Duration.ofSeconds(2)).build();
        private final ScheduledExecutorService timer;
        private final URI uri;
        private final GzFile file;
        final AtomicLong scrapes = new AtomicLong();
        final AtomicLong failures = new AtomicLong();

        Scraper(String name, int port, GzFile file, Duration interval) {
            this.uri = URI.create("http://127.0.0.1:" + port + "/metrics");
            this.file = file;
            timer = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "scrape-" + name);
                t.setDaemon(true);
                return t;
            });
            timer.scheduleAtFixedRate(this::scrape, 0, interval.toMillis(), TimeUnit.MILLISECONDS);
        }

        private void scrape() {
            long t = System.currentTimeMillis();
            try {
                HttpResponse<String> r = client.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(8))
                        .GET().build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
                if (r.statusCode() != 200 || r.body().isEmpty()) {
                    failures.incrementAndGet();
                    return;
                }
                file.append("# skewlens-scrape-time " + t + "\n" + r.body());
                scrapes.incrementAndGet();
            } catch (IOException e) {
                failures.incrementAndGet();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public void close() throws InterruptedException {
            timer.shutdown();
            timer.awaitTermination(15, TimeUnit.SECONDS);
        }
    }
}
