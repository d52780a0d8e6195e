// Package plans keeps the lifecycle of salting plans: which hot keys of a
// task are salted, with which buckets, under which version, and until when.
//
// A Flink job re-keys its state when its salting changes, so plans must not
// flap. The Manager turns the engine's per-window salting_plan findings into
// plan changes: a hot key stays salted for a cooldown after it cools down, a
// plan gets a new version only when its set of hot keys or bucket counts
// changes materially, and a plan is retired after it expires. Operators can
// pin or override a plan, or exclude a key (see Override and Apply).
//
// The package is pure: time is the event time of the findings (window
// ends), so the same findings give the same plans. It does no I/O.
//
// Plan is the one JSON contract used by the HTTP API (skewlens serve), the
// compacted Kafka plans topic and the plans table in ClickHouse.
//
// # Rules
//
//   - A key of a salting_plan finding with at least two salted keys is hot
//     in that window (a key the engine gives one bucket is not salted and
//     does not count). It joins its task's plan and stays in it until
//     Config.Cooldown after the last window in which it was hot.
//   - A key keeps its salted keys while the engine's proposed bucket
//     count changes by less than Config.BucketChange of the current count;
//     a larger change takes the engine's new salted keys.
//   - A change of the task's parallelism or max parallelism drops every
//     key: their salted keys route elsewhere now.
//   - The version grows by one each time the served plan changes
//     materially: its keys, their salted keys, its parallelism pair, its
//     source or its pin. Shares, predicted loads and times alone do not
//     make a version. Versions never go back, across retirement
//     (Config.RetainRetired) and restarts (Manager.Restore).
//   - A hot_key finding of a key already in the plan keeps the key hot and
//     confirms the plan (it never adds a key): a plan that works balances
//     the load, so the engine stops proposing it while the key is still
//     hot, and the plan must not be retired for that.
//   - A plan is retired (a tombstone on the topic) when its last key has
//     cooled down, or when no finding confirmed it for Config.TTL. Pinned
//     and overridden plans do not expire.
//   - Overrides (Apply): an override plan replaces the engine's; a pin
//     freezes the plan served when it was set; an exclude keeps a key out.
//
// Job ids must not contain "/", so that Key(job, task) is unambiguous.
//
// # Blocking and safety
//
// A Manager is safe for concurrent use: its methods serialise on one
// mutex and never block on anything else. It holds at most
// Config.MaxPlans tasks of at most Config.MaxKeys keys each; findings
// beyond that are dropped and counted (Manager.Stats). Apply and the
// Override methods are pure functions, safe for concurrent use. Nothing
// here panics on bad input: invalid findings are counted and ignored,
// invalid overrides and plans are rejected with an error.
package plans
