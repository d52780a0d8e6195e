-- skewlens ClickHouse schema, migration 0001: the finding tables.
--
-- Both dialects create the same tables with the same column names and
-- types as seen by queries; modern adds LowCardinality, codecs and TTL.
--   legacy: ClickHouse 18.16 up to 20.2 (Debian bookworm ships 18.16).
--   modern: ClickHouse 20.3 and later (also chDB).
--
-- Common columns of every finding table:
--   window_start, window_end  Int64 epoch milliseconds, exactly as in the
--                             findings JSON contract;
--   window_time               DateTime of window_start (seconds, UTC), for
--                             time functions;
--   window_date               Date of window_start, the partition column;
--   subtask_index             Int32, -1 for task-wide findings (sort keys
--                             cannot be Nullable on 18.16);
--   version                   UInt64 supplied by the writer (e.g. the Kafka
--                             offset); ReplacingMergeTree keeps the row with
--                             the highest version per sort key, so replaying
--                             a window after a crash replaces rows instead of
--                             duplicating them. Read with FINAL or argMax.
--   inserted_at               DateTime the sink wrote the row.
--
-- PARTITION BY toYYYYMMDD(window_date): a replayed row always lands in the
-- same partition as the original (ReplacingMergeTree only collapses rows
-- within a partition), queries filtering on window_date/window_time prune
-- whole days, and retention is a cheap per-day drop: TTL with
-- ttl_only_drop_parts on modern, `ALTER TABLE ... DROP PARTITION 20260101`
-- on legacy.
--
-- ORDER BY starts with (job_id, task_name, window_start) because nearly
-- every query filters one job (and often one task) over a time range; the
-- remaining columns make the key unique per finding, which is what
-- ReplacingMergeTree deduplicates on. Keys are hashed (cityHash64) in the
-- sort key so that 64 KB keys do not bloat the primary index.

-- dialect: all
CREATE TABLE IF NOT EXISTS {{database}}.subtask_stats
(
    job_id                    String,
    job_name                  LowCardinality(String),
    task_name                 LowCardinality(String),
    subtask_index             Int32,
    window_start              Int64 CODEC(Delta, ZSTD(1)),
    window_end                Int64 CODEC(Delta, ZSTD(1)),
    window_time               DateTime CODEC(Delta, ZSTD(1)),
    window_date               Date,
    host                      LowCardinality(String),
    task_attempt_id           String CODEC(ZSTD(1)),
    busy_ms_per_s             Float64 CODEC(ZSTD(1)),
    backpressured_ms_per_s    Float64 CODEC(ZSTD(1)),
    idle_ms_per_s             Float64 CODEC(ZSTD(1)),
    records_in_per_s          Float64 CODEC(ZSTD(1)),
    records_out_per_s         Float64 CODEC(ZSTD(1)),
    input_share               Float64 CODEC(ZSTD(1)),
    in_pool_usage             Float64 CODEC(ZSTD(1)),
    out_pool_usage            Float64 CODEC(ZSTD(1)),
    input_queue_length        Float64 CODEC(ZSTD(1)),
    output_queue_length       Float64 CODEC(ZSTD(1)),
    queue_capacity            Float64 CODEC(ZSTD(1)),
    checkpoint_alignment_ms   Float64 CODEC(ZSTD(1)),
    checkpoint_start_delay_ms Float64 CODEC(ZSTD(1)),
    saturated                 UInt8,
    task_skew_score           Float64 CODEC(ZSTD(1)),
    task_max_median_ratio     Float64 CODEC(ZSTD(1)),
    version                   UInt64 CODEC(Delta, ZSTD(1)),
    inserted_at               DateTime CODEC(Delta, ZSTD(1))
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMMDD(window_date)
ORDER BY (job_id, task_name, window_start, subtask_index)
TTL window_date + INTERVAL {{ttl_days}} DAY
SETTINGS ttl_only_drop_parts = 1;

CREATE TABLE IF NOT EXISTS {{database}}.hot_keys
(
    job_id            String,
    job_name          LowCardinality(String),
    task_name         LowCardinality(String),
    subtask_index     Int32,
    window_start      Int64 CODEC(Delta, ZSTD(1)),
    window_end        Int64 CODEC(Delta, ZSTD(1)),
    window_time       DateTime CODEC(Delta, ZSTD(1)),
    window_date       Date,
    key               String CODEC(ZSTD(3)),
    share             Float64 CODEC(ZSTD(1)),
    estimated_records Float64 CODEC(ZSTD(1)),
    summary           String CODEC(ZSTD(3)),
    version           UInt64 CODEC(Delta, ZSTD(1)),
    inserted_at       DateTime CODEC(Delta, ZSTD(1))
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMMDD(window_date)
ORDER BY (job_id, task_name, window_start, subtask_index, cityHash64(key))
TTL window_date + INTERVAL {{ttl_days}} DAY
SETTINGS ttl_only_drop_parts = 1;

CREATE TABLE IF NOT EXISTS {{database}}.findings
(
    kind                         LowCardinality(String),
    job_id                       String,
    job_name                     LowCardinality(String),
    task_name                    LowCardinality(String),
    subtask_index                Int32,
    window_start                 Int64 CODEC(Delta, ZSTD(1)),
    window_end                   Int64 CODEC(Delta, ZSTD(1)),
    window_time                  DateTime CODEC(Delta, ZSTD(1)),
    window_date                  Date,
    cause                        LowCardinality(String),
    key                          String CODEC(ZSTD(3)),
    host                         LowCardinality(String),
    task_attempt_id              String CODEC(ZSTD(1)),
    summary                      String CODEC(ZSTD(3)),
    busy_ms_per_s                Float64 CODEC(ZSTD(1)),
    backpressured_ms_per_s       Float64 CODEC(ZSTD(1)),
    records_in_per_s             Float64 CODEC(ZSTD(1)),
    peer_median_records_in_per_s Float64 CODEC(ZSTD(1)),
    input_ratio                  Float64 CODEC(ZSTD(1)),
    input_share                  Float64 CODEC(ZSTD(1)),
    checkpoint_alignment_ms      Float64 CODEC(ZSTD(1)),
    checkpoint_start_delay_ms    Float64 CODEC(ZSTD(1)),
    skew_score                   Float64 CODEC(ZSTD(1)),
    max_median_ratio             Float64 CODEC(ZSTD(1)),
    subtasks_observed            Int32,
    subtasks_saturated           Int32,
    sustained_windows            Int32,
    time_bucket_key              String CODEC(ZSTD(3)),
    previous_hot_subtask         Int32,
    backpressured_tasks          Array(LowCardinality(String)),
    parallelism                  Int32,
    max_parallelism              Int32,
    recommended_parallelism      Int32,
    evidence                     String CODEC(ZSTD(3)),
    body                         String CODEC(ZSTD(3)),
    version                      UInt64 CODEC(Delta, ZSTD(1)),
    inserted_at                  DateTime CODEC(Delta, ZSTD(1))
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMMDD(window_date)
ORDER BY (job_id, task_name, window_start, kind, subtask_index, cause, cityHash64(key))
TTL window_date + INTERVAL {{ttl_days}} DAY
SETTINGS ttl_only_drop_parts = 1;

CREATE TABLE IF NOT EXISTS {{database}}.salting_plans
(
    job_id               String,
    job_name             LowCardinality(String),
    task_name            LowCardinality(String),
    subtask_index        Int32,
    window_start         Int64 CODEC(Delta, ZSTD(1)),
    window_end           Int64 CODEC(Delta, ZSTD(1)),
    window_time          DateTime CODEC(Delta, ZSTD(1)),
    window_date          Date,
    parallelism          Int32,
    max_parallelism      Int32,
    hot_key_count        UInt32,
    max_over_mean_before Float64,
    max_over_mean_after  Float64,
    summary              String CODEC(ZSTD(3)),
    datastream           String CODEC(ZSTD(3)),
    sql                  String CODEC(ZSTD(3)),
    plan                 String CODEC(ZSTD(3)),
    version              UInt64 CODEC(Delta, ZSTD(1)),
    inserted_at          DateTime CODEC(Delta, ZSTD(1))
)
ENGINE = ReplacingMergeTree(version)
PARTITION BY toYYYYMMDD(window_date)
ORDER BY (job_id, task_name, window_start)
TTL window_date + INTERVAL {{ttl_days}} DAY
SETTINGS ttl_only_drop_parts = 1;
