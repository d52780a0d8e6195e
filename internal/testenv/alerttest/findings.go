package alerttest

import (
	"fmt"

	"github.com/skewlens/skewlens/skew"
)

// Window is the window length of the fixtures, in ms: each finding covers
// [ws, ws+Window).
const Window = 10_000

// IntPtr returns a pointer to i, for the optional subtask index.
func IntPtr(i int) *int { return &i }

// Sat is a saturation finding of subtask sub (or of the whole task when sub
// is negative) of job/task with cause, for the window starting at ws.
func Sat(job, task string, sub int, cause string, ws int64) skew.Finding {
	f := skew.Finding{
		Kind: skew.KindSaturation, JobID: job, JobName: "name-" + job, TaskName: task,
		WindowStart: ws, WindowEnd: ws + Window,
		Saturation: &skew.Saturation{Cause: cause, Host: "10.0.0.2", TaskAttemptID: "14fc6da2", Evidence: &skew.Evidence{
			BusyMsPerSecond: 990, RecordsInPerSecond: 1200, PeerMedianRecordsInPerSecond: 400, InputRatio: 3,
			SkewScore: 60, MaxMedianRatio: 3, Subtasks: 4, SaturatedSubtasks: 1, SustainedWindows: 2,
		}},
		Summary: fmt.Sprintf("Subtask %d of %q is saturated (%s).", sub, task, cause),
	}
	if sub >= 0 {
		f.SubtaskIndex = IntPtr(sub)
	}
	return f
}

// Hot is a hot-key finding: key carries share of job/task's input on
// subtask sub (none when negative) in the window starting at ws.
func Hot(job, task string, sub int, key string, share float64, ws int64) skew.Finding {
	f := skew.Finding{
		Kind: skew.KindHotKey, JobID: job, TaskName: task, WindowStart: ws, WindowEnd: ws + Window,
		HotKey: &skew.HotKey{Key: key, Share: share, EstimatedRecords: share * 100000},
	}
	if sub >= 0 {
		f.SubtaskIndex = IntPtr(sub)
	}
	return f
}
