-- skewlens ClickHouse schema, migration 0005: incidents (package
-- incident), one per run of consecutive windows of one condition.
--
-- The pipeline writes a row each time an incident opens, grows (a new
-- window with a finding) or closes. version is the incident's updated_at:
-- the end of the window that opened or extended it, or for a closed one
-- last_seen + the alerts' resolve-after; it grows with every change of
-- one incident and does not depend on when or how often the row was
-- written, so a replay after a crash writes the same rows again.
--   ReplacingMergeTree(version) ORDER BY (job_id, id): merges keep the
--   latest state of each incident; readers take argMax(column, version)
--   per id (or FINAL).
--
-- Times are Int64 epoch milliseconds of event time: incident_start is the
-- start of the first window, incident_end the end of the last window of
-- a closed incident (0 while state = 'open'), last_seen the end of the
-- latest window. subtask is -1 for a task-wide condition; key is the hot
-- key of a hot_key incident, '' otherwise. peak_* and mean_* are over the
-- windows that reported the number (0: none did). body is the
-- incident.Incident JSON, which GET /v1/incidents returns. The table is
-- small (one row per incident in the end) and never expires.

-- dialect: all
CREATE TABLE IF NOT EXISTS {{database}}.incidents
(
    id                 String,
    job_id             String,
    job_name           String,
    task_name          LowCardinality(String),
    subtask            Int32,
    cause              LowCardinality(String),
    key                String CODEC(ZSTD(3)),
    state              LowCardinality(String),
    incident_start     Int64,
    incident_end       Int64,
    last_seen          Int64,
    windows            UInt32,
    peak_busy_ms_per_s Float64,
    mean_busy_ms_per_s Float64,
    peak_input_ratio   Float64,
    mean_input_ratio   Float64,
    peak_share         Float64,
    mean_share         Float64,
    hot_keys           Array(String),
    summary            String CODEC(ZSTD(3)),
    body               String CODEC(ZSTD(3)),
    version            UInt64,
    inserted_at        DateTime
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (job_id, id);
