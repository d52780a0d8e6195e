-- skewlens ClickHouse schema, migration 0008: one table for the state
-- kept per consumer group and job.
--
-- A job's saved state has parts, each written by its owner when windows
-- close, after the findings and before the Kafka offsets those windows
-- freed are committed: 'engine' (skew.JobState as JSON, SaveState) and
-- 'alerts' (alert.JobSnapshot.State, SaveAlertState). They were two
-- tables of one shape, engine_state and alert_state, which migrations
-- 0002 and 0006 of older releases created; this table replaces both, and
-- those migrations are retired. Where a database has the old tables (an
-- older release set it up), their rows are copied here (the upgrade
-- section). The old tables are no longer written or read; drop them by
-- hand once no older skewlens reads this database.
--
-- ReplacingMergeTree(version) keeps one row per (consumer_group, part,
-- job_id) in the end; readers take argMax(state, version). An empty state
-- deletes the part: an ended job's engine state, a job whose alerts are
-- over. Copying twice (two instances migrating at once) is harmless: the
-- copies have the same key and version. The table is small (a row per
-- live job and part) and never partitioned or expired.

-- dialect: all
CREATE TABLE IF NOT EXISTS {{database}}.job_state
(
    consumer_group LowCardinality(String),
    part           LowCardinality(String),
    job_id         String,
    state          String CODEC(ZSTD(3)),
    version        UInt64,
    saved_at       DateTime
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (consumer_group, part, job_id);

-- upgrade: only where the old tables exist
INSERT INTO {{database}}.job_state (consumer_group, part, job_id, state, version, saved_at)
SELECT consumer_group, 'engine', job_id, state, version, saved_at FROM {{database}}.engine_state;
INSERT INTO {{database}}.job_state (consumer_group, part, job_id, state, version, saved_at)
SELECT consumer_group, 'alerts', job_id, state, version, saved_at FROM {{database}}.alert_state;
