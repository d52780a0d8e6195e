-- skewlens ClickHouse schema, migration 0007: hot keys with their
-- margins.
--
-- The engine now writes every hot key's share with the half-width of its
-- 95 % interval (share ± share_margin), the rule that named it ("task" or
-- "subtask"), and, for a key on a saturated subtask with skewed input,
-- its share of that subtask's sampled records (subtask_share ±
-- subtask_share_margin), the subtask's input above its peers' median as
-- a share of its input (subtask_excess) and the part of that excess the
-- key accounts for (excess_explained). hot_keys gains them as columns, so
-- that skewlens top and queries read them as they read share; the rest of
-- the rule's numbers (share_lower_bound, threshold, evidence_windows,
-- evidence_records) stay in the body of the key's findings row, as the
-- earlier labels (saturated, skews_subtask) do.
--
-- Rows written before have 0 and '' here: a margin of 0 means "none
-- known", and every reader shows such a share as it did before.
--
-- ClickHouse 18.16 has no ADD COLUMN IF NOT EXISTS: on the legacy
-- dialect Migrate adds each column only when system.columns does not
-- list it (see Store.applyStatement and migration 0004).

-- dialect: all
ALTER TABLE {{database}}.hot_keys ADD COLUMN IF NOT EXISTS share_margin Float64 CODEC(ZSTD(1)) AFTER share;
ALTER TABLE {{database}}.hot_keys ADD COLUMN IF NOT EXISTS rule LowCardinality(String) AFTER estimated_records;
ALTER TABLE {{database}}.hot_keys ADD COLUMN IF NOT EXISTS subtask_share Float64 CODEC(ZSTD(1)) AFTER rule;
ALTER TABLE {{database}}.hot_keys ADD COLUMN IF NOT EXISTS subtask_share_margin Float64 CODEC(ZSTD(1)) AFTER subtask_share;
ALTER TABLE {{database}}.hot_keys ADD COLUMN IF NOT EXISTS subtask_excess Float64 CODEC(ZSTD(1)) AFTER subtask_share_margin;
ALTER TABLE {{database}}.hot_keys ADD COLUMN IF NOT EXISTS excess_explained Float64 CODEC(ZSTD(1)) AFTER subtask_excess;
