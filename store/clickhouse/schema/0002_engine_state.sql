-- skewlens ClickHouse schema, migration 0002: the engine's cross-window
-- state per consumer group and job.
--
-- The pipeline writes a job's state (skew.JobState as JSON) after the
-- findings of the windows it closed, and before it commits the Kafka
-- offsets those windows freed. A restarted pipeline loads the latest state
-- of its consumer group and so gives the findings an uninterrupted run
-- gives. ReplacingMergeTree(version) keeps one row per (consumer_group,
-- job_id) in the end; readers take argMax(state, version).
--
-- closed_up_to is the end (epoch ms) of the job's last written window.
-- The table is tiny (one row per job) and never partitioned or expired.

-- dialect: legacy
CREATE TABLE IF NOT EXISTS {{database}}.engine_state
(
    consumer_group String,
    job_id         String,
    closed_up_to   Int64,
    state          String,
    version        UInt64,
    saved_at       DateTime
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (consumer_group, job_id);

-- dialect: modern
CREATE TABLE IF NOT EXISTS {{database}}.engine_state
(
    consumer_group LowCardinality(String),
    job_id         String,
    closed_up_to   Int64,
    state          String CODEC(ZSTD(3)),
    version        UInt64,
    saved_at       DateTime
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (consumer_group, job_id);
