package io.github.skewlens.flink.scenario;

import java.io.IOException;
import java.io.Writer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Every checkpoint of one job as Flink's REST API reports it, polled from
 * the MiniCluster's endpoint: {@code GET /jobs/:jobid/checkpoints} (the
 * history, kept up to {@code web.checkpoints.history} entries), and for
 * each checkpoint once it has ended, {@code GET
 * /jobs/:jobid/checkpoints/details/:id/subtasks/:vertexid} for every task
 * (each subtask's start delay and alignment).
 *
 * <p>Polling once a second while the job runs, and once more after it
 * ended, misses no checkpoint: a checkpoint takes at least the REST cache's
 * refresh (1 s, {@link ScenarioJob#configuration}) to leave a history of
 * 1000. A failed request is logged and retried at the next poll; it never
 * fails the run.
 *
 * <p>Not thread safe: used by ScenarioJob's main thread only.
 */
final class CheckpointLog {
    /** What Flink writes as the failure message of a checkpoint that reached the timeout (CHECKPOINT_EXPIRED). */
    static final String EXPIRED = "Checkpoint expired before completing.";

    private final ObjectMapper json = new ObjectMapper();
    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    private final URI base;
    /** vertex id -> task name, in topological order. */
    private final Map<String, String> tasks;
    /** checkpoint id -> the latest history entry. */
    private final TreeMap<Long, JsonNode> entries = new TreeMap<>();
    /** checkpoint id -> vertex id -> the subtask details reply, fetched once the checkpoint ended. */
    private final TreeMap<Long, Map<String, JsonNode>> details = new TreeMap<>();
    private JsonNode counts;
    private String lastError;

    CheckpointLog(URI rest, String jobId, Map<String, String> tasks) {
        this.base = rest.resolve("/jobs/" + jobId + "/checkpoints");
        this.tasks = new LinkedHashMap<>(tasks);
    }

    /** Reads the history and the details of the checkpoints that ended since the last poll. */
    void poll() {
        try {
            JsonNode stats = get(base.toString());
            counts = stats.path("counts");
            for (JsonNode e : stats.path("history")) {
                long id = e.path("id").asLong();
                entries.put(id, e);
                if (!"IN_PROGRESS".equals(e.path("status").asText()) && !details.containsKey(id)) {
                    Map<String, JsonNode> per = new LinkedHashMap<>();
                    for (String vertex : tasks.keySet()) {
                        try {
                            per.put(vertex, get(base + "/details/" + id + "/subtasks/" + vertex));
                        } catch (StatusException x) {
                            // Flink answered, and has no details (they do not come back later).
                            per.put(vertex, json.createObjectNode().put("error", x.getMessage()));
                        }
                    }
                    details.put(id, per);
                }
            }
            lastError = null;
        } catch (IOException e) {
            String msg = e.toString();
            if (!msg.equals(lastError)) {
                ScenarioJob.log("checkpoint history: " + msg + " (retried at the next poll)");
            }
            lastError = msg;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private JsonNode get(String uri) throws IOException, InterruptedException {
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create(uri)).timeout(Duration.ofSeconds(10))
                .GET().build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        if (r.statusCode() != 200) {
            throw new StatusException("GET " + uri + ": " + r.statusCode() + " " + r.body());
        }
        return json.readTree(r.body());
    }

    /** Flink answered with a status other than 200. */
    private static final class StatusException extends IOException {
        private static final long serialVersionUID = 1L;

        StatusException(String msg) {
            super(msg);
        }
    }

    /** Flink's checkpoint counts of the last poll (restored, total, in_progress, completed, failed). */
    JsonNode counts() {
        return counts;
    }

    /**
     * One entry per checkpoint, by id: Flink's own fields (id, status,
     * trigger_timestamp, latest_ack_timestamp, end_to_end_duration, state
     * and checkpointed size, acknowledged subtasks; failure_timestamp and
     * failure_message when it failed), {@code timed_out} (it failed with
     * {@link #EXPIRED}), and per task the subtasks' {@code start_delay_ms}
     * and {@code alignment_ms} (null for a subtask that never acknowledged).
     */
    List<Map<String, Object>> checkpoints() {
        List<Map<String, Object>> out = new ArrayList<>();
        for (Map.Entry<Long, JsonNode> x : entries.entrySet()) {
            JsonNode e = x.getValue();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", x.getKey());
            String status = e.path("status").asText();
            m.put("status", status);
            m.put("timed_out", "FAILED".equals(status) && EXPIRED.equals(e.path("failure_message").asText()));
            m.put("is_savepoint", e.path("is_savepoint").asBoolean());
            m.put("trigger_timestamp", e.path("trigger_timestamp").asLong());
            m.put("latest_ack_timestamp", e.path("latest_ack_timestamp").asLong());
            m.put("end_to_end_duration", e.path("end_to_end_duration").asLong());
            if (e.has("failure_timestamp")) {
                m.put("failure_timestamp", e.path("failure_timestamp").asLong());
                m.put("failure_message", e.path("failure_message").isNull() ? null : e.path("failure_message").asText());
            }
            m.put("num_acknowledged_subtasks", e.path("num_acknowledged_subtasks").asInt());
            m.put("num_subtasks", e.path("num_subtasks").asInt());
            m.put("state_size", e.path("state_size").asLong());
            m.put("checkpointed_size", e.path("checkpointed_size").asLong());
            Map<String, JsonNode> per = details.get(x.getKey());
            if (per != null) {
                Map<String, List<Long>> delay = new LinkedHashMap<>();
                Map<String, List<Long>> align = new LinkedHashMap<>();
                for (Map.Entry<String, JsonNode> v : per.entrySet()) {
                    List<Long> d = new ArrayList<>();
                    List<Long> a = new ArrayList<>();
                    for (JsonNode s : v.getValue().path("subtasks")) {
                        boolean acked = s.has("start_delay");
                        d.add(acked ? s.path("start_delay").asLong() : null);
                        a.add(acked ? s.path("alignment").path("duration").asLong() : null);
                    }
                    delay.put(tasks.get(v.getKey()), d);
                    align.put(tasks.get(v.getKey()), a);
                }
                m.put("start_delay_ms", delay);
                m.put("alignment_ms", align);
            }
            out.add(m);
        }
        return out;
    }

    /**
     * Writes Flink's replies as they came, one JSON line per checkpoint:
     * {@code {"checkpoint": <history entry>, "subtasks": {<vertex id>:
     * <details reply>}}}.
     */
    void writeRaw(Path file) throws IOException {
        try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            for (Map.Entry<Long, JsonNode> x : entries.entrySet()) {
                ObjectNode line = json.createObjectNode();
                line.set("checkpoint", x.getValue());
                ObjectNode subs = line.putObject("subtasks");
                details.getOrDefault(x.getKey(), Map.of()).forEach(subs::set);
                w.write(json.writeValueAsString(line));
                w.write('\n');
            }
        }
    }
}
