package io.github.skewlens.flink.scenario;

import java.io.Serializable;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The flags of {@link ScenarioJob}. {@code --name value} or
 * {@code --name=value}; durations as {@code 150s}, {@code 2m},
 * {@code 500ms} or plain seconds.
 *
 * <p>Costs are milliseconds of sleep per record; a subtask's capacity is
 * 1000 / cost records per second. Rates left at 0 are derived from the
 * scenario, the parallelism and the costs so that the scenario holds at any
 * parallelism (see {@link #effectiveRate()}).
 */
public final class ScenarioOptions implements Serializable {
    private static final long serialVersionUID = 1L;

    public enum Scenario {
        HOT_KEY, HOT_KEY_ONSET, MODEST_HOT_KEY, SLOW_SINK, UNDER_PROVISIONED, HEALTHY,
        CHECKPOINT_TIMEOUT, CHECKPOINT_RECOVER;

        public String flag() {
            return name().toLowerCase(Locale.ROOT);
        }

        /** Whether the scenario has a hot key: hot_key, modest_hot_key, and hot_key_onset from --hot-from on. */
        public boolean hot() {
            return this == HOT_KEY || this == HOT_KEY_ONSET || this == MODEST_HOT_KEY;
        }

        /**
         * Whether the scenario is about checkpoints: a sink subtask that
         * slows step by step (--sink-steps) behind aligned checkpoints with a
         * short interval and timeout.
         */
        public boolean checkpoints() {
            return this == CHECKPOINT_TIMEOUT || this == CHECKPOINT_RECOVER;
        }

        static Scenario parse(String s) {
            for (Scenario v : values()) {
                if (v.flag().equals(s)) {
                    return v;
                }
            }
            throw new IllegalArgumentException("--scenario: unknown " + s + " (hot_key, hot_key_onset, "
                    + "modest_hot_key, slow_sink, under_provisioned, healthy, checkpoint_timeout, checkpoint_recover)");
        }
    }

    /**
     * From {@code at} after the job is built (a few seconds before it
     * runs), the slow sink subtask sleeps {@code costMs} per record.
     */
    public record Step(Duration at, double costMs) implements Serializable {}

    public Scenario scenario = Scenario.HOT_KEY;
    /** How long the job runs once it is RUNNING; 0: until SIGTERM. */
    public Duration duration = Duration.ofMinutes(2);
    public int parallelism = 4;
    public int maxParallelism = 128;
    /** Records per second over all source subtasks; 0: derived. */
    public double rate;
    /** The hot key's share of the records; negative: the scenario's default (0.5, modest_hot_key 0.2). */
    public double hotShare = -1;
    /**
     * hot_key_onset: how long after the job starts the hot key starts (uniform
     * keys before); default 90 s, so that the 60 s busy-time gauges have
     * settled on the healthy load when it starts.
     */
    public Duration hotFrom = Duration.ofSeconds(90);
    /** Set by ScenarioJob.run: the epoch ms the hot key starts at (0: from the start). */
    public long hotFromEpochMs;
    public String hotKey = "customer-42";
    /** Number of distinct uniform keys (customer-0 .. customer-(keys-1)). */
    public int keys = 1000;
    public int slowSubtask = 2;
    /** Sleep per record in the keyed task; negative: the scenario's default. */
    public double keyedCostMs = -1;
    public double sinkCostMs = -1;
    public double slowSinkCostMs = 5.0;
    public int minRecordBytes = 1000;
    public int maxRecordBytes = 2000;
    public String jobName;

    public int prometheusPort = -1;
    public int prometheusUnfilteredPort = -1;
    public String influxUrl;
    public String influxDb = "flink";
    public String kafkaBootstrap;
    public String metricsTopic = "flink-metrics";
    public String samplesTopic = "flink-key-samples";
    /**
     * The key sampler's sample rate (fraction of records sampled); negative:
     * the scenario's default (0.01, modest_hot_key 0.05).
     */
    public double sampleRate = -1;
    public String saltingUrl;
    /** How often the salting helper polls skewlens serve; null: its default. */
    public Duration saltingPollInterval;
    /** How often phase 1 of the two-phase aggregation flushes its partials. */
    public Duration saltingFlushInterval = Duration.ofSeconds(1);
    public Duration reportInterval = Duration.ofSeconds(10);
    /** Checkpoint interval; 0 disables checkpointing; null: the scenario's default (see {@link #checkpointInterval()}). */
    public Duration checkpointInterval;
    /** execution.checkpointing.timeout; null: the scenario's default (see {@link #checkpointTimeout()}). */
    public Duration checkpointTimeout;
    /** execution.checkpointing.tolerable-failed-checkpoints; negative: the scenario's default. */
    public int tolerableFailedCheckpoints = -1;
    /**
     * The slow sink subtask's cost over time (checkpoint scenarios), as
     * {@code offset=cost} pairs; null: the scenario's default (see
     * {@link #sinkSteps()}).
     */
    public List<Step> sinkSteps;
    /** Set by ScenarioJob.run: the epoch ms the offsets of --sink-steps count from. */
    public long sinkStepsFromEpochMs;
    /** Where job.json, routing.jsonl and truth.json go; null: nowhere. */
    public Path out;

    public static ScenarioOptions parse(String[] args) {
        ScenarioOptions o = new ScenarioOptions();
        Map<String, String> kv = new LinkedHashMap<>();
        List<String> rest = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                rest.add(a);
                continue;
            }
            String name = a.substring(2);
            String value;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                value = name.substring(eq + 1);
                name = name.substring(0, eq);
            } else {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(a + ": needs a value");
                }
                value = args[++i];
            }
            kv.put(name, value);
        }
        if (!rest.isEmpty()) {
            throw new IllegalArgumentException("unexpected arguments: " + rest);
        }
        for (Map.Entry<String, String> e : kv.entrySet()) {
            String v = e.getValue();
            switch (e.getKey()) {
                case "scenario" -> o.scenario = Scenario.parse(v);
                case "duration" -> o.duration = duration(v);
                case "parallelism" -> o.parallelism = Integer.parseInt(v);
                case "max-parallelism" -> o.maxParallelism = Integer.parseInt(v);
                case "rate" -> o.rate = Double.parseDouble(v);
                case "hot-share" -> o.hotShare = Double.parseDouble(v);
                case "hot-key" -> o.hotKey = v;
                case "hot-from" -> o.hotFrom = duration(v);
                case "keys" -> o.keys = Integer.parseInt(v);
                case "slow-subtask" -> o.slowSubtask = Integer.parseInt(v);
                case "keyed-cost-ms" -> o.keyedCostMs = Double.parseDouble(v);
                case "sink-cost-ms" -> o.sinkCostMs = Double.parseDouble(v);
                case "slow-sink-cost-ms" -> o.slowSinkCostMs = Double.parseDouble(v);
                case "min-record-bytes" -> o.minRecordBytes = Integer.parseInt(v);
                case "max-record-bytes" -> o.maxRecordBytes = Integer.parseInt(v);
                case "job-name" -> o.jobName = v;
                case "prometheus-port" -> o.prometheusPort = Integer.parseInt(v);
                case "prometheus-unfiltered-port" -> o.prometheusUnfilteredPort = Integer.parseInt(v);
                case "influx-url" -> o.influxUrl = v;
                case "influx-db" -> o.influxDb = v;
                case "kafka-bootstrap" -> o.kafkaBootstrap = v;
                case "metrics-topic" -> o.metricsTopic = v;
                case "samples-topic" -> o.samplesTopic = v;
                case "sample-rate" -> o.sampleRate = Double.parseDouble(v);
                case "salting-url" -> o.saltingUrl = v;
                case "salting-poll-interval" -> o.saltingPollInterval = duration(v);
                case "salting-flush-interval" -> o.saltingFlushInterval = duration(v);
                case "report-interval" -> o.reportInterval = duration(v);
                case "checkpoint-interval" -> o.checkpointInterval = duration(v);
                case "checkpoint-timeout" -> o.checkpointTimeout = duration(v);
                case "tolerable-failed-checkpoints" -> o.tolerableFailedCheckpoints = Integer.parseInt(v);
                case "sink-steps" -> o.sinkSteps = steps(v);
                case "out" -> o.out = Paths.get(v);
                default -> throw new IllegalArgumentException("--" + e.getKey() + ": unknown flag");
            }
        }
        o.validate();
        return o;
    }

    void validate() {
        if (parallelism < 1 || maxParallelism < parallelism || maxParallelism > 32768) {
            throw new IllegalArgumentException("need 1 <= --parallelism <= --max-parallelism <= 32768");
        }
        if (hotShare() < 0 || hotShare() >= 1) {
            throw new IllegalArgumentException("--hot-share must be in [0, 1)");
        }
        if (!(sampleRate() > 0 && sampleRate() <= 1)) {
            throw new IllegalArgumentException("--sample-rate must be in (0, 1]");
        }
        if (hotFrom.isNegative()) {
            throw new IllegalArgumentException("--hot-from must be >= 0");
        }
        if (slowSubtask < 0 || slowSubtask >= parallelism) {
            throw new IllegalArgumentException("--slow-subtask must be in [0, parallelism)");
        }
        if (keys < 1 || minRecordBytes < 1 || maxRecordBytes < minRecordBytes) {
            throw new IllegalArgumentException("need --keys >= 1 and 1 <= --min-record-bytes <= --max-record-bytes");
        }
        if (rate < 0 || keyedCostMs() < 0 || sinkCostMs() < 0 || slowSinkCostMs < 0) {
            throw new IllegalArgumentException("rates and costs must be >= 0");
        }
        if (duration.isNegative() || reportInterval.isNegative() || reportInterval.isZero()) {
            throw new IllegalArgumentException("--duration must be >= 0 and --report-interval > 0");
        }
        if (checkpointInterval().isNegative() || checkpointTimeout().toMillis() < 10) {
            throw new IllegalArgumentException("need --checkpoint-interval >= 0 and --checkpoint-timeout >= 10ms");
        }
        List<Step> st = sinkSteps();
        for (int i = 0; i < st.size(); i++) {
            Step s = st.get(i);
            if (i == 0 ? !s.at().isZero() : s.at().compareTo(st.get(i - 1).at()) <= 0) {
                throw new IllegalArgumentException("--sink-steps: offsets must start at 0s and rise");
            }
            if (!(s.costMs() >= 0)) {
                throw new IllegalArgumentException("--sink-steps: costs must be >= 0");
            }
        }
    }

    /**
     * The checkpoint interval: --checkpoint-interval, or 20 s for the
     * checkpoint scenarios (twice the reporters' 10 s, so that a forecast
     * horizon of 3 intervals spans several readings) and 10 s for the
     * others.
     */
    public Duration checkpointInterval() {
        if (checkpointInterval != null) {
            return checkpointInterval;
        }
        return Duration.ofSeconds(scenario.checkpoints() ? 20 : 10);
    }

    /**
     * The checkpoint timeout: --checkpoint-timeout, or 90 s for the
     * checkpoint scenarios (4.5 intervals) and Flink's default of 10 min
     * for the others.
     */
    public Duration checkpointTimeout() {
        if (checkpointTimeout != null) {
            return checkpointTimeout;
        }
        return scenario.checkpoints() ? Duration.ofSeconds(90) : Duration.ofMinutes(10);
    }

    /**
     * How many checkpoints in a row may fail before the job fails:
     * --tolerable-failed-checkpoints, or for the checkpoint scenarios 1000
     * (the run goes on after its timeouts), else Flink's default 0.
     */
    public int tolerableFailedCheckpoints() {
        if (tolerableFailedCheckpoints >= 0) {
            return tolerableFailedCheckpoints;
        }
        return scenario.checkpoints() ? 1000 : 0;
    }

    /**
     * The slow sink subtask's cost schedule: --sink-steps, or the scenario's
     * default; empty for the scenarios without one. The sink is offered
     * 200 records/s a subtask (see {@link #effectiveRate()}), so the slow
     * subtask keeps up below 5 ms a record; above, its input queue fills
     * and a checkpoint barrier waits behind it, about 1 s per ms of cost
     * once the queue is full (measured: 10 ms, 10-11 s; 14 ms, 14 s; 18 ms,
     * 18 s). checkpoint_timeout: 2 ms for 30 s, then 6 ms more every 20 s
     * from 8 ms to 98 ms: checkpoints grow over several intervals and
     * expire (90 s) from about 6 min on, and the job goes on (record it
     * for 520 s). checkpoint_recover: the same rise to 56 ms (checkpoints
     * past half the timeout, not at it) held for 40 s, then back to 2 ms
     * (record it for 360 s).
     */
    public List<Step> sinkSteps() {
        if (sinkSteps != null) {
            return sinkSteps;
        }
        return switch (scenario) {
            case CHECKPOINT_TIMEOUT -> steps("0s=2,30s=8,50s=14,70s=20,90s=26,110s=32,130s=38,150s=44,170s=50,"
                    + "190s=56,210s=62,230s=68,250s=74,270s=80,290s=86,310s=92,330s=98");
            case CHECKPOINT_RECOVER -> steps("0s=2,30s=8,50s=14,70s=20,90s=26,110s=32,130s=38,150s=44,170s=50,"
                    + "190s=56,230s=2");
            default -> List.of();
        };
    }

    /** Sleep per record in the keyed task. */
    public double keyedCostMs() {
        if (keyedCostMs >= 0) {
            return keyedCostMs;
        }
        return switch (scenario) {
            case SLOW_SINK, HEALTHY, CHECKPOINT_TIMEOUT, CHECKPOINT_RECOVER -> 0.5;
            // A costly record (a lookup): at p=4 the peers of the hot
            // subtask are half busy, as in the real job of issue 20.
            case MODEST_HOT_KEY -> 7.0;
            default -> 1.0;
        };
    }

    /** The hot key's share of the records when the scenario has one: --hot-share, or the scenario's default. */
    public double hotShare() {
        if (hotShare >= 0) {
            return hotShare;
        }
        return scenario == Scenario.MODEST_HOT_KEY ? 0.2 : 0.5;
    }

    /** The key sampler's sample rate: --sample-rate, or the scenario's default. */
    public double sampleRate() {
        if (sampleRate >= 0) {
            return sampleRate;
        }
        return scenario == Scenario.MODEST_HOT_KEY ? 0.05 : 0.01;
    }

    /** Sleep per record in every sink subtask but the slow one. */
    public double sinkCostMs() {
        if (sinkCostMs >= 0) {
            return sinkCostMs;
        }
        return scenario == Scenario.SLOW_SINK || scenario.checkpoints() ? 0.2 : 0.1;
    }

    /** The share of records that carry the hot key (0 unless the scenario has one). */
    public double effectiveHotShare() {
        return scenario.hot() ? hotShare() : 0;
    }

    /** The sink subtask that is slow, or -1 unless slow_sink or a checkpoint scenario. */
    public int effectiveSlowSubtask() {
        return scenario == Scenario.SLOW_SINK || scenario.checkpoints() ? slowSubtask : -1;
    }

    /**
     * The source rate: --rate, or one derived so that the scenario holds.
     * hot_key: the hot subtask is offered 1.25x its capacity (at p=4, share
     * 0.5, 1 ms: 2000/s, hot subtask 1250/s, the others 250/s);
     * modest_hot_key: the hot subtask is offered 1.12x its capacity (at p=4,
     * share 0.2, 7 ms: 400/s, hot subtask 160/s against a capacity of
     * 143/s, the others 80/s; back-pressured, the peers get about half the
     * hot subtask's rate, ~71/s, busy ~500 ms/s); slow_sink:
     * the sinks are offered 1.5x the slow sink's capacity (p=4, 5 ms:
     * 1200/s); under_provisioned: every keyed subtask 1.5x its capacity
     * (p=4, 1 ms: 6000/s); healthy: 300/s per keyed subtask; the checkpoint
     * scenarios: 200/s per sink subtask (p=4: 800/s), which the slow sink
     * subtask keeps up with below 5 ms a record.
     */
    public double effectiveRate() {
        if (rate > 0) {
            return rate;
        }
        double keyedCap = 1000.0 / Math.max(keyedCostMs(), 0.01);
        return switch (scenario) {
            case HOT_KEY, HOT_KEY_ONSET -> 1.25 * keyedCap / (hotShare() + (1 - hotShare()) / parallelism);
            case MODEST_HOT_KEY -> 1.12 * keyedCap / (hotShare() + (1 - hotShare()) / parallelism);
            case SLOW_SINK -> 1.5 * parallelism * 1000.0 / Math.max(slowSinkCostMs, 0.01);
            case UNDER_PROVISIONED -> 1.5 * parallelism * keyedCap;
            case HEALTHY -> 300.0 * parallelism;
            case CHECKPOINT_TIMEOUT, CHECKPOINT_RECOVER -> 200.0 * parallelism;
        };
    }

    public String jobName() {
        return jobName != null ? jobName : "skewlens-scenario-" + scenario.flag();
    }

    /** Parses {@code offset=cost,...}, e.g. {@code 0s=2,30s=5}. */
    static List<Step> steps(String s) {
        List<Step> l = new ArrayList<>();
        for (String p : s.split(",")) {
            int eq = p.indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException("--sink-steps: want offset=cost, got " + p);
            }
            try {
                l.add(new Step(duration(p.substring(0, eq)), Double.parseDouble(p.substring(eq + 1).trim())));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--sink-steps: not a cost: " + p, e);
            }
        }
        return List.copyOf(l);
    }

    static Duration duration(String s) {
        String t = s.trim().toLowerCase(Locale.ROOT);
        try {
            if (t.endsWith("ms")) {
                return Duration.ofMillis(Long.parseLong(t.substring(0, t.length() - 2)));
            }
            if (t.endsWith("s")) {
                return Duration.ofMillis(Math.round(Double.parseDouble(t.substring(0, t.length() - 1)) * 1000));
            }
            if (t.endsWith("m")) {
                return Duration.ofMillis(Math.round(Double.parseDouble(t.substring(0, t.length() - 1)) * 60_000));
            }
            if (t.endsWith("h")) {
                return Duration.ofMillis(Math.round(Double.parseDouble(t.substring(0, t.length() - 1)) * 3_600_000));
            }
            return Duration.ofMillis(Math.round(Double.parseDouble(t) * 1000));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a duration: " + s, e);
        }
    }
}
