/**
 * A Flink job with known skew, for skewlens' fixtures and closed-loop tests
 * (test code: not shipped).
 *
 * <ul>
 *   <li>{@link io.github.skewlens.flink.scenario.ScenarioJob}: a MiniCluster
 *       job (source, keyed task, sink) whose per-record costs are sleeps, so
 *       that busy time and back-pressure are real on a 2-core machine; it
 *       plays one scenario (hot_key, hot_key_onset, modest_hot_key,
 *       slow_sink, under_provisioned, healthy, checkpoint_timeout,
 *       checkpoint_recover) and writes what it knows to be true (job id,
 *       task ids, which subtask each key went to, and every checkpoint as
 *       Flink's REST API reported it: {@link
 *       io.github.skewlens.flink.scenario.CheckpointLog}).</li>
 *   <li>{@link io.github.skewlens.flink.scenario.Recorder}: runs ScenarioJob
 *       once per scenario and records what Flink's own reporters (Prometheus
 *       twice, InfluxDB) and skewlens' Kafka reporter and key sampler emit,
 *       as the fixtures under {@code testdata/flink}.</li>
 * </ul>
 */
package io.github.skewlens.flink.scenario;
