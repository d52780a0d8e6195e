package plans_test

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/skewlens/skewlens/skew"
	"github.com/skewlens/skewlens/skew/plans"
)

// The engine's salting_plan finding of one window becomes version 1 of
// the task's plan; the same keys in the next window change nothing; once
// the key has not been hot for the cooldown, the plan is retired.
func ExampleManager() {
	m, err := plans.NewManager(plans.Config{Cooldown: 10 * time.Minute})
	if err != nil {
		panic(err)
	}
	finding := func(windowEnd int64) *skew.Finding {
		return &skew.Finding{
			Kind: skew.KindSaltingPlan, JobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90", JobName: "orders",
			TaskName: "Window(TumblingEventTimeWindows(60000)) -> Sink", WindowStart: windowEnd - 10000, WindowEnd: windowEnd,
			Plan: &skew.Plan{Parallelism: 8, MaxParallelism: 128, MaxOverMeanBefore: 3.52, MaxOverMeanAfter: 1.21,
				Keys: []skew.SaltedKey{{Key: "customer-42", Share: 0.38, Subtask: 5, Buckets: 3, Salted: []skew.SaltTarget{
					{Key: "customer-42#0", KeyGroup: 36, Subtask: 2},
					{Key: "customer-42#2", KeyGroup: 1, Subtask: 0},
					{Key: "customer-42#5", KeyGroup: 123, Subtask: 7},
				}}}},
		}
	}
	t := int64(1767225600000) // 2026-01-01T00:00:00Z
	changes := m.Observe(finding(t))
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(changes[0].Plan)
	fmt.Println(len(m.Observe(finding(t+10000))), "changes for the next window")
	for _, c := range m.Advance(time.UnixMilli(t + 10000).Add(10 * time.Minute)) {
		fmt.Println("key", plans.Key(c.JobID, c.TaskName), "retired:", c.Retired)
	}
	// Output:
	// {
	//   "job_id": "a1b2c3d4e5f60718293a4b5c6d7e8f90",
	//   "job_name": "orders",
	//   "task_name": "Window(TumblingEventTimeWindows(60000)) -\u003e Sink",
	//   "parallelism": 8,
	//   "max_parallelism": 128,
	//   "version": 1,
	//   "generated_at": "2026-01-01T00:00:00Z",
	//   "updated_at": "2026-01-01T00:00:00Z",
	//   "expires_at": "2026-01-01T00:10:00Z",
	//   "separator": "#",
	//   "source": "engine",
	//   "max_over_mean_before": 3.52,
	//   "max_over_mean_after": 1.21,
	//   "hot_keys": [
	//     {
	//       "key": "customer-42",
	//       "share": 0.38,
	//       "subtask": 5,
	//       "buckets": 3,
	//       "salted": [
	//         {
	//           "key": "customer-42#0",
	//           "key_group": 36,
	//           "subtask": 2
	//         },
	//         {
	//           "key": "customer-42#2",
	//           "key_group": 1,
	//           "subtask": 0
	//         },
	//         {
	//           "key": "customer-42#5",
	//           "key_group": 123,
	//           "subtask": 7
	//         }
	//       ],
	//       "predicted_load_before": 3.04,
	//       "predicted_load_after": 1.0133,
	//       "last_hot_at": "2026-01-01T00:00:00Z"
	//     }
	//   ]
	// }
	// 0 changes for the next window
	// key a1b2c3d4e5f60718293a4b5c6d7e8f90/Window(TumblingEventTimeWindows(60000)) -> Sink retired: true
}
