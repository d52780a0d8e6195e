package io.github.skewlens.flink.salting;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.DateTimeException;
import java.time.OffsetDateTime;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
// Not public API (flink-runtime, unannotated), kept on purpose: a plan's
// "subtask" and "key_group" fields are checked against the routing Flink
// itself computes (murmur hash of String.hashCode over the max parallelism),
// and Flink has no public API that maps a key to its key group or subtask.
// A copy of the hash would be the same code without the guarantee; Flink
// cannot change it without breaking every keyed savepoint, so the class is
// stable in practice (the same in 1.20.5 and 2.3.0). It runs when a plan is
// parsed, never on the record path.
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;

/**
 * One task's salting plan, parsed and validated: which keys are hot and the
 * salted keys (used verbatim) each is spread over. Only the fields a job
 * needs are kept; the JSON contract is in docs/salting-plans.md.
 *
 * <p>A plan is immutable and therefore safe to share between threads; the
 * plan clients publish it through a volatile field, so that the record path
 * reads it without locks.
 */
public final class SaltingPlan {
    /** Flink's upper bound of max parallelism. */
    static final int MAX_MAX_PARALLELISM = KeyGroupRangeAssignment.UPPER_BOUND_MAX_PARALLELISM;
    /** At most this many hot keys (the bound skewlens serve puts on overrides). */
    static final int MAX_HOT_KEYS = 1024;
    /** Keys longer than this many bytes of UTF-8 are refused (skewlens' bound). */
    static final int MAX_KEY_BYTES = 64 << 10;
    /** The separator when a plan has none: skewlens' default. */
    static final String DEFAULT_SEPARATOR = "#";

    /** Trailing bytes after the object and duplicate fields make a plan invalid, not silently half-read. */
    private static final ObjectMapper JSON = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    /** expiresAtMillis of a plan that does not expire (pinned, overridden: the zero time). */
    static final long NEVER = Long.MAX_VALUE;
    /** expiresAtMillis of a plan without a readable expires_at. */
    static final long UNKNOWN = Long.MIN_VALUE;

    private final String jobId;
    private final String jobName;
    private final String taskName;
    private final long expiresAtMillis;
    private final long version;
    private final int parallelism;
    private final int maxParallelism;
    private final String separator;
    private final String source;
    private final Map<String, String[]> salts;

    private SaltingPlan(String jobId, String jobName, String taskName, long version, int parallelism, int maxParallelism,
            String separator, String source, long expiresAtMillis, Map<String, String[]> salts) {
        this.jobId = jobId;
        this.jobName = jobName;
        this.taskName = taskName;
        this.expiresAtMillis = expiresAtMillis;
        this.version = version;
        this.parallelism = parallelism;
        this.maxParallelism = maxParallelism;
        this.separator = separator;
        this.source = source;
        this.salts = salts;
    }

    /** The Flink job id the plan is for. */
    public String jobId() { return jobId; }

    /** The name of the job the plan is for; empty when the plan does not say. */
    public String jobName() { return jobName; }

    /**
     * When skewlens retires the plan unless a finding confirms it again
     * ({@code expires_at}, in skewlens' event time, which follows the
     * reporters' clocks), in epoch milliseconds; {@link #NEVER} for a plan
     * that does not expire (pinned, overridden), {@link #UNKNOWN} when the
     * plan does not say.
     */
    public long expiresAtMillis() { return expiresAtMillis; }

    /** The keyed task the plan is for. */
    public String taskName() { return taskName; }

    /** The plan's version; it grows with every material change. */
    public long version() { return version; }

    /** The parallelism the salted keys were routed for. */
    public int parallelism() { return parallelism; }

    /** The max parallelism the salted keys were routed for. */
    public int maxParallelism() { return maxParallelism; }

    /** The separator between a key and its salt. */
    public String separator() { return separator; }

    /** "engine" or "override" (empty when the plan does not say). */
    public String source() { return source; }

    /** The hot keys. */
    public Set<String> hotKeys() { return Collections.unmodifiableSet(salts.keySet()); }

    /** The salted keys of a hot key, in the plan's order; empty for other keys. */
    public List<String> saltedKeys(String key) {
        String[] s = salts.get(key);
        return s == null ? List.of() : List.of(s);
    }

    /** The record path's lookup: the plan's own array (never modify it), or null. */
    String[] lookup(String key) {
        return salts.get(key);
    }

    @Override
    public String toString() {
        return "plan v" + version + " of " + jobId + "/" + taskName + " for " + parallelism + "/" + maxParallelism
                + " (" + salts.size() + " hot keys)";
    }

    /** A plan that cannot be applied; the message says why, for a log line. */
    static final class InvalidPlanException extends Exception {
        private static final long serialVersionUID = 1L;
        /** The plan's version when it could be read, else -1. */
        final long version;

        InvalidPlanException(String reason, long version) {
            super(reason, null, false, false);
            this.version = version;
        }
    }

    /**
     * Parses and validates one plan for the given job and task. Never throws
     * anything but InvalidPlanException, whatever the bytes.
     *
     * <p>Valid means: at most maxBytes of JSON; an object with
     * {@code job_id} and {@code task_name} equal to the given ones, an
     * integer {@code version} >= 0, a parallelism pair Flink accepts, a
     * non-empty {@code separator} (default "#" when absent), and
     * {@code hot_keys}: at most 1024 distinct keys, each with at least two
     * and at most parallelism distinct salted keys that start with key +
     * separator (and {@code buckets} equal to their number when given),
     * whose {@code key_group} and {@code subtask} are where Flink routes them
     * at the plan's parallelism (and so is the hot key's {@code subtask} when
     * given). A salted key that routes elsewhere means the plan was computed
     * with another hash than Flink's; applying it would move load to the
     * wrong subtasks.
     */
    static SaltingPlan parse(byte[] json, String wantJob, String wantTask, int maxBytes) throws InvalidPlanException {
        return parse(json, wantJob, null, wantTask, maxBytes);
    }

    /**
     * As {@link #parse(byte[], String, String, int)}, but a plan of another
     * run of the job is valid too: one whose {@code job_name} is
     * wantJobName (when that is non-empty). skewlens serves a new run the
     * plan of its job's newest run until it has plans of its own (see
     * docs/salting-plans.md, "A resubmitted job").
     */
    static SaltingPlan parse(byte[] json, String wantJob, String wantJobName, String wantTask, int maxBytes)
            throws InvalidPlanException {
        try {
            return parseUnchecked(json, wantJob, wantJobName, wantTask, maxBytes);
        } catch (InvalidPlanException e) {
            throw e;
        } catch (RuntimeException e) {
            // A validation bug must not escape into the consumer thread.
            throw new InvalidPlanException("cannot read the plan: " + e, -1);
        }
    }

    private static SaltingPlan parseUnchecked(byte[] json, String wantJob, String wantJobName, String wantTask, int maxBytes)
            throws InvalidPlanException {
        if (json == null) {
            throw new InvalidPlanException("no body", -1);
        }
        if (json.length > maxBytes) {
            throw new InvalidPlanException("plan is " + json.length + " bytes, more than the limit of " + maxBytes, -1);
        }
        JsonNode root;
        try {
            root = JSON.readTree(json);
        } catch (JsonProcessingException e) {
            throw new InvalidPlanException("not JSON: " + firstLine(e.getOriginalMessage()), -1);
        } catch (IOException e) {
            throw new InvalidPlanException("not JSON: " + e.getMessage(), -1);
        }
        if (root == null || root.isMissingNode()) {
            throw new InvalidPlanException("empty body", -1);
        }
        if (!root.isObject()) {
            throw new InvalidPlanException("not a JSON object but " + shape(root), -1);
        }
        long version = -1;
        JsonNode v = root.get("version");
        if (v != null && v.isIntegralNumber() && v.canConvertToLong() && v.asLong() >= 0) {
            version = v.asLong();
        }
        String job = string(root, "job_id", version);
        String task = string(root, "task_name", version);
        String name = "";
        JsonNode jn = root.get("job_name");
        if (jn != null && jn.isTextual()) {
            name = jn.textValue();
        }
        boolean lineage = wantJobName != null && !wantJobName.isEmpty() && name.equals(wantJobName);
        if (!job.equals(wantJob) && !lineage) {
            throw new InvalidPlanException("job_id " + q(job) + " is not this job's " + q(wantJob)
                    + (wantJobName == null || wantJobName.isEmpty() ? "" : " and job_name " + q(name)
                    + " is not its name " + q(wantJobName)), version);
        }
        if (!task.equals(wantTask)) {
            throw new InvalidPlanException("task_name " + q(task) + " is not this task's " + q(wantTask), version);
        }
        if (v == null || v.isNull()) {
            throw new InvalidPlanException("version: missing", -1);
        }
        if (version < 0) {
            throw new InvalidPlanException("version: " + v + " is not an integer >= 0", -1);
        }
        int p = integer(root, "parallelism", version);
        int maxP = integer(root, "max_parallelism", version);
        if (p < 1 || maxP < p || maxP > MAX_MAX_PARALLELISM) {
            throw new InvalidPlanException("parallelism " + p + "/" + maxP + " is not a pair Flink accepts (1 <= parallelism <= max parallelism <= "
                    + MAX_MAX_PARALLELISM + ")", version);
        }
        String sep = DEFAULT_SEPARATOR;
        JsonNode s = root.get("separator");
        if (s != null && !s.isNull()) {
            if (!s.isTextual() || s.textValue().isEmpty()) {
                throw new InvalidPlanException("separator: " + shape(s) + " is not a non-empty string", version);
            }
            sep = s.textValue();
        }
        long expires = expiry(root.get("expires_at"));
        String source = "";
        JsonNode src = root.get("source");
        if (src != null && src.isTextual()) {
            source = src.textValue();
        }
        JsonNode keys = root.get("hot_keys");
        if (keys == null || keys.isNull()) {
            throw new InvalidPlanException("hot_keys: missing", version);
        }
        if (!keys.isArray()) {
            throw new InvalidPlanException("hot_keys: not an array but " + shape(keys), version);
        }
        if (keys.size() > MAX_HOT_KEYS) {
            throw new InvalidPlanException("hot_keys: " + keys.size() + " keys, more than " + MAX_HOT_KEYS, version);
        }
        Map<String, String[]> salts = new HashMap<>(Math.max(4, keys.size() * 2));
        for (int i = 0; i < keys.size(); i++) {
            JsonNode k = keys.get(i);
            if (!k.isObject()) {
                throw new InvalidPlanException("hot key " + i + ": not an object but " + shape(k), version);
            }
            String key = string(k, "key", version, "hot key " + i + ": ");
            String where = "hot key " + q(key) + ": ";
            checkKey(key, where + "key", version);
            if (salts.containsKey(key)) {
                throw new InvalidPlanException(where + "listed twice", version);
            }
            JsonNode st = k.get("subtask");
            if (st != null && !st.isNull()) {
                int want = KeyGroupRangeAssignment.assignKeyToParallelOperator(key, maxP, p);
                if (!st.isIntegralNumber() || !st.canConvertToInt() || st.intValue() != want) {
                    throw new InvalidPlanException(where + "subtask " + st + ", but Flink routes the key to " + want
                            + " at " + p + "/" + maxP, version);
                }
            }
            JsonNode salted = k.get("salted");
            if (salted == null || salted.isNull()) {
                throw new InvalidPlanException(where + "salted: missing", version);
            }
            if (!salted.isArray()) {
                throw new InvalidPlanException(where + "salted: not an array but " + shape(salted), version);
            }
            int n = salted.size();
            if (n < 2) {
                throw new InvalidPlanException(where + n + " salted key" + (n == 1 ? "" : "s")
                        + ", need at least 2 (a key with one bucket is not salted)", version);
            }
            if (n > p) {
                throw new InvalidPlanException(where + n + " salted keys, more than the parallelism " + p, version);
            }
            JsonNode b = k.get("buckets");
            if (b != null && !b.isNull() && (!b.isIntegralNumber() || !b.canConvertToInt() || b.intValue() != n)) {
                throw new InvalidPlanException(where + "buckets " + b + " but " + n + " salted keys", version);
            }
            String prefix = key + sep;
            String[] out = new String[n];
            Set<String> seen = new HashSet<>(n * 2);
            for (int j = 0; j < n; j++) {
                JsonNode t = salted.get(j);
                if (!t.isObject()) {
                    throw new InvalidPlanException(where + "salted key " + j + ": not an object but " + shape(t), version);
                }
                String sk = string(t, "key", version, where + "salted key " + j + ": ");
                checkKey(sk, where + "salted key", version);
                if (!sk.startsWith(prefix) || sk.length() == prefix.length()) {
                    throw new InvalidPlanException(where + "salted key " + q(sk) + " does not start with key + separator "
                            + q(prefix) + " followed by a salt", version);
                }
                if (!seen.add(sk)) {
                    throw new InvalidPlanException(where + "salted key " + q(sk) + " listed twice", version);
                }
                String w = where + "salted key " + q(sk) + ": ";
                int kg = integer(t, "key_group", version, w);
                int sub = integer(t, "subtask", version, w);
                int wantKg = KeyGroupRangeAssignment.assignToKeyGroup(sk, maxP);
                int wantSub = KeyGroupRangeAssignment.computeOperatorIndexForKeyGroup(maxP, p, wantKg);
                if (kg != wantKg || sub != wantSub) {
                    throw new InvalidPlanException(w + "claims key group " + kg + " on subtask " + sub
                            + ", but Flink routes it to key group " + wantKg + " on subtask " + wantSub
                            + " at " + p + "/" + maxP, version);
                }
                out[j] = sk;
            }
            salts.put(key, out);
        }
        return new SaltingPlan(job, name, task, version, p, maxP, sep, source, expires, Collections.unmodifiableMap(salts));
    }

    /**
     * expires_at as epoch milliseconds: {@link #NEVER} for the zero time
     * (year 1, as Go writes it for plans that do not expire),
     * {@link #UNKNOWN} when absent or unreadable. An unreadable expiry does
     * not make the plan invalid: only how long it is kept without an
     * answer depends on it.
     */
    static long expiry(JsonNode n) {
        if (n == null || !n.isTextual()) {
            return UNKNOWN;
        }
        try {
            OffsetDateTime t = OffsetDateTime.parse(n.textValue());
            return t.getYear() <= 1 ? NEVER : t.toInstant().toEpochMilli();
        } catch (DateTimeException | ArithmeticException e) {
            return UNKNOWN;
        }
    }

    private static String string(JsonNode n, String field, long version) throws InvalidPlanException {
        return string(n, field, version, "");
    }

    private static String string(JsonNode n, String field, long version, String where) throws InvalidPlanException {
        JsonNode f = n.get(field);
        if (f == null || f.isNull()) {
            throw new InvalidPlanException(where + field + ": missing", version);
        }
        if (!f.isTextual()) {
            throw new InvalidPlanException(where + field + ": not a string but " + shape(f), version);
        }
        return f.textValue();
    }

    private static int integer(JsonNode n, String field, long version) throws InvalidPlanException {
        return integer(n, field, version, "");
    }

    private static int integer(JsonNode n, String field, long version, String where) throws InvalidPlanException {
        JsonNode f = n.get(field);
        if (f == null || f.isNull()) {
            throw new InvalidPlanException(where + field + ": missing", version);
        }
        if (!f.isIntegralNumber() || !f.canConvertToInt()) {
            throw new InvalidPlanException(where + field + ": not an integer but " + shape(f), version);
        }
        return f.intValue();
    }

    private static void checkKey(String s, String what, long version) throws InvalidPlanException {
        // UTF-8 length without encoding a 64 KiB key twice: chars * 3 bounds it.
        if (s.length() * 3L > MAX_KEY_BYTES && s.getBytes(StandardCharsets.UTF_8).length > MAX_KEY_BYTES) {
            throw new InvalidPlanException(what + " longer than " + MAX_KEY_BYTES + " bytes", version);
        }
    }

    /** A JSON value's kind (and its text when short), for messages. */
    static String shape(JsonNode n) {
        String kind;
        if (n.isObject()) {
            kind = "an object";
        } else if (n.isArray()) {
            kind = "an array";
        } else if (n.isTextual()) {
            kind = "a string";
        } else if (n.isNumber()) {
            kind = "a number";
        } else if (n.isBoolean()) {
            kind = "a boolean";
        } else if (n.isNull()) {
            kind = "null";
        } else {
            kind = n.getNodeType().toString().toLowerCase(java.util.Locale.ROOT);
        }
        if (n.isContainerNode()) {
            return kind;
        }
        String text = n.toString();
        return text.length() <= 40 ? kind + " (" + text + ")" : kind;
    }

    /** A quoted, shortened string for log messages (keys may be 64 KiB). */
    static String q(String s) {
        String t = s.length() <= 80 ? s : s.substring(0, 77) + "...";
        StringBuilder b = new StringBuilder(t.length() + 2).append('"');
        for (int i = 0; i < t.length(); i++) {
            char c = t.charAt(i);
            if (c < 0x20 || c == 0x7f) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "unreadable";
        }
        int i = s.indexOf('\n');
        String l = i < 0 ? s : s.substring(0, i);
        return l.length() <= 200 ? l : l.substring(0, 197) + "...";
    }
}
