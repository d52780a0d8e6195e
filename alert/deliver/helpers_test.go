package deliver

import (
	"fmt"

	"github.com/skewlens/skewlens/skew"
)

// Test findings, the same as package alert's tests use: 10 s windows
// starting at ws (ms). The state machine's own tests are in package
// alert; these only feed the Alerter.
const win = 10_000

func intp(i int) *int { return &i }

func sat(job, task string, sub int, cause string, ws int64) skew.Finding {
	f := skew.Finding{
		Kind: skew.KindSaturation, JobID: job, JobName: "name-" + job, TaskName: task,
		WindowStart: ws, WindowEnd: ws + win,
		Saturation: &skew.Saturation{Cause: cause, Host: "10.0.0.2", TaskAttemptID: "14fc6da2", Evidence: &skew.Evidence{
			BusyMsPerSecond: 990, RecordsInPerSecond: 1200, PeerMedianRecordsInPerSecond: 400, InputRatio: 3,
			SkewScore: 60, MaxMedianRatio: 3, Subtasks: 4, SaturatedSubtasks: 1, SustainedWindows: 2,
		}},
		Summary: fmt.Sprintf("Subtask %d of %q is saturated (%s).", sub, task, cause),
	}
	if sub >= 0 {
		f.SubtaskIndex = intp(sub)
	}
	return f
}

func hot(job, task string, sub int, key string, share float64, ws int64) skew.Finding {
	f := skew.Finding{
		Kind: skew.KindHotKey, JobID: job, TaskName: task, WindowStart: ws, WindowEnd: ws + win,
		HotKey: &skew.HotKey{Key: key, Share: share, EstimatedRecords: share * 100000},
	}
	if sub >= 0 {
		f.SubtaskIndex = intp(sub)
	}
	return f
}
