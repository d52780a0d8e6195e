package clickhouse

import (
	"strings"
	"time"

	"github.com/skewlens/skewlens/skew"
)

// Fixture identities; docs/queries.md uses the same literal values.
const (
	jobA       = "84dce1ec8aa5a4df2d1758d6e9278693"
	jobAName   = "clickstream-sessions"
	taskA      = "SessionWindow"
	taskADedup = "Dedup"
	jobB       = "f3c1a2b4d5e6f708192a3b4c5d6e7f80"
	jobBName   = "payments-fraud"
	taskBSlow  = "FraudScore"
	taskBUnder = "Enrich"
	jobHostile = "hostile'job\\\n"
	windowMs   = 10_000
	fixtureWin = 6 // windows per fixture
)

func ptr(i int) *int { return &i }

// fixtureBase returns the start of the first fixture window: ten minutes
// before now, but not before today's midnight (UTC), so "today" queries see
// every window, rounded down to a window boundary.
func fixtureBase(now time.Time) int64 {
	now = now.UTC()
	base := now.Add(-10 * time.Minute)
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	if base.Before(midnight) {
		base = midnight
	}
	ms := base.UnixMilli()
	return ms - ms%windowMs + windowMs
}

// hostileStrings must round-trip byte for byte.
func hostileStrings() []string {
	return []string{
		`it's "quoted"`,
		`back\slash\\ and \' and \n literally`,
		"new\nline\r\ttab",
		"\xff\xfe invalid UTF-8 \xc3\x28",
		"nul\x00byte",
		"emoji 🔥 and 中文",
		"?",
		"'; DROP TABLE findings; --",
		strings.Repeat("k", 64<<10),
		strings.Repeat("\\'\n", 22000),
	}
}

// fixtures returns a set of findings like the engine emits for two jobs
// over fixtureWin windows starting at fixtureBase(now), plus hot keys with
// hostile strings for a third job.
func fixtures(now time.Time) []skew.Finding {
	base := fixtureBase(now)
	var fs []skew.Finding
	win := func(w int) (int64, int64) {
		s := base + int64(w)*windowMs
		return s, s + windowMs
	}
	for w := 0; w < fixtureWin; w++ {
		ws, we := win(w)
		// Job A, task SessionWindow: 4 subtasks, subtask 3 hot.
		for st := 0; st < 4; st++ {
			stats := &skew.SubtaskStats{
				Host:               "tm-" + string(rune('0'+st)) + ".flink.internal",
				TaskAttemptID:      "attempt-a-" + string(rune('0'+st)),
				BusyMsPerSecond:    300,
				IdleMsPerSecond:    700,
				RecordsInPerSecond: 1000,
				InputShare:         0.125,
				InPoolUsage:        0.2,
				OutPoolUsage:       0.1,
				CheckpointAlignMs:  5,
				CheckpointDelayMs:  float64(10 + w),
				BusySource:         "counter",
				SkewScore:          62,
				MaxMedianRatio:     5,
			}
			if st == 3 {
				stats.BusyMsPerSecond, stats.IdleMsPerSecond = 950, 50
				stats.RecordsInPerSecond = 5000
				stats.InputShare = 0.625
				stats.InPoolUsage = 1
				stats.CheckpointDelayMs = float64(1000 * (w + 1))
				stats.Saturated = true
			}
			fs = append(fs, skew.Finding{Kind: skew.KindSubtaskStats, JobID: jobA, JobName: jobAName,
				TaskName: taskA, SubtaskIndex: ptr(st), WindowStart: ws, WindowEnd: we, Stats: stats})
		}
		fs = append(fs,
			skew.Finding{Kind: skew.KindHotKey, JobID: jobA, JobName: jobAName, TaskName: taskA,
				SubtaskIndex: ptr(3), WindowStart: ws, WindowEnd: we,
				HotKey: &skew.HotKey{Key: "user-42", Share: 0.4, EstimatedRecords: 120000,
					ShareMargin: 0.03, Rule: "subtask", ShareLowerBound: 0.6, Threshold: 0.4,
					EvidenceWindows: 2, EvidenceRecords: 1800, SubtaskShare: 0.64, SubtaskShareMargin: 0.05,
					SubtaskExcess: 0.8, ExcessExplained: 0.8},
				Summary: "Key user-42 carries 40% of SessionWindow's records."},
			skew.Finding{Kind: skew.KindHotKey, JobID: jobA, JobName: jobAName, TaskName: taskA,
				SubtaskIndex: ptr(1), WindowStart: ws, WindowEnd: we,
				HotKey: &skew.HotKey{Key: "user-7", Share: 0.1, EstimatedRecords: 30000}},
		)
		if w >= 2 {
			fs = append(fs, skew.Finding{Kind: skew.KindSaturation, JobID: jobA, JobName: jobAName,
				TaskName: taskA, SubtaskIndex: ptr(3), WindowStart: ws, WindowEnd: we,
				Saturation: &skew.Saturation{Cause: skew.CauseDataSkew, Host: "tm-3.flink.internal",
					TaskAttemptID: "attempt-a-3", Evidence: &skew.Evidence{
						BusyMsPerSecond: 950, IdleMsPerSecond: 50, RecordsInPerSecond: 5000,
						PeerMedianRecordsInPerSecond: 1000, InputRatio: 5, InputShare: 0.625,
						InPoolUsage: 1, OutPoolUsage: 0.1, InputQueueLength: 12, QueueCapacity: 12,
						CheckpointDelayMs: float64(1000 * (w + 1)), LastCheckpointMs: 60000,
						SkewScore: 62, MaxMedianRatio: 5, Subtasks: 4, SaturatedSubtasks: 1,
						SustainedWindows: w - 1,
						HotKeys:          []skew.KeyShare{{Key: "user-42", Share: 0.4, SubtaskShare: 0.64}},
						SubtaskExcess:    0.8, ExcessExplained: 0.8,
						UpstreamBackPressed: []string{"Source: clicks"},
					}},
				Summary: "Subtask 3 of SessionWindow is saturated by hot key user-42."})
		}
		if w >= 3 {
			fs = append(fs,
				skew.Finding{Kind: skew.KindSaturation, JobID: jobB, JobName: jobBName,
					TaskName: taskBSlow, SubtaskIndex: ptr(5), WindowStart: ws, WindowEnd: we,
					Saturation: &skew.Saturation{Cause: skew.CauseSlowSubtask, Host: "tm-9.flink.internal",
						TaskAttemptID: "attempt-b-5", Evidence: &skew.Evidence{
							BusyMsPerSecond: 990, RecordsInPerSecond: 800, PeerMedianRecordsInPerSecond: 1000,
							InputRatio: 0.8, SkewScore: 3, MaxMedianRatio: 1.1, Subtasks: 8,
							SaturatedSubtasks: 1, SustainedWindows: w - 2,
							UpstreamBackPressed: []string{"Source: payments", "Parse"},
						}},
					Summary: "Subtask 5 of FraudScore on tm-9.flink.internal is slow; look at its sink client."},
				skew.Finding{Kind: skew.KindSaturation, JobID: jobB, JobName: jobBName,
					TaskName: taskBUnder, WindowStart: ws, WindowEnd: we,
					Saturation: &skew.Saturation{Cause: skew.CauseUnderProvisioned, Evidence: &skew.Evidence{
						BusyMsPerSecond: 900, RecordsInPerSecond: 40000, SkewScore: 4, MaxMedianRatio: 1.05,
						Subtasks: 4, SaturatedSubtasks: 4, SustainedWindows: w - 2,
						Parallelism: 4, MaxParallelism: 128, TrueRatePerSubtask: 11000,
						RecommendedParallelism: 8, ChainableWith: []string{"Sink: alerts"},
					}},
					Summary: "Enrich needs parallelism 8 instead of 4."},
			)
		}
		if w >= 4 {
			fs = append(fs, skew.Finding{Kind: skew.KindSaltingPlan, JobID: jobA, JobName: jobAName,
				TaskName: taskA, WindowStart: ws, WindowEnd: we,
				Plan: &skew.Plan{Parallelism: 4, MaxParallelism: 128,
					MaxOverMeanBefore: 3.2, MaxOverMeanAfter: 1.1,
					Keys: []skew.SaltedKey{{Key: "user-42", Share: 0.4, Subtask: 3, Buckets: 3,
						Salted: []skew.SaltTarget{{Key: "user-42#0", KeyGroup: 5, Subtask: 0},
							{Key: "user-42#1", KeyGroup: 40, Subtask: 1}, {Key: "user-42#2", KeyGroup: 70, Subtask: 2}}}},
					DataStream: "keyBy(k -> k + \"#\" + (hash % 3))",
					SQL:        "SELECT ... GROUP BY key, MOD(HASH_CODE(id), 3)"},
				Summary: "Salt user-42 into 3 buckets."})
		}
		if w == 5 {
			fs = append(fs, skew.Finding{Kind: skew.KindSaturation, JobID: jobA, JobName: jobAName,
				TaskName: taskADedup, SubtaskIndex: ptr(1), WindowStart: ws, WindowEnd: we,
				Saturation: &skew.Saturation{Cause: skew.CauseRotatingHotKey, Host: "tm-1.flink.internal",
					Evidence: &skew.Evidence{BusyMsPerSecond: 920, SkewScore: 40, MaxMedianRatio: 3,
						Subtasks: 4, SaturatedSubtasks: 1, SustainedWindows: 2,
						TimeBucketKey: "u42|1764681000000", PreviousHotSubtask: ptr(2)}},
				Summary: "The hot key of Dedup moves every 5 minutes."})
		}
	}
	ws, we := win(0)
	for i, k := range hostileStrings() {
		fs = append(fs, skew.Finding{Kind: skew.KindHotKey, JobID: jobHostile, JobName: k, TaskName: "task\t" + k[:min(len(k), 20)],
			SubtaskIndex: ptr(i), WindowStart: ws, WindowEnd: we,
			HotKey:  &skew.HotKey{Key: k, Share: 0.05, EstimatedRecords: float64(i)},
			Summary: k})
	}
	return fs
}

// fixtureCounts returns how many rows of fs each table gets: statistics
// go to subtask_stats only, every other finding to findings and, for
// hot keys and plans, to its kind's table too.
func fixtureCounts(fs []skew.Finding) map[string]int {
	n := map[string]int{}
	for _, f := range fs {
		if f.Kind != skew.KindSubtaskStats {
			n[tableFindings]++
		}
		switch f.Kind {
		case skew.KindHotKey:
			n[tableHotKeys]++
		case skew.KindSubtaskStats:
			n[tableSubtaskStats]++
		case skew.KindSaltingPlan:
			n[tableSaltingPlans]++
		}
	}
	return n
}
