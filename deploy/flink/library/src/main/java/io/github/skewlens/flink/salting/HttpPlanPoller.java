package io.github.skewlens.flink.salting;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;

/**
 * Polls {@code GET {baseUrl}/v1/salting/{job_id}/{task_name}} of
 * {@code skewlens serve} every {@link SaltingConfig#pollInterval}, with
 * {@code ?job_name=…&parallelism=…&max_parallelism=…} when the job's name is
 * known (so that a new run of the job is answered with its job's newest
 * plan, docs/salting-plans.md), sending the last ETag in
 * {@code If-None-Match}:
 *
 * <ul>
 *   <li>200: a new plan (validated and applied, see {@link PlanClient});
 *       its ETag is kept.
 *   <li>304: unchanged.
 *   <li>404: the task has no plan: keys pass through.
 *   <li>anything else, or no answer within the request timeout: a failure;
 *       the plan is kept for {@link SaltingConfig#unreachableGrace} after the
 *       last answer and until its own expiry (see {@link PlanClient}), then
 *       dropped (and the ETag forgotten, so that the next answer is a full
 *       200).
 * </ul>
 *
 * <p>Blocking: only the poller's own daemon thread does network I/O
 * (HttpURLConnection, bounded by the request timeout for connect and for
 * read). Thread safety: see {@link PlanClient}; the ETag state belongs to
 * the poller thread.
 */
final class HttpPlanPoller extends PlanClient {
    /** Error bodies are read up to this many bytes, for the log line. */
    private static final int MAX_ERROR_BYTES = 512;

    final URI uri;
    private final Thread thread;
    private volatile boolean closing;
    /** The ETag of the last 200, sent as If-None-Match; poller thread only. */
    private String etag;

    HttpPlanPoller(SaltingConfig cfg, String jobId) {
        this(cfg, jobId, null);
    }

    HttpPlanPoller(SaltingConfig cfg, String jobId, String jobName) {
        super(cfg, jobId, jobName);
        this.uri = planUri(cfg.baseUrl, jobId, cfg.taskName, this.jobName, cfg.parallelism, cfg.maxParallelism);
        this.thread = new Thread(this::loop, "skewlens-salting-http-" + jobId + "-" + cfg.taskName);
        this.thread.setDaemon(true);
    }

    /** The plan URL of a task: base URL without trailing slashes, then the two percent-encoded segments. */
    static URI planUri(String baseUrl, String jobId, String taskName) {
        String b = baseUrl.trim();
        while (b.endsWith("/")) {
            b = b.substring(0, b.length() - 1);
        }
        return URI.create(b + "/v1/salting/" + PathSegments.encode(jobId) + "/" + PathSegments.encode(taskName));
    }

    /**
     * The plan URL with the job's name and the task's parallelism pair as
     * query parameters (none when jobName is null): what skewlens serve
     * needs to answer a new run with its job's newest plan.
     */
    static URI planUri(String baseUrl, String jobId, String taskName, String jobName, int parallelism, int maxParallelism) {
        URI u = planUri(baseUrl, jobId, taskName);
        if (jobName == null) {
            return u;
        }
        return URI.create(u + "?job_name=" + PathSegments.encode(jobName) + "&parallelism=" + parallelism
                + "&max_parallelism=" + maxParallelism);
    }

    @Override
    void start() {
        thread.start();
    }

    @Override
    void stop() {
        closing = true;
        thread.interrupt();
        try {
            // A poll in flight ends by its read timeout; do not hold a Flink
            // thread that long, the daemon thread exits on its own.
            thread.join(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void loop() {
        long interval = cfg.pollInterval.toNanos();
        long next = System.nanoTime();
        while (!closing) {
            try {
                pollOnce();
            } catch (RuntimeException e) {
                // A bug here must not end the poller: log it as a failure and go on.
                failure("unexpected " + e, System.nanoTime());
            }
            answered();
            long now = System.nanoTime();
            next += interval;
            if (next < now) {
                next = now + interval; // a slow poll: do not fire a burst to catch up
            }
            if (!sleep(next - now)) {
                return;
            }
        }
    }

    private void pollOnce() {
        HttpURLConnection c = null;
        try {
            c = (HttpURLConnection) uri.toURL().openConnection();
            int timeout = (int) Math.min(Integer.MAX_VALUE, cfg.requestTimeout.toMillis());
            c.setConnectTimeout(timeout);
            c.setReadTimeout(timeout);
            c.setUseCaches(false);
            c.setRequestProperty("Accept", "application/json");
            c.setRequestProperty("User-Agent", "skewlens-flink-salting");
            if (etag != null) {
                c.setRequestProperty("If-None-Match", etag);
            }
            if (cfg.bearerToken != null) {
                c.setRequestProperty("Authorization", "Bearer " + cfg.bearerToken);
            }
            int code = c.getResponseCode();
            String tag = c.getHeaderField("ETag");
            byte[] body;
            if (code == 200) {
                try (InputStream in = c.getInputStream()) {
                    body = read(in, cfg.maxPlanBytes + 1);
                }
                if (body.length > cfg.maxPlanBytes) {
                    c.disconnect(); // the rest of a huge body is not worth reading to reuse the connection
                    contact(System.nanoTime());
                    etag = tag;
                    onInvalidPlan("the answer is more than " + cfg.maxPlanBytes + " bytes", -1);
                    return;
                }
            } else {
                InputStream err = c.getErrorStream();
                body = new byte[0];
                if (err != null) {
                    try (err) {
                        body = read(err, MAX_ERROR_BYTES);
                    }
                }
            }
            onAnswer(code, tag, body, System.nanoTime());
        } catch (IOException | RuntimeException e) {
            if (c != null) {
                c.disconnect();
            }
            onFailure(e.getClass().getSimpleName() + ": " + e.getMessage() + " (GET " + uri + ")", System.nanoTime());
        }
    }

    /**
     * The state machine of one answer: status, ETag header (may be null) and
     * body (the plan for 200, the error text otherwise), at time now
     * (System.nanoTime()). Poller thread only.
     */
    void onAnswer(int status, String tag, byte[] body, long now) {
        switch (status) {
            case 200 -> {
                contact(now);
                etag = tag;
                onPlan(body);
            }
            case 304 -> contact(now);
            case 404 -> {
                contact(now);
                etag = null;
                onRetired("skewlens serve has no plan for the task (404)");
            }
            default -> onFailure("HTTP " + status + errorText(body) + " (GET " + uri + ")", now);
        }
    }

    /** A poll without a usable answer at time now. Poller thread only. */
    void onFailure(String reason, long now) {
        if (failure(reason, now)) {
            etag = null; // the next answer must carry the plan again
        }
    }

    /** The ETag sent with the next poll (for tests). */
    String etag() {
        return etag;
    }

    private static String errorText(byte[] body) {
        if (body == null || body.length == 0) {
            return "";
        }
        String s = new String(body, StandardCharsets.UTF_8).strip().replaceAll("\\s+", " ");
        return ": " + (s.length() <= 200 ? s : s.substring(0, 197) + "...");
    }

    /** Reads at most max bytes. */
    private static byte[] read(InputStream in, int max) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream(Math.min(max, 8192));
        byte[] buf = new byte[8192];
        int n;
        while (out.size() < max && (n = in.read(buf, 0, Math.min(buf.length, max - out.size()))) >= 0) {
            out.write(buf, 0, n);
        }
        return out.toByteArray();
    }
}
