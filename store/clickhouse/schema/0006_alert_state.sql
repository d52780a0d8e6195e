-- skewlens ClickHouse schema, migration 0006: the alert state machine's
-- state per consumer group and job (alert.Tracker.Snapshot), beside the
-- engine's state (0002).
--
-- The pipeline writes a job's alert state each time windows close, after
-- the engine state and before it commits the Kafka offsets those windows
-- freed. A restarted pipeline loads the latest state of its consumer
-- group, so an ongoing condition does not fire again and one that ended
-- while it was down resolves. state is alert.JobSnapshot.State (JSON with
-- its encoding version first); '' means the job's alerts are over.
-- ReplacingMergeTree(version) keeps one row per (consumer_group, job_id)
-- in the end; readers take argMax(state, version). The table is tiny (one
-- row per job) and never partitioned or expired.

-- dialect: legacy
CREATE TABLE IF NOT EXISTS {{database}}.alert_state
(
    consumer_group String,
    job_id         String,
    state          String,
    version        UInt64,
    saved_at       DateTime
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (consumer_group, job_id);

-- dialect: modern
CREATE TABLE IF NOT EXISTS {{database}}.alert_state
(
    consumer_group LowCardinality(String),
    job_id         String,
    state          String CODEC(ZSTD(3)),
    version        UInt64,
    saved_at       DateTime
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (consumer_group, job_id);
