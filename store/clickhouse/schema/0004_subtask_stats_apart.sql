-- skewlens ClickHouse schema, migration 0004: statistics apart from
-- findings.
--
-- From this version on the sink writes a subtask_stats finding to the
-- subtask_stats table only (before, it also wrote a copy to findings,
-- where the statistics, one row per subtask and window, outnumbered the
-- findings about ten to one). subtask_stats gains the one field of the
-- finding it lacked, busy_source, so that its rows hold the whole
-- finding and GET /v1/stats can serve the findings contract from them.
-- Rows written before have busy_source = ''.
--
-- The statistics rows older sinks wrote to findings stay there (readers
-- skip kind = 'subtask_stats'); they are copies of subtask_stats rows and
-- expire with the TTL on modern servers. A migration cannot delete them
-- (every statement here must be safe to run twice, see 0000);
-- `ALTER TABLE skewlens.findings DELETE WHERE kind = 'subtask_stats'`
-- does, once, by hand.
--
-- ClickHouse 18.16 has no ADD COLUMN IF NOT EXISTS: on the legacy
-- dialect Migrate adds the column only when system.columns does not list
-- it (see Store.applyStatement), which gives the same result.

-- dialect: legacy
ALTER TABLE {{database}}.subtask_stats ADD COLUMN IF NOT EXISTS busy_source String AFTER saturated;

-- dialect: modern
ALTER TABLE {{database}}.subtask_stats ADD COLUMN IF NOT EXISTS busy_source LowCardinality(String) AFTER saturated;
