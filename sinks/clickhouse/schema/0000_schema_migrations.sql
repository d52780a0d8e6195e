-- skewlens ClickHouse schema, migration 0000: the migration ledger.
--
-- Migrate runs this file on every start, before it reads which versions
-- are applied, so it must stay idempotent (IF NOT EXISTS only) and must
-- never change: later changes go into new files.
--
-- {{database}} is replaced with the configured database (validated as a
-- plain identifier); {{ttl_days}} with Config.TTLDays (modern only).
--
-- One row per applied migration. Two sinks migrating at the same time may
-- both record a version; readers use DISTINCT.

-- dialect: all
CREATE TABLE IF NOT EXISTS {{database}}.schema_migrations
(
    version    UInt32,
    name       String,
    dialect    String,
    applied_at DateTime
)
ENGINE = MergeTree
ORDER BY version;
