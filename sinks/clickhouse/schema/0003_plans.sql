-- skewlens ClickHouse schema, migration 0003: salting plans, operator
-- overrides and their audit log (skewlens serve, package serve).
--
-- plans: one row per state of a task's plan: a version as the plan
-- manager wrote it, a later confirmation of that version (new updated_at
-- and expires_at), or its retirement (retired = 1, a copy of the last
-- version's row). body is the plans.Plan JSON contract; the other columns
-- repeat what queries filter on. Times are Int64 epoch milliseconds of
-- event time; expires_at is 0 for a plan that does not expire (pinned or
-- overridden).
--   ReplacingMergeTree(revision) ORDER BY (job_id, task_name, version):
--   rewriting a version after a replay lands on the same sort key and the
--   row with the highest revision wins. revision is 2 × updated_at for a
--   live plan and the replaced row's revision + 1 for a retirement, so a
--   retirement beats every state of its version it saw, while a replay
--   never beats a newer state (its updated_at is not later) and a version
--   confirmed again later beats the retirement. Readers take the newest
--   state per task with argMax(column, (version, revision)) and GROUP BY
--   (no FINAL). One row per version remains after merges; the table is
--   small and never expires.
--
-- plan_overrides: the current operator overrides, one sort key per (job,
-- task, action, key); key is '' except for exclude. Deleting an override
-- writes a row with deleted = 1 and a higher revision that replaces the
-- active one. revision is the change time in nanoseconds (the server makes
-- it increase per override). body is the plans.Override JSON; key,
-- job_id and task_name hold the exact bytes. Keys are hashed in the sort
-- key (as in 0001) so that 64 KiB keys do not bloat the primary index;
-- readers group by the key itself.
--
-- plan_audit: append-only log of every change made through the API: who
-- (the token's name), when (at, epoch ms), the HTTP method, the override
-- action, the target, what was sent (JSON), the client's address and the
-- result. Plain MergeTree without TTL: nothing is ever replaced or
-- expired. A retried insert whose acknowledgement was lost can record an
-- entry twice.

-- dialect: all
CREATE TABLE IF NOT EXISTS {{database}}.plans
(
    job_id       String,
    task_name    LowCardinality(String),
    version      UInt64,
    generated_at Int64,
    updated_at   Int64,
    expires_at   Int64,
    retired      UInt8,
    body         String CODEC(ZSTD(3)),
    revision     UInt64,
    inserted_at  DateTime
)
ENGINE = ReplacingMergeTree(revision)
ORDER BY (job_id, task_name, version);

CREATE TABLE IF NOT EXISTS {{database}}.plan_overrides
(
    job_id      String,
    task_name   LowCardinality(String),
    action      LowCardinality(String),
    key         String CODEC(ZSTD(3)),
    body        String CODEC(ZSTD(3)),
    changed_by  LowCardinality(String),
    changed_at  Int64,
    deleted     UInt8,
    revision    UInt64,
    inserted_at DateTime
)
ENGINE = ReplacingMergeTree(revision)
ORDER BY (job_id, task_name, action, cityHash64(key));

CREATE TABLE IF NOT EXISTS {{database}}.plan_audit
(
    at          Int64,
    event_date  Date,
    changed_by  LowCardinality(String),
    method      LowCardinality(String),
    action      LowCardinality(String),
    job_id      String,
    task_name   LowCardinality(String),
    key         String CODEC(ZSTD(3)),
    what        String CODEC(ZSTD(3)),
    remote_addr String,
    result      LowCardinality(String),
    inserted_at DateTime
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(event_date)
ORDER BY (job_id, at);
