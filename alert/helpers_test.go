package alert

import (
	"fmt"
	"strings"

	"github.com/skewlens/skewlens/skew"
)

// Test findings: 10 s windows starting at ws (ms).
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

func statsOf(job string, ws int64) skew.Finding {
	return skew.Finding{Kind: skew.KindSubtaskStats, JobID: job, TaskName: "src", SubtaskIndex: intp(0),
		WindowStart: ws, WindowEnd: ws + win, Stats: &skew.SubtaskStats{}}
}

// evs renders events compactly: "kind id @ms [reason]".
func evs(events []Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		s := fmt.Sprintf("%s %s @%d", e.Kind, e.Alert.ID, e.Alert.UpdatedAt.UnixMilli())
		if e.Alert.Reason != "" {
			s += " " + e.Alert.Reason
		}
		out[i] = s
	}
	return out
}

func joinLines(ss []string) string { return strings.Join(ss, "\n") }
