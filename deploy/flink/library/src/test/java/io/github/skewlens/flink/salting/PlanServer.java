package io.github.skewlens.flink.salting;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

/**
 * A tiny stand-in for skewlens serve's GET /v1/salting/{job}/{task}: it
 * answers 404 until given a plan, then 200 with a strong ETag, and 304
 * when If-None-Match carries that ETag. It records every request.
 */
final class PlanServer implements AutoCloseable {
    /** One request: the raw (still percent-encoded) path and query, If-None-Match, and the status answered. */
    record Request(String rawPath, String rawQuery, String ifNoneMatch, String authorization, int status) {}

    private final HttpServer server;
    private volatile byte[] plan;
    private volatile String etag;
    /** When set, the plan is served only to requests with this raw query (a lineage answer), others get 404. */
    private volatile String onlyForQuery;
    private final java.util.concurrent.atomic.AtomicBoolean stopped = new java.util.concurrent.atomic.AtomicBoolean();
    final List<Request> requests = new CopyOnWriteArrayList<>();

    PlanServer() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/", this::handle);
        server.start();
    }

    String url() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    /** Serve this plan from now on, with this ETag. */
    void serve(byte[] json, String tag) {
        etag = tag;
        plan = json;
    }

    /**
     * Serve this plan (another run's) only to requests whose raw query is
     * query, as skewlens serve answers a new run of a job with its job's
     * plan (its lineage answer); 404 to others.
     */
    void serveLineage(byte[] json, String tag, String query) {
        onlyForQuery = query;
        serve(json, tag);
    }

    /** Answer 404 (no plan) from now on. */
    void notFound() {
        plan = null;
        etag = null;
    }

    private void handle(HttpExchange x) throws IOException {
        try (x) {
            String inm = x.getRequestHeaders().getFirst("If-None-Match");
            byte[] p = plan;
            String tag = etag;
            int status;
            byte[] body;
            if (!x.getRequestURI().getRawPath().startsWith("/v1/salting/")) {
                status = 404;
                body = "{\"error\":\"no such route\"}".getBytes(StandardCharsets.UTF_8);
            } else if (p == null || onlyForQuery != null && !onlyForQuery.equals(x.getRequestURI().getRawQuery())) {
                status = 404;
                body = "{\"error\":\"no plan\"}".getBytes(StandardCharsets.UTF_8);
            } else if (tag.equals(inm)) {
                status = 304;
                body = null;
                x.getResponseHeaders().set("ETag", tag);
            } else {
                status = 200;
                body = p;
                x.getResponseHeaders().set("ETag", tag);
            }
            requests.add(new Request(x.getRequestURI().getRawPath(), x.getRequestURI().getRawQuery(), inm,
                    x.getRequestHeaders().getFirst("Authorization"), status));
            x.getResponseHeaders().set("Content-Type", "application/json");
            x.sendResponseHeaders(status, body == null ? -1 : body.length);
            if (body != null) {
                try (OutputStream o = x.getResponseBody()) {
                    o.write(body);
                }
            }
        }
    }

    /** Stops answering: connections are refused from now on. Idempotent. */
    void stop() {
        if (stopped.compareAndSet(false, true)) {
            server.stop(0);
        }
    }

    @Override
    public void close() {
        stop();
    }
}
